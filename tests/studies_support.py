"""Helpers of the study tests: CPU-sized copies of the study sheets, run through the real CLI."""

from __future__ import annotations

import csv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STUDIES = REPO / "examples" / "studies"


def cpu_sheet(name: str, dst: Path, *, sheet: str = "sheet.csv", workloads: set[int] | None = None,
              max_time: float | None = None, params: str = "--smoke --device cpu",
              replace: dict[str, str] | None = None, devices: str | None = None,
              listeners: str | None = None, interval: float | None = None,
              env: str = "OMP_NUM_THREADS=1") -> Path:
    """A copy of ``examples/studies/<name>/<sheet>`` for a CPU test: only ``workloads``,
    ``params`` added to every row's Params (``replace`` rewrites words first), absolute
    File paths, ``env`` in an Env column (one torch thread: the test host is small and
    shared), and optionally other MaxTime, Devices, Listeners and Interval."""
    src = STUDIES / name / sheet
    lines = [line for line in src.read_text().splitlines() if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    assert rows, f"{src} has no rows"
    with dst.open("w", newline="") as f:
        out = csv.DictWriter(f, [*rows[0], *(["Env"] if "Env" not in rows[0] else [])])
        out.writeheader()
        for row in rows:
            if workloads is not None and int(row["Workload"]) not in workloads:
                continue
            words = row["Params"].split()
            for old, new in (replace or {}).items():
                words = [new if w == old else w for w in words]
            row["Params"] = " ".join([*words, *params.split()])
            row["File"] = str((src.parent / row["File"]).resolve())
            if max_time is not None:
                row["MaxTime"] = f"{max_time:g}"
            if devices is not None:
                row["Devices"] = devices
            if listeners is not None:
                row["Listeners"] = listeners
            row["Env"] = env
            if interval is not None:
                row["Interval"] = f"{interval:g}"
            out.writerow(row)
    return dst
