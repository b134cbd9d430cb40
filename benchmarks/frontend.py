"""Frontend benchmark: the page's response times in a real browser, repeated.

Seeds a store with 10 runs x 20 metrics x 36,000 points (one hour at 10 Hz) as Parquet
telemetry plus 190 small runs in 19 more experiments (200 runs in 20 experiments), then,
``--repeat`` times, starts ``python -m radtrack.frontend`` (the frontend/ folder next to
this file) as its own process with an empty cache and drives headless Chromium with
Playwright. Times are taken inside the page (``performance.now()``) from the click, the
typed filter or the relayout call until the page shows the result:

- summary: each run ticked -> the Summary table has its row (10 ticks);
- first chart: a metric ticked -> 10 traces drawn (cold cache); three more metrics;
- zoom: 7 zooms -> every trace re-sampled for the new window and drawn;
- shared link: the page's URL opened ``--links`` times in a new tab (a new browser
  context: nothing cached) -> chart drawn, timed from ``goto`` (this script's clock) and
  from the navigation's start (the page's clock). The tab is opened first and the link
  entered once the browser is idle: a new Playwright context starts a renderer that spends
  about 1 s of CPU with no page in it, which would otherwise share the two cores with the
  page. The page watches for its chart itself (a script it is given before it loads), so
  no Playwright code runs in it while it draws;
- picker, in the 200-run store: experiment -> its workloads listed, workload -> its runs,
  tick -> basket, filter -> workloads that match, filter cleared.

Prints one Markdown row per run (median / max within it, the 1-minute load average at its
start and end) and the median / max over all runs; ``--json`` also writes every number.
``--quiet-below 1.5`` waits for a quiet machine before each run.

    .venv/bin/python benchmarks/frontend.py [--repeat 3] [--quiet-below 1.5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

# the store seeder the frontend's tests use (tests/synthetic.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from synthetic import DEFAULT_METRICS, new_store, seed_workload  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
# The radtrack/frontend/ folder of this benchmark's checkout: what it measures unless told
# otherwise (an editable install may map radtrack.frontend to another checkout).
THIS_TREE = Path(__file__).resolve().parents[1] / "radtrack" / "frontend"
GD = "document.querySelector('#chart .js-plotly-plot')"
# Click, then poll on every animation frame until the condition holds; returns elapsed ms.
TIMED_CLICK = """async ([selector, text, condition]) => {
    const target = [...document.querySelectorAll(selector)].find(e => e.innerText.trim() === text);
    if (!target) { throw new Error('no ' + selector + ' with text ' + text); }
    const t0 = performance.now();
    target.click();
    await new Promise((resolve, reject) => {
        const deadline = t0 + 60000;
        const check = () => {
            if (new Function('return ' + condition)()) { resolve(); }
            else if (performance.now() > deadline) { reject(new Error('timeout: ' + condition)); }
            else { requestAnimationFrame(check); }
        };
        check();
    });
    return performance.now() - t0;
}"""
TIMED_ZOOM = """async ([lo, hi, condition]) => {
    const gd = """ + GD + """;
    const t0 = performance.now();
    Plotly.relayout(gd, {'xaxis.range': [lo, hi]});
    await new Promise((resolve, reject) => {
        const check = () => {
            if (new Function('lo', 'return ' + condition)(lo)) { resolve(); }
            else if (performance.now() - t0 > 60000) {
                reject(new Error('zoom timeout: first x per trace ' +
                                 JSON.stringify(gd._fullData.map(t => t.x[0]))));
            }
            else { requestAnimationFrame(check); }
        };
        check();
    });
    const t1 = performance.now();
    const calls = performance.getEntriesByType('resource')
        .filter(e => (e.name.includes('_radtrack/zoom') || e.name.includes('_dash-update-component'))
                     && e.startTime >= t0);
    const last = calls[calls.length - 1];
    return {total: t1 - t0, requests: calls.length,
            before_request: calls.length ? calls[0].startTime - t0 : null,
            server: calls.length ? last.responseEnd - calls[0].startTime : null,
            after_response: calls.length ? t1 - last.responseEnd : null};
}"""


def rendered(traces: int) -> str:
    """Plotly has the data and the SVG holds one drawn path group per trace."""
    return (f"{GD} && {GD}._fullData && {GD}._fullData.length === {traces} && "
            f"document.querySelectorAll('#chart .scatterlayer .trace').length === {traces}")


# Given to a shared link's tab before it loads: resolves with the page time at which the
# chart shows ``traces`` traces. (Playwright's wait_for_function injects its own script into
# the page on first use, 0.1-0.2 s of main-thread work while the chart draws on this VM.)
LINK_WATCH = """window.radtrackBenchDrawn = new Promise((resolve, reject) => {
    const check = () => {
        if (%s) { resolve(performance.now()); }
        else if (performance.now() > 120000) { reject(new Error('no chart after 120 s')); }
        else { setTimeout(check, 10); }
    };
    check();
});"""


def wait_browser_idle(limit_s: float = 5.0, window_s: float = 0.25, busy_ms: float = 15.0) -> float:
    """Wait until this script's child processes (Playwright's driver, Chromium) use less
    than ``busy_ms`` of CPU in ``window_s``; returns the seconds waited."""
    def used() -> float:
        total = 0.0
        for child in psutil.Process().children(recursive=True):
            try:
                times = child.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                pass
        return total * 1000
    t0 = time.monotonic()
    last = used()
    while time.monotonic() - t0 < limit_s:
        time.sleep(window_s)
        now = used()
        if now - last < busy_ms:
            break
        last = now
    return time.monotonic() - t0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def seed(root: Path, runs: int, metrics: int, points: int, history: bool) -> tuple[str, float]:
    uri = new_store(root)
    keys = list(DEFAULT_METRICS[:metrics])
    t0 = time.perf_counter()
    for workload in range(1, runs // 2 + 1):
        seed_workload(uri, "bench", workload, ["A", "B"], metrics=keys, points=points, hz=10.0,
                      history=history, start=1_700_000_000.0 + workload * 4000,
                      artifact_root=root / "artifacts")
    return uri, time.perf_counter() - t0


# Serves radtrack.frontend from another copy of the package folder (argv[1]), for before/
# after comparisons on the same machine and load: the rest of radtrack stays the installed one.
FROM_TREE = """
import importlib.util, sys
import radtrack
path = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location(
    "radtrack.frontend", path + "/__init__.py", submodule_search_locations=[path])
