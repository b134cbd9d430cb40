"""docs/architecture.md "Faults, component by component" names, for each component, the
faults it survives and the test that makes each happen: every test it names exists, and
every component has its rows (issue 50)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMPONENTS = ("sheet", "launcher", "listeners", "sink and spool", "store", "node agents",
              "the detached end", "copy and sync", "the page")


def _rows() -> list[list[str]]:
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text.split("### Faults, component by component", 1)[1].split("\n### ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| ")]
    return [r for r in rows[1:] if r[0] != "---"]  # the header out


def test_every_fault_row_names_a_test_that_exists() -> None:
    rows = _rows()
    assert rows, "the fault table is gone"
    missing = []
    for component, fault, _, tests in rows:
        named = re.findall(r"(tests/[\w/]+\.py)::(\w+)", tests)
        assert named, f"{component}: {fault}: names no test"
        for path, name in named:
            file = REPO / path
            if not file.is_file() or not re.search(rf"^def {name}\(", file.read_text(), re.M):
                missing.append(f"{path}::{name}")
    assert not missing, missing


def test_every_component_has_its_faults() -> None:
    assert {r[0] for r in _rows()} == set(COMPONENTS)
