"""What a run pays before its script starts and after it ends: radtrack vs plain python.

  python benchmarks/fixed_cost.py [--repeats 4] [--sleep 2] [--modes plain,none,top,smi]
                                  [--tree DIR] [--label NAME] [--json FILE]

A mode ``M:detach`` runs ``radtrack --detach-end -l M`` (the detached end, docs/cli.md): its
*after* is the time until the shell would get its prompt back; *stored* (detached modes
only) is the time from the script's end until the background end finished storing (its
pid file released, radtrack/run/background_launchers.py), awaited before the next run starts.

A script that writes its own start and end times (unix seconds) and sleeps ``--sleep``
seconds is run by ``python script.py`` ("plain") and by ``radtrack -l MODE script.py`` for
each mode, ``--repeats`` times, interleaved (mode order rotates each round, so a drift of
the machine hits every mode alike). Per run: *before* = script start - command start,
*after* = command end - script end, *total*, and the launcher's own CPU over the row's span
(``summary/monitoring/launcher_cpu_s``, read back from the store). ``--tree`` runs radtrack from another checkout
(``PYTHONPATH=DIR``), e.g. an older commit for a before/after table in one session; each
mode writes a fresh SQLite store of its own under a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = """\
import sys, time
print("start", repr(time.time()), flush=True)
time.sleep(float(sys.argv[1]))
print("end", repr(time.time()), flush=True)
"""


def one(mode: str, folder: Path, sleep: float, tree: str | None,
        uri: str | None = None) -> dict[str, float]:
    script = folder / "sleeper.py"
    listeners, _, end = mode.partition(":")
    home = folder / f".radtrack-{mode.replace(':', '-')}"
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "RADTRACK_HOME": str(home)}
    if tree:  # ahead of what PYTHONPATH already holds (the NVML doubles' sitecustomize)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))
    if mode == "plain":
        argv = [sys.executable, str(script), str(sleep)]
    else:
        uri = uri or f"sqlite:///{folder / (mode.replace('+', '_').replace(':', '_') + '.db')}"
        argv = [sys.executable, "-m", "radtrack", "--tracking-uri", uri, "-e", "fixed",
                "-l", listeners, *(["--detach-end"] if end == "detach" else []),
                str(script), str(sleep)]
    t0 = time.time()
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=folder, check=False)
    t1 = time.time()
    stored = {}
    if end == "detach":
        from radtrack.run.background_launchers import running

        while running(home):  # the background end: done before the next run starts
            time.sleep(0.01)
        stored = {"stored_s": time.time() - t1}
    marks = dict(line.split() for line in out.stdout.splitlines()
                 if line.startswith(("start ", "end ")))
    if out.returncode != 0 or "start" not in marks or "end" not in marks:
        raise SystemExit(f"{mode}: exit {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    start, end = float(marks["start"]), float(marks["end"])
    if stored:
        stored["stored_s"] += t1 - end
    cpu = {} if mode == "plain" else {"launcher_cpu_s": launcher_cpu_s(uri)}
    return {"before_s": start - t0, "after_s": t1 - end, "total_s": t1 - t0, **stored, **cpu}


def launcher_cpu_s(uri: str) -> float:
    """``summary/monitoring/launcher_cpu_s`` of the newest row run in experiment "fixed":
    the launcher's own CPU over the row's span (radtrack/run/cost.py), read back through
    radtrack's light client (radtrack/store/handle.py)."""
    from radtrack.store.handle import client_for

    c = client_for(uri)
    exp = c.get_experiment_by_name("fixed")
    runs = c.search_runs([exp.experiment_id], filter_string="tags.`radtrack.role` = 'row'", max_results=5000)
    newest = max(runs, key=lambda r: r.info.start_time or 0)
    return float(newest.data.metrics.get("summary/monitoring/launcher_cpu_s", float("nan")))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--sleep", type=float, default=2.0)
    p.add_argument("--modes", default="plain,none,top,smi,smi+dcgm+top")
    p.add_argument("--tree", help="run radtrack from this checkout instead (PYTHONPATH)")
    p.add_argument("--label", default="this tree")
    p.add_argument("--json", type=Path)
    p.add_argument("--uri", help="track into this store (e.g. a tracking server) instead of a "
                                 "SQLite file per mode")
    args = p.parse_args()
    modes = args.modes.split(",")
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "sleeper.py").write_text(SCRIPT)
        for m in modes:  # warm-up: first store creation, bytecode compilation
            if m != "plain":
                one(m, folder, 0.1, args.tree, args.uri)
        for r in range(args.repeats):
            for m in modes[r % len(modes):] + modes[:r % len(modes)]:
                runs[m].append(one(m, folder, args.sleep, args.tree, args.uri))
    # whether each launch compiles radtrack's sources: an editable install with
    # PYTHONDONTWRITEBYTECODE=1 and no __pycache__ does (about 0.1 s on the VM); a wheel
    # install has them compiled
    root = Path(args.tree) if args.tree else Path(__file__).resolve().parents[1]
    compiled = (root / "radtrack" / "__pycache__").is_dir()
    bytecode = f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}, compiled={compiled}"
    print(f"{args.label}: {args.repeats} repeats of a {args.sleep:g}-s script ({bytecode})")
    print(f"{'mode':<16}{'total (s)':>18}{'before (s)':>18}{'after (s)':>18}{'stored (s)':>18}"
          f"{'launcher CPU (s)':>18}  (min-max, median)")
    table = {}
    for m, rs in runs.items():
        row = {}
        cells = []
        for k in ("total_s", "before_s", "after_s", "stored_s", "launcher_cpu_s"):
            v = [r[k] for r in rs if k in r]
            if not v:
                cells.append("-")
                continue
            row[k] = {"min": min(v), "median": statistics.median(v), "max": max(v), "all": v}
            cells.append(f"{min(v):.2f}-{max(v):.2f} ({statistics.median(v):.2f})")
        table[m] = row
        print(f"{m:<16}" + "".join(f"{c:>18}" for c in cells))
    if args.json:
        args.json.write_text(json.dumps({"label": args.label, "sleep_s": args.sleep, "bytecode": bytecode,
                                         "uri": args.uri or "sqlite (a file per mode)",
                                         "repeats": args.repeats, "modes": table}, indent=1))


if __name__ == "__main__":
    main()