module = importlib.util.module_from_spec(spec)
sys.modules["radtrack.frontend"] = module
spec.loader.exec_module(module)
from radtrack.frontend import app
assert app.__file__.startswith(path), app.__file__
sys.exit(app.main(sys.argv[1:]))
"""


def _checkout_of(tree: Path) -> Path | None:
    """The checkout a frontend folder belongs to: ``<checkout>/radtrack/frontend`` (since
    978c93b) or ``<checkout>/frontend`` (before); None for a lone copy of the folder."""
    tree = tree.resolve()
    for checkout in (tree.parents[1], tree.parent):
        if (checkout / "radtrack" / "__init__.py").is_file():
            return checkout
    return None


def start_server(uri: str, root: Path, tree: Path | None = None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "RADTRACK_HOME": str(root / ".rt"),
           "RADTRACK_CACHE_DIR": str(root / "cache")}
    launch = ["-c", FROM_TREE, str(tree.resolve())] if tree else ["-m", "radtrack.frontend"]
    checkout = _checkout_of(tree) if tree else None
    if checkout and checkout != _checkout_of(THIS_TREE):
        # a whole checkout of another commit: its frontend over its own radtrack package
        env["PYTHONPATH"] = os.pathsep.join([str(checkout), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.Popen([sys.executable, *launch, "--tracking-uri", uri,
                             "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=root.parent)  # sys.path[0]: not this checkout
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return proc, url
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"frontend exited with {proc.returncode} before serving") from None
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("frontend did not start within 120 s")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = psutil.virtual_memory().total / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, {platform.system()} {platform.release()}"


def seed_picker(uri: str, root: Path, experiments: int, workloads: int) -> float:
    """Small runs for the picker: ``experiments`` more experiments of ``workloads`` workloads
    of rows A and B. Experiment i numbers its workloads from 10 i + 1, so each list of
    workloads reads differently from the one before."""
    t0 = time.perf_counter()
    for i in range(1, experiments + 1):
        for w in range(1, workloads + 1):
            seed_workload(uri, f"pick{i:02d}", 10 * i + w, ["A", "B"], metrics=PICKER_METRICS,
                          points=60, hz=1.0, history=False, telemetry=False, epochs=0,
                          start=1_690_000_000.0 + i * 100_000 + w * 100,
                          artifact_root=root / "artifacts")
    return time.perf_counter() - t0


PICKER_METRICS = ("smi/gpu0/power_w", "top/cpu_pct")
TIMED_ACTION = """async ([selector, text, condition, typed]) => {
    const target = [...document.querySelectorAll(selector)].find(
        e => text === null || e.innerText.trim() === text);
    if (!target) { throw new Error('no ' + selector + ' with text ' + text); }
    const t0 = performance.now();
    if (typed === null) { target.click(); }
    else {
        const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
        setter.call(target, typed);
        target.dispatchEvent(new Event('input', {bubbles: true}));
        target.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', keyCode: 13, bubbles: true}));
        target.dispatchEvent(new KeyboardEvent('keypress', {key: 'Enter', keyCode: 13, bubbles: true}));
        target.dispatchEvent(new Event('change', {bubbles: true}));
    }
    await new Promise((resolve, reject) => {
        const check = () => {
            if (new Function('return ' + condition)()) { resolve(); }
            else if (performance.now() - t0 > 60000) { reject(new Error('timeout: ' + condition)); }
            else { requestAnimationFrame(check); }
        };
        check();
    });
    return performance.now() - t0;
}"""


def picker_steps(page, url: str, experiments: int, workloads: int) -> dict[str, list[float]]:
    """In-page times of the picker's steps in a store of many runs, per kind of step."""
    steps: dict[str, list[float]] = {"experiment": [], "workload": [], "tick": [], "filter": [],
                                     "clear filter": []}
    page.goto(url)
    page.wait_for_selector("#experiment label")
    labels = "document.querySelectorAll('#workload label')"
    ticked = 0
    for i in range(1, experiments + 1):
        first = 10 * i + 1
        steps["experiment"].append(page.evaluate(TIMED_ACTION, [
            "#experiment label", f"pick{i:02d}",
            f"{labels}.length === {workloads} && "
            f"document.querySelector('#workload').innerText.includes('Workload {first} ')", None]))
        last = 10 * i + workloads
        steps["workload"].append(page.evaluate(TIMED_ACTION, [
            "#workload label", _label_text(page, last),
            f"document.querySelector('#runs').innerText.includes('pick{i:02d}-{last} B')", None]))
        ticked += 1
        steps["tick"].append(page.evaluate(TIMED_ACTION, [
            "#runs .run-name label", f"pick{i:02d}-{last} A",
            f"document.querySelectorAll('#basket li').length === {ticked}", None]))
        steps["filter"].append(page.evaluate(TIMED_ACTION, [
            "#run-filter", None, f"{labels}.length === 1", f"pick{i:02d}-{first} "]))
        steps["clear filter"].append(page.evaluate(TIMED_ACTION, [
            "#run-filter", None, f"{labels}.length === {workloads}", ""]))
    return steps


