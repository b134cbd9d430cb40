"""The order the parallel stage hands out files in (tests/conftest.py): the longest first.

Cheap checks of what a wrong name or a lost line would silently undo: every file named in
``LONGEST_FIRST`` exists (once: the ranks go by file name), xdist's own reorder by test count
is turned off, and the sort puts the listed files first, then the files that start
processes, then the rest, each file's tests kept together.
"""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _conftest() -> types.ModuleType:
    """tests/conftest.py itself, by its path: under xdist the module named ``conftest`` may be
    another folder's conftest.py (whichever was imported first)."""
    spec = importlib.util.spec_from_file_location("radtrack_tests_conftest", TESTS / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


conftest = _conftest()


def test_every_longest_first_name_is_one_test_file() -> None:
    names = [p.name for p in TESTS.rglob("test_*.py")]
    for name in conftest.LONGEST_FIRST:
        assert names.count(name) == 1, f"LONGEST_FIRST names {name}: {names.count(name)} such files"
    assert len(set(conftest.LONGEST_FIRST)) == len(conftest.LONGEST_FIRST)


def test_listed_files_first_then_those_starting_processes(tmp_path: Path) -> None:
    plain = tmp_path / "test_plain.py"
    plain.write_text("def test_a():\n    assert 1\n")
    starts = tmp_path / "test_starts.py"
    starts.write_text("def test_b():\n    radtrack_cli(\"--help\")\n")
    listed = tmp_path / conftest.LONGEST_FIRST[1]
    first = tmp_path / conftest.LONGEST_FIRST[0]
    items = [types.SimpleNamespace(path=p, name=f"{p.stem}-{k}")
             for p in (plain, starts, listed, first, plain) for k in (0, 1)]
    conftest._longest_first(items)  # type: ignore[arg-type]
    order = [item.path for item in items]
    assert order == [first] * 2 + [listed] * 2 + [starts] * 2 + [plain] * 4
