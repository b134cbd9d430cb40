"""Paired page benchmark: the picker's steps on two versions of the page, step by step.

``benchmarks/frontend.py`` times one version per run, so on a loaded machine two runs of
two versions differ by the load as much as by the code. This one serves the same store
from two frontends at once (``--old``: another checkout's ``frontend/`` over that
checkout's radtrack, as ``frontend.py --frontend-from`` does; the other: this tree) and
alternates them step by step (experiment clicked, workload clicked, a run ticked into the
basket, filter typed, filter cleared), the order flipped every experiment, so both see the same load. Per step it
prints the medians, their ratio (new / old), the Dash requests the step made and the time
the server took to start answering them (``responseStart - requestStart``).

    .venv/bin/python benchmarks/frontend_paired.py --old /tmp/old/frontend [--rounds 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import frontend as bench  # noqa: E402

# The Dash requests since the last call: (start, server wait, whole) in ms each.
REQUESTS = """() => {
    const entries = performance.getEntriesByType('resource')
        .filter(e => e.name.includes('_dash-update-component'))
        .map(e => [e.startTime, e.responseStart - e.requestStart, e.responseEnd - e.startTime]);
    performance.clearResourceTimings();
    return entries;
}"""
STEPS = ("experiment", "workload", "tick", "filter", "clear filter")


def steps_once(page, i: int, workloads: int, repeats: int, ticked: int,
               letter: str) -> dict[str, list]:
    """Experiment ``pick{i}`` through its steps on ``page``: each step's (ms, requests);
    ``ticked``: runs in the basket before this visit's tick of run ``letter``."""
    labels = "document.querySelectorAll('#workload label')"
    first, last = 10 * i + 1, 10 * i + workloads
    done: dict[str, list] = {s: [] for s in STEPS}

    def timed(step: str, args: list) -> None:
        page.evaluate(REQUESTS)
        ms = page.evaluate(bench.TIMED_ACTION, args)
        done[step].append((ms, page.evaluate(REQUESTS)))

    timed("experiment", ["#experiment label", f"pick{i:02d}",
                         f"{labels}.length === {workloads} && document.querySelector('#workload')"
                         f".innerText.includes('Workload {first} ')", None])
    timed("workload", ["#workload label", bench._label_text(page, last),
                       f"document.querySelector('#runs').innerText.includes('pick{i:02d}-{last} B')",
                       None])
    timed("tick", ["#runs .run-name label", f"pick{i:02d}-{last} {letter}",
                   f"document.querySelectorAll('#basket li').length === {ticked + 1}", None])
    for _ in range(repeats):
        time.sleep(0.3)  # the filter is debounced: a fresh edit, not one merged with the last
        timed("filter", ["#run-filter", None, f"{labels}.length === 1", f"pick{i:02d}-{first} "])
        time.sleep(0.3)
        timed("clear filter", ["#run-filter", None, f"{labels}.length === {workloads}", ""])
    return done


def run(args: argparse.Namespace) -> dict:
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="radtrack-frontend-paired-"))
    uri = f"sqlite:///{root / 'mlflow.db'}"
    bench.seed_picker(uri, root, args.experiments, args.workloads)
    servers = {}
    for name, tree in (("old", args.old), ("new", None)):
        (root / name).mkdir()
        servers[name] = bench.start_server(uri, root / name, tree)
    result: dict = {"machine": bench.machine(), "old": str(args.old), "load": [],
                    **{name: {s: [] for s in STEPS} for name in servers}}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=bench.CHROMIUM, headless=True)
            pages = {}
            for name, (_, url) in servers.items():
                page = browser.new_page(viewport={"width": 1500, "height": 1000})
                page.set_default_timeout(120_000)
                page.goto(url)
                page.wait_for_selector("#experiment label")
                pages[name] = page
            for r in range(args.rounds):
                result["load"].append(os.getloadavg()[0])
                for i in range(1, args.experiments + 1):
                    order = ("old", "new") if (i + r) % 2 else ("new", "old")
                    for name in order:
                        # the basket keeps each visit's tick: one more run each time
                        ticked = r * args.experiments + i - 1
                        for step, got in steps_once(pages[name], i, args.workloads,
                                                    args.repeats, ticked, "AB"[r]).items():
                            result[name][step] += got
            browser.close()
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=30)
    return result


def table(result: dict) -> str:
    rows = ["| step | old median ms | new median ms | new / old | Dash requests old / new "
            "| server wait old / new ms |", "| --- | ---: | ---: | ---: | --- | --- |"]
    for step in STEPS:
        old, new = result["old"][step], result["new"][step]
        mo, mn = (statistics.median(ms for ms, _ in x) for x in (old, new))
        ro, rn = (statistics.median(len(r) for _, r in x) for x in (old, new))
        wo, wn = (statistics.median(sum(e[1] for e in r) for _, r in x) for x in (old, new))
        rows.append(f"| {step} (n = {len(old)}) | {mo:.0f} | {mn:.0f} | {mn / mo:.2f} "
                    f"| {ro:g} / {rn:g} | {wo:.0f} / {wn:.0f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, metavar="DIR",
                        help="the other version's frontend/ folder (of a whole checkout)")
    parser.add_argument("--experiments", type=int, default=6)
    parser.add_argument("--workloads", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="filter/clear pairs per visit")
    parser.add_argument("--rounds", type=int, default=2, choices=(1, 2),
                        help="visits of each experiment (round 1 ticks run A, round 2 run B)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if not (args.old / "app.py").is_file():
        parser.error(f"--old {args.old}: no app.py there")
    result = run(args)
    print(f"{result['machine']}; 1-min load at each round: "
          + ", ".join(f"{x:.2f}" for x in result["load"]))
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
