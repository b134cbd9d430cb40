"""The repository holds everything its docs point to (issue 52: benchmarks/README.md pointed
to a script outside it, `../shared/scripts/gpu-wheelhouse.sh`, which a user does not have).
Every relative Markdown link, every `../` path in backticks and every path in backticks under
one of the repository's folders names a file or folder inside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md", ROOT / "benchmarks" / "README.md",
        ROOT / "benchmarks" / "results" / "README.md"]
FOLDERS = ("benchmarks", "docs", "examples", "radt", "radtrack",
           "scripts", "tests", "workloads", ".ci")
# what a path-like name in backticks ends with (a metric key such as
# `radtrack/spool_dropped_samples` has no suffix and is no path)
SUFFIXES = (".py", ".md", ".csv", ".sh", ".txt", ".json", ".jsonl", ".toml", ".yaml", ".yml",
            ".cfg", ".parquet", ".png", ".svg", ".ini", "/")
# named on purpose though not in the repository, each with why
ELSEWHERE = {
    "examples/quickstart.last.csv": "written by `make demo` (its copy of the quickstart sheet)",
    "examples/csv/experiment_collocation.csv": "radT's own repository, as the sentence says",
}
TOKEN = re.compile(r"`([^`\s]+)`|\]\(([^)\s]+)\)")


def _targets(doc: Path) -> list[tuple[int, str, Path]]:
    text = doc.read_text()
    found = []
    for m in TOKEN.finditer(text):
        raw = m.group(1) or m.group(2)
        path = re.sub(r":\d+(-\d+)?$", "", raw.split("#")[0].split("::")[0].rstrip(".,;"))
        if (not path or "://" in path or path.startswith(("-", "mailto:"))
                or any(c in path for c in "<>*{}$|~") or path in ELSEWHERE):
            continue
        if m.group(2) is not None or path.startswith("../"):  # relative to the doc
            target = (doc.parent / path).resolve()
        elif path.startswith(tuple(f"{f}/" for f in FOLDERS)) and path.endswith(SUFFIXES):
            target = ROOT / path
        else:
            continue
        found.append((text.count("\n", 0, m.start()) + 1, raw, target))
    return found


def test_every_repository_path_the_docs_name_exists() -> None:
    missing = [f"{doc.relative_to(ROOT)}:{line}: {raw}" + ("" if target.exists() else " (missing)")
               for doc in DOCS for line, raw, target in _targets(doc)
               if not target.exists() or not target.resolve().is_relative_to(ROOT)]
    assert not missing, "docs point to paths the repository lacks:\n" + "\n".join(missing)


def test_the_check_sees_links_and_paths() -> None:
    """The scan finds what it is meant to find (it would pass on nothing otherwise)."""
    readme = _targets(ROOT / "benchmarks" / "README.md")
    assert any(raw == "benchmarks/gpu_wheelhouse.sh" for _, raw, _ in readme)
    assert any(raw == "../docs/performance.md" for _, raw, _ in readme)
    assert sum(len(_targets(doc)) for doc in DOCS) > 100