def _label_text(page, workload: int) -> str:
    return page.evaluate("""(w) => [...document.querySelectorAll('#workload label')]
        .map(e => e.innerText.trim()).find(t => t.startsWith('Workload ' + w + ' '))""", workload)


def run_once(args: argparse.Namespace, uri: str, root: Path, index: int) -> dict:
    from playwright.sync_api import sync_playwright

    chosen = list(args.chart_keys)
    run_root = root / f"run{index}"
    server, url = start_server(uri, run_root, args.frontend_from)
    proc = psutil.Process(server.pid)
    results: dict = {"load": [os.getloadavg()[0]], "rss_idle_mib": proc.memory_info().rss / 2**20}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
            results["chromium"] = browser.version
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(url)
            page.locator("#experiment").get_by_text("bench", exact=True).click()
            last = args.runs // 2
            summary = []
            for workload in range(1, last + 1):
                page.locator("#workload label", has_text=f"Workload {workload} ").click()
                page.wait_for_function("document.querySelector('#runs').innerText"
                                       f".includes('bench-{workload} B')")
                for letter in ("A", "B"):
                    n = 2 * (workload - 1) + (letter == "B") + 1
                    # Ticking a run until the summary table (open by default) has its row.
                    summary.append(page.evaluate(TIMED_ACTION, [
                        "#runs .run-name label", f"bench-{workload} {letter}",
                        f"document.querySelectorAll('#summary tr').length > {n}", None]))
            results["summary_ms"] = summary
            page.wait_for_function("document.querySelectorAll('#metrics input:not(:disabled)')"
                                   f".length >= {args.metrics}")
            clicks = []
            for i, key in enumerate(chosen, start=1):
                short = key.split("/", 1)[1]
                ms = page.evaluate(TIMED_CLICK, ["#metrics label", short, rendered(args.runs * i)])
                clicks.append(ms)
            results["first_chart_ms"] = clicks[0]
            results["add_metric_ms"] = clicks[1:]
            results["rss_after_chart_mib"] = proc.memory_info().rss / 2**20
            zooms = []
            duration = args.points / 10.0
            width = min(args.zoom_width, duration / 4)
            for i in range(args.zooms):
                # distinct windows spread over the run, each one new to the server
                lo = duration * 0.05 + i * (duration * 0.9 - width) / max(args.zooms, 1)
                hi = lo + width
                condition = (f"{GD}._fullData.every(t => t.x[0] >= lo - 1 && t.x[0] <= lo)")
                timing = page.evaluate(TIMED_ZOOM, [lo, hi, condition])
                zooms.append(timing["total"])
                results.setdefault("zoom_breakdown", []).append(timing)
            results["zoom_ms"] = zooms
            points = page.evaluate(f"() => {GD}._fullData.map(t => t.x.length)")
            results["points_per_trace_after_zoom"] = max(points)
            link = page.url
            if args.screenshot:
                page.screenshot(path=args.screenshot, full_page=True)
            page.close()  # headless Chromium does not draw a page that is not in front
            links, in_page = [], []
            for _ in range(args.links):
                fresh = browser.new_page(viewport={"width": 1500, "height": 1000})
                fresh.set_default_timeout(120_000)
                # Timer polling: animation-frame polling was seen to stall on a fresh page.
                fresh.add_init_script(LINK_WATCH % rendered(args.runs * len(chosen)))
                if args.link_tab_settle:
                    results.setdefault("link_tab_idle_s", []).append(wait_browser_idle())
                t0 = time.perf_counter()
                fresh.goto(link)
                drawn = fresh.evaluate("window.radtrackBenchDrawn")
                links.append((time.perf_counter() - t0) * 1000)
                in_page.append(drawn)
                fresh.close()
            results["shared_link_ms"] = links
            results["shared_link_page_ms"] = in_page
            if args.picker_experiments:
                tab = browser.new_page(viewport={"width": 1500, "height": 1000})
                tab.set_default_timeout(120_000)
                results["picker_ms"] = picker_steps(tab, url, args.picker_experiments,
                                                    args.picker_workloads)
                tab.close()
            results["rss_end_mib"] = proc.memory_info().rss / 2**20
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    results["load"].append(os.getloadavg()[0])
    return results


