"""What ``pip install .`` ships (a node installs radtrack without -e): every folder of the
package tree that git tracks Python files in is a package of pyproject.toml's list, so a
new module folder is never missing from an installed radtrack."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
from support import REPO

TREES = ("radtrack", "listeners", "frontend", "radt")


def _tracked_python_folders() -> set[str]:
    p = subprocess.run(["git", "-C", str(REPO), "ls-files", "--", *(f"{t}/*.py" for t in TREES)],
                       capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        pytest.skip("not a git checkout")
    return {str(Path(f).parent) for f in p.stdout.split()}


def test_every_tracked_module_folder_is_a_listed_package() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {}
    for package in config["packages"]:
        folders[str(Path(*package.split(".")))] = package  # import names are paths
    missing = sorted(_tracked_python_folders() - set(folders))
    assert missing == [], (f"folders with Python files that pyproject.toml's "
                           f"[tool.setuptools] packages does not list: {missing}")
    absent = sorted(f for f in folders if not (REPO / f).is_dir())
    assert absent == []


def test_the_license_is_an_spdx_expression() -> None:
    """setuptools >= 77 warns (twice per install) about a license table."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert "version" in project["dynamic"]
