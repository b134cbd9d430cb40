"""`make demo` says whether it adds a launch, reuses the one already made or resumes it, and
where to look (issue 52: a second `make demo` had added a launch without a word). The real
Makefile, run by make in a copy of what it reads, with a stand-in `radtrack` that writes the
statuses back as the launcher does (the launch itself is tested everywhere else)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# writes FINISHED into every row's Status, as a launch that ran them all does
STAND_IN = """#!{python}
import csv, sys
path = sys.argv[-1]
rows = list(csv.DictReader(open(path)))
print("radtrack ran", path, sum(not r["Status"].startswith("FINISHED") for r in rows), "rows")
for r in rows:
    r["Status"] = "FINISHED " + r["Experiment"] + "-" + r["Workload"] + " A"
with open(path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml", "constraints.txt", "examples/quickstart.csv"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    os.symlink(sys.executable, bin_dir / "python")
    (bin_dir / "radtrack").write_text(STAND_IN.format(python=sys.executable))
    (bin_dir / "radtrack").chmod(0o755)
    (tmp_path / "venv" / ".demo-installed").touch()  # newer than pyproject: nothing installed
    return tmp_path


def _demo(folder: Path) -> str:
    p = subprocess.run(["make", "-s", "demo", "VENV=venv"], cwd=folder, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_make_demo_adds_a_launch_then_reuses_it_then_resumes(checkout: Path) -> None:
    first = _demo(checkout)
    assert "[make] adding a launch: examples/quickstart.csv" in first
    assert "radtrack ran examples/quickstart.last.csv 2 rows" in first
    for where in ("sqlite:///mlflow.db, experiment 'quickstart'", "radtrack report quickstart",
                  "http://127.0.0.1:8050/?experiment=quickstart", "mlflow ui"):
        assert where in first, first
    second = _demo(checkout)
    assert "[make] reusing the existing launch: every row of examples/quickstart.last.csv is FINISHED" in second
    assert "adding a launch" not in second and "radtrack ran examples/quickstart.last.csv 0 rows" in second
    assert "radtrack report quickstart" in second
    sheet = checkout / "examples" / "quickstart.last.csv"
    lines = sheet.read_text().splitlines()
    lines[2] = lines[2].replace("FINISHED quickstart-2 A", "FAILED quickstart-2 A")
    sheet.write_text("\n".join(lines) + "\n")
    third = _demo(checkout)
    assert "[make] resuming examples/quickstart.last.csv" in third
    assert all(len(line) <= 120 for text in (first, second, third) for line in text.splitlines()
               if line.startswith("[make]"))