def wait_quiet(limit: float, max_wait_s: float) -> float:
    """Wait (up to ``max_wait_s``) until the 1-minute load average is under ``limit``."""
    deadline = time.monotonic() + max_wait_s
    while os.getloadavg()[0] >= limit and time.monotonic() < deadline:
        time.sleep(15)
    return os.getloadavg()[0]


def run(args: argparse.Namespace) -> dict:
    root = Path(tempfile.mkdtemp(prefix="radtrack-frontend-bench-"))
    uri, seed_s = seed(root, args.runs, args.metrics, args.points, args.history)
    picker_runs = 2 * args.picker_experiments * args.picker_workloads
    picker_s = seed_picker(uri, root, args.picker_experiments, args.picker_workloads)
    results: dict = {"machine": machine(), "frontend": str(args.frontend_from),
                     "runs": args.runs, "metrics": args.metrics, "points": args.points,
                     "seed_s": seed_s, "picker_runs": picker_runs, "picker_seed_s": picker_s,
                     "picker_experiments": args.picker_experiments,
                     "link_tab_settle": args.link_tab_settle,
                     "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "repeats": []}
    for i in range(args.repeat):
        if args.quiet_below:
            wait_quiet(args.quiet_below, args.quiet_wait_s)
        results["repeats"].append(run_once(args, uri, root, i))
        print(repeat_row(i + 1, results["repeats"][-1]), file=sys.stderr, flush=True)
    return results


def _mm(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} / {max(values):.0f}"


def repeat_row(n: int, r: dict) -> str:
    picker = r.get("picker_ms", {})
    cells = [f"{n}", f"{r['load'][0]:.2f}-{r['load'][1]:.2f}", f"{r['first_chart_ms']:.0f}",
             _mm(r["zoom_ms"]), _mm(r["summary_ms"]), f"{r['summary_ms'][-1]:.0f}",
             _mm(r["shared_link_ms"]), _mm(r["shared_link_page_ms"])]
    cells += [_mm(picker[k]) if k in picker else "-" for k in PICKER_STEPS]
    cells.append(f"{r['rss_idle_mib']:.0f} / {r['rss_after_chart_mib']:.0f} / {r['rss_end_mib']:.0f}")
    return "| " + " | ".join(cells) + " |"


PICKER_STEPS = ("experiment", "workload", "tick", "filter", "clear filter")


def table(r: dict) -> str:
    reps = r["repeats"]
    lines = [
        f"Machine: {r['machine']}; Chromium {reps[0].get('chromium')} headless; {r['date']}.",
        f"Store: {r['runs']} runs x {r['metrics']} metrics x {r['points']:,} points "
        f"(Parquet telemetry, seeded in {r['seed_s']:.1f} s) + {r['picker_runs']} small runs "
        f"in {r.get('picker_experiments', '')} more experiments for the picker "
        f"({r['picker_seed_s']:.1f} s).",
        f"Frontend: {r['frontend']}. Each row: one run (fresh server, cold caches); times in ms, "
        "median / max within the run.",
        "",
        "| run | load 1-min (start-end) | first chart | zoom (7) | summary per tick (10) | "
        "summary, last tick | shared link (from goto) | shared link (page clock) | "
        "picker: experiment | workload | tick | filter | "
        "clear filter | server RSS idle / chart / end MiB |",
        "| --- " * 14 + "|",
        *[repeat_row(i, rep) for i, rep in enumerate(reps, start=1)],
    ]
    every = {
        "zoom": [v for rep in reps for v in rep["zoom_ms"]],
        "summary per tick": [v for rep in reps for v in rep["summary_ms"]],
        "shared link (from goto)": [v for rep in reps for v in rep["shared_link_ms"]],
        "shared link (page clock)": [v for rep in reps for v in rep["shared_link_page_ms"]],
        "first chart": [rep["first_chart_ms"] for rep in reps],
    }
    for step in PICKER_STEPS:
        values = [v for rep in reps for v in rep.get("picker_ms", {}).get(step, [])]
        if values:
            every[f"picker {step}"] = values
    lines += ["", "All runs together (median / max, ms): " + "; ".join(
        f"{k} {_mm(v)}" for k, v in every.items()) + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=10, help="runs (even: workloads of A and B)")
    parser.add_argument("--metrics", type=int, default=20, help="metrics per run (at most 20)")
    parser.add_argument("--points", type=int, default=36_000, help="samples per metric (10 Hz)")
    # Metrics the summary table does not read, so the first chart really starts cold.
    parser.add_argument("--chart-keys", nargs="+", default=[
        "smi/gpu0/mem_clock_mhz", "smi/gpu0/mem_util_pct", "dcgm/gpu0/sm_occupancy_pct",
        "dcgm/gpu0/dram_active_pct"], help="metrics plotted, in click order")
    parser.add_argument("--zooms", type=int, default=7)
    parser.add_argument("--zoom-width", type=float, default=300.0, help="seconds shown per zoom")
    parser.add_argument("--history", action="store_true",
                        help="also log every sample to MLflow's metric history (slow to seed)")
    parser.add_argument("--links", type=int, default=3, help="times the shared link is opened")
    parser.add_argument("--no-link-tab-settle", dest="link_tab_settle", action="store_false",
                        help="enter the link right after opening its tab (the earlier method: "
                             "the new context's own start-up shares the cores with the page)")
    parser.add_argument("--picker-experiments", type=int, default=19,
                        help="more experiments of small runs for the picker steps (0: none)")
    parser.add_argument("--picker-workloads", type=int, default=5,
                        help="workloads (rows A and B) per picker experiment")
    parser.add_argument("--repeat", type=int, default=3, help="runs, each with a fresh server")
    parser.add_argument("--quiet-below", type=float, default=0.0, metavar="LOAD",
                        help="before each run wait until the 1-minute load average is below LOAD")
    parser.add_argument("--quiet-wait-s", type=float, default=900.0,
                        help="give up waiting for a quiet machine after this long")
    parser.add_argument("--json", type=Path, default=None, help="write the results here too")
    parser.add_argument("--screenshot", default=None, help="save the page as PNG here")
    parser.add_argument("--frontend-from", type=Path, default=None, metavar="DIR",
                        help="serve radtrack.frontend from this copy of the radtrack/frontend/ "
                             "folder (default: this checkout's) "
                             "(e.g. `git archive <commit> radtrack/frontend | tar -x -C /tmp/old`, "
                             "then /tmp/old/radtrack/frontend) to compare versions under the same "
                             "load; the folder of a whole checkout (`git archive <commit> radtrack "
                             "| tar -x -C /tmp/old`) is served over that checkout's own radtrack")
    args = parser.parse_args(argv)
    if args.runs < 2 or args.runs % 2 or not 1 <= args.metrics <= len(DEFAULT_METRICS):
        parser.error(f"--runs must be even and >= 2, --metrics in 1..{len(DEFAULT_METRICS)}")
    unknown = [k for k in args.chart_keys if k not in DEFAULT_METRICS[:args.metrics]]
    if unknown:
        parser.error(f"--chart-keys {', '.join(unknown)} not among the seeded metrics")
    if args.frontend_from is None:
        args.frontend_from = THIS_TREE
    if not (args.frontend_from / "app.py").is_file():
        parser.error(f"--frontend-from {args.frontend_from}: no app.py there")
    if not os.path.exists(CHROMIUM):
        parser.error(f"{CHROMIUM} is missing (apt-get install chromium)")
    results = run(args)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
