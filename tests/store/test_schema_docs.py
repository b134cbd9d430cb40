"""docs/architecture.md's tag and artifact tables name exactly what radtrack/vocab/schema.py defines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from radtrack.vocab import schema

DOC = Path(__file__).parents[2] / "docs" / "architecture.md"
_CODE = re.compile(r"`([^`]+)`")


def table_names(text: str, heading: str) -> set[str]:
    """The backticked names in the first column of the table under ``heading``; a name
    written as ``.suffix`` extends the full name before it in the same cell
    (``radtrack.attribution.gpu<i>``, ``.note`` -> ``radtrack.attribution.gpu<i>.note``)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == heading), None)
    assert start is not None, f"{DOC.name}: no heading {heading!r}"
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append(line)
    names: set[str] = set()
    for row in rows[2:]:  # past the header and the |---| line
        base = ""
        for name in _CODE.findall(row.split("|")[1]):
            if name.startswith(".") and base:
                name = base + name
            else:
                base = name
            names.add(name)
    return names


def doc_tags(text: str) -> set[str]:
    """The tag names of the doc's "Tags" table."""
    return table_names(text, "### Tags (child runs unless noted)")


def doc_artifacts(text: str) -> set[str]:
    """The artifact paths of the doc's "Artifacts" table."""
    return table_names(text, "### Artifacts (child runs)")


def _mismatch(kind: str, doc: set[str], code: set[str]) -> str:
    return (f"{kind}: in {DOC.name} but not in radtrack/vocab/schema.py: {sorted(doc - code)}; "
            f"in schema.py but not in {DOC.name}: {sorted(code - doc)}")


def test_doc_tags_match_schema() -> None:
    doc = doc_tags(DOC.read_text())
    code = schema.documented_tags()
    assert len(doc) > 20 and schema.ROLE in doc
    assert doc == code, _mismatch("tags", doc, code)


def test_doc_artifacts_match_schema() -> None:
    doc = doc_artifacts(DOC.read_text())
    code = set(schema.ARTIFACTS)
    assert schema.POWER_ARTIFACT in doc
    assert doc == code, _mismatch("artifacts", doc, code)


def test_every_artifact_name_is_listed() -> None:
    """Each folder and artifact constant of schema.py is among the documented artifacts."""
    folders = {path.split("/", 1)[0] for path in schema.ARTIFACTS}
    for name, value in vars(schema).items():
        if name.endswith("_DIR"):
            assert value in folders, f"schema.{name} = {value!r}: no artifact in schema.ARTIFACTS"
        elif name.endswith("_ARTIFACT"):
            assert value in schema.ARTIFACTS, f"schema.{name} = {value!r}: not in schema.ARTIFACTS"


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("| `radtrack.exit_code` |", "| `radtrack.exit_status` |"),
    lambda t: t.replace("| `radtrack.start_skew_ms` |", "| `radtrack.start_skew` |"),
    lambda t: t.replace("`radtrack.attribution.gpu<i>`, `.gpu`, `.note`",
                        "`radtrack.attribution.gpu<i>`, `.gpu`"),
])
def test_a_changed_tag_row_is_caught(edit) -> None:
    """The check sees a renamed or dropped name (the parser reads what the doc says)."""
    text = DOC.read_text()
    changed = edit(text)
    assert changed != text
    assert doc_tags(changed) != schema.documented_tags()


def test_a_changed_artifact_row_is_caught() -> None:
    text = DOC.read_text()
    changed = text.replace("| `attribution/power.parquet` |", "| `attribution/powers.parquet` |")
    assert changed != text
    assert doc_artifacts(changed) != set(schema.ARTIFACTS)
