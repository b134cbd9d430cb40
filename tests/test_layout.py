"""tests/ mirrors the code: every folder of tests names a part of the code it tests, and
every test file of the package's stages sits in its stage's folder (docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# folders of tests/ that hold what the tests share, not tests of one part
SHARED = {"data", "doubles", "scripts", "plugin", "__pycache__"}


def _code_folder(name: str) -> Path | None:
    for candidate in (REPO / "radtrack" / name, REPO / name):
        if candidate.is_dir():
            return candidate
    return None


def test_every_tests_folder_names_a_part_of_the_code() -> None:
    folders = sorted(p.name for p in TESTS.iterdir() if p.is_dir() and p.name not in SHARED)
    assert folders, "tests/ has no folders"
    missing = [name for name in folders if _code_folder(name) is None]
    assert not missing, f"tests/ folders that name no part of the code: {missing}"


def test_the_stages_tests_are_in_their_folders() -> None:
    """No test file of a stage's folder is left flat in tests/ under that stage's name."""
    stages = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name not in SHARED}
    flat = [p.name for p in TESTS.glob("test_*.py")
            if p.stem.removeprefix("test_").split("_")[0] in stages - {"gpu"}]
    assert not flat, f"move these into their stage's folder: {flat}"


def test_test_file_names_are_unique() -> None:
    """pytest imports test files by base name (no __init__.py): two of one name would clash."""
    names = [p.name for p in TESTS.rglob("test_*.py") if "data" not in p.parts]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
