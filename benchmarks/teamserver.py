"""Team server throughput: simulated 8-GPU nodes ship into one `mlflow server` over PostgreSQL.

Starts a throw-away PostgreSQL (durable defaults: fsync on) and `mlflow server` on
127.0.0.1 (tests/servers.py), then for each (nodes, concurrency) case starts that many node
processes at once. Each node is one run fed like a launcher with smi+dcgm+top at 10 Hz:
three listener streams of JSON lines into radtrack's real Sink (spool first, then log_batch
over REST with RADTRACK_SHIP_CONCURRENCY calls in flight). Per case it prints points/s
offered and stored, the lag (age of the oldest sample not yet stored, sampled every 0.5 s
while feeding), how long the rest took to drain after feeding stopped, and points lost
(emitted minus the rows PostgreSQL holds for the run: must be 0).

    python benchmarks/teamserver.py --nodes 1,3,6 --concurrency 1,4 --modes rest,postgres \
        --duration 30 --repeat 2 --out FILE

Mode ``postgres`` is the other recipe of docs/deployment.md: nodes that can reach the
database track into it directly (the sink's SQL path), the server only serves the UI.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


# -- one simulated node (a subprocess) -----------------------------------------------------

def node_main(uri: str, experiment_id: str, name: str, duration: float, interval: float,
              gpus: int, smi_keys: int, dcgm_keys: int, top_keys: int, spool: Path) -> None:
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "60")
    from radtrack.store.mlflow_client import mlflow_client as make_client
    from radtrack.store.sink import Sink

    c = make_client(uri)
    run_id = c.create_run(experiment_id, run_name=name).info.run_id
    sink = Sink(c, run_id, spool, uri)
    streams = {
        "smi": [f"smi/gpu{g}/q{j}_w" for g in range(gpus) for j in range(smi_keys)],
        "dcgm": [f"dcgm/gpu{g}/q{j}_pct" for g in range(gpus) for j in range(dcgm_keys)],
        "top": [f"top/q{j}_pct" for j in range(top_keys)],
    }
    sink.start()
    lags: list[float] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.5):
            lags.append(sink.lag_s())

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    emitted = 0
    t0 = time.monotonic()
    n = int(duration / interval)
    for i in range(n):
        deadline = t0 + i * interval
        delay = deadline - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        now = time.time()
        for listener, keys in streams.items():
            values = {k: float((i * 31 + j) % 997) / 7.0 for j, k in enumerate(keys)}
            sink.feed(listener, json.dumps({"type": "sample", "t": now, "v": values}))
            emitted += len(values)
    fed = time.monotonic()
    stop.set()
    watcher.join()
    stored_ok = sink.close(retry_for=300)
    drained = time.monotonic()
    print(json.dumps({"run_id": run_id, "emitted": emitted, "feed_s": fed - t0,
                      "drain_s": drained - fed, "lags": lags, "closed": stored_ok,
                      "failures": sink.failures, "last_error": sink.last_error}), flush=True)


# -- the harness ----------------------------------------------------------------------------

def _tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process tree, including descendants that already exited (the
    postmaster's backends come and go): own + reaped children's + live descendants'."""
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for q in procs:
        try:
            t = q.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def run_case(mode: str, uri: str, pg_libpq: str, pg_pid: int, server_pid: int, nodes: int,
             conc: int, args: argparse.Namespace, work: Path) -> dict[str, float]:
    """``mode`` rest: nodes track into the server (``uri`` http); postgres: nodes write the
    same database directly (``uri`` postgresql+psycopg, artifacts on a shared path)."""
    from mlflow import MlflowClient

    name = f"bench-{mode}-{nodes}n-c{conc}-{time.time_ns()}"
    if mode == "postgres":
        exp = MlflowClient(uri).create_experiment(
            name, artifact_location=(work / "shared-artifacts").as_uri())
    else:
        exp = MlflowClient(uri).create_experiment(name)
    env = {**os.environ, "RADTRACK_SHIP_CONCURRENCY": str(conc), "PYTHONUNBUFFERED": "1"}
    cpu0 = (_tree_cpu_s(server_pid), _tree_cpu_s(pg_pid))
    t0 = time.monotonic()
    procs = [subprocess.Popen(
        [sys.executable, __file__, "--node", uri, exp, f"node{i}", str(args.duration),
         str(args.interval), str(args.gpus), str(args.smi_keys), str(args.dcgm_keys),
         str(args.top_keys), str(work / f"spool-{nodes}-{conc}-{i}")],
        env=env, stdout=subprocess.PIPE, text=True) for i in range(nodes)]
    results = []
    for p in procs:
        out, _ = p.communicate(timeout=args.duration + 900)
        assert p.returncode == 0, f"node exited {p.returncode}"
        results.append(json.loads(out.strip().splitlines()[-1]))
    wall = time.monotonic() - t0
    cpu1 = (_tree_cpu_s(server_pid), _tree_cpu_s(pg_pid))
    import psycopg

    with psycopg.connect(pg_libpq) as conn:
        stored = [conn.execute("SELECT count(*) FROM metrics WHERE run_uuid = %s AND key NOT LIKE "
                               "'summary/%%'", (r["run_id"],)).fetchone()[0] for r in results]
    emitted = sum(r["emitted"] for r in results)
    lags = sorted(x for r in results for x in r["lags"])
    feed = max(r["feed_s"] for r in results)
    return {
        "mode": mode, "nodes": nodes, "concurrency": conc if mode == "rest" else "-",
        "offered_pts_s": emitted / feed,
        "stored_pts_s": sum(stored) / max(r["feed_s"] + r["drain_s"] for r in results),
        "lag_p50_s": statistics.median(lags) if lags else 0.0,
        "lag_p95_s": lags[int(0.95 * (len(lags) - 1))] if lags else 0.0,
        "lag_max_s": lags[-1] if lags else 0.0,
        "drain_s": max(r["drain_s"] for r in results),
        "lost": emitted - sum(stored),
        "failed_calls": sum(r["failures"] for r in results),
        "server_cpu_pct": 100 * (cpu1[0] - cpu0[0]) / wall,
        "server_us_per_pt": 1e6 * (cpu1[0] - cpu0[0]) / max(1, sum(stored)),
        "postgres_cpu_pct": 100 * (cpu1[1] - cpu0[1]) / wall,
        "all_closed": all(r["closed"] for r in results),
    }


def pg_version() -> str:
    """``postgres --version`` of the server the benchmark started (tests/servers.py's pick)."""
    from servers import postgres_bindir

    bindir = postgres_bindir()
    if bindir is None:
        return "?"
    p = subprocess.run([str(bindir / "postgres"), "--version"], capture_output=True, text=True)
    return p.stdout.strip() or p.stderr.strip()


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--node":
        a = sys.argv[2:]
        node_main(a[0], a[1], a[2], float(a[3]), float(a[4]), int(a[5]), int(a[6]), int(a[7]),
                  int(a[8]), Path(a[9]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="1,3,6", help="comma-separated node counts")
    ap.add_argument("--concurrency", default="1,4", help="RADTRACK_SHIP_CONCURRENCY values (rest)")
    ap.add_argument("--modes", default="rest,postgres",
                    help="rest: nodes -> mlflow server; postgres: nodes -> the database directly")
    ap.add_argument("--duration", type=float, default=30.0, help="seconds each node feeds")
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--smi-keys", type=int, default=20, help="smi keys a GPU")
    ap.add_argument("--dcgm-keys", type=int, default=20, help="dcgm keys a GPU")
    ap.add_argument("--top-keys", type=int, default=20)
    ap.add_argument("--workers", type=int, default=0, help="mlflow server workers (0: CPU count)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each case")
    ap.add_argument("--out", type=Path, default=None, help="also write the table here")
    ap.add_argument("--json", type=Path, default=None,
                    help="also write every case's result and the machine as JSON here")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="seconds for all cases (0: no limit): a case that would start after "
                         "budget - duration - 30 s is skipped and listed as skipped; cases run "
                         "repeat by repeat, so a cut keeps whole passes")
    args = ap.parse_args()

    from servers import start_mlflow_server, start_postgres, why_no_postgres

    reason = why_no_postgres()
    if reason:
        print(f"cannot run: {reason}")
        return 2
    workers = args.workers or os.cpu_count() or 2
    work = Path(tempfile.mkdtemp(prefix="radtrack-teambench-"))
    pg = start_postgres()
    backend = pg.new_database("mlflow_bench")
    server = start_mlflow_server(backend, work / "artifacts", work, workers=workers)
    rows = []
    skipped: list[dict[str, object]] = []
    started = time.monotonic()
    try:
        cases = [(m, n, c) for n in (int(x) for x in args.nodes.split(","))
                 for m in args.modes.split(",")
                 for c in ([int(x) for x in args.concurrency.split(",")] if m == "rest" else [0])]
        for rep in range(args.repeat):
            for mode, nodes, conc in cases:
                uri = server.uri if mode == "rest" else backend
                if args.budget and time.monotonic() - started > args.budget - args.duration - 30:
                    skipped.append({"mode": mode, "nodes": nodes, "concurrency": conc,
                                    "rep": rep + 1})
                    print(f"skipped (--budget {args.budget:g} s): {skipped[-1]}", flush=True)
                    continue
                load = os.getloadavg()[0]
                r = run_case(mode, uri, pg.libpq_uri("mlflow_bench"), pg.proc.pid,
                             server.proc.pid, nodes, conc, args, work)
                r["load1_before"] = load
                r["rep"] = rep + 1
                rows.append(r)
                print(json.dumps(r), flush=True)
    finally:
        server.stop()
        pg.stop()
    keys = args.gpus * (args.smi_keys + args.dcgm_keys) + args.top_keys
    head = (f"# teamserver benchmark\n\n{os.cpu_count()} CPUs, load average before "
            f"{os.getloadavg()}, mlflow server --workers {workers} over PostgreSQL (fsync on), "
            f"all on 127.0.0.1; each node {keys} keys at {1 / args.interval:g} Hz "
            f"({keys / args.interval:,.0f} points/s), {args.duration:g} s\n\n")
    cols = ["mode", "nodes", "concurrency", "rep", "offered_pts_s", "stored_pts_s", "lag_p50_s",
            "lag_p95_s", "lag_max_s", "drain_s", "lost", "failed_calls", "server_cpu_pct", "server_us_per_pt",
            "postgres_cpu_pct", "load1_before"]
    table = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    for r in rows:
        table += "| " + " | ".join(f"{r[c]:,.1f}" if isinstance(r[c], float) else str(r[c])
                                   for c in cols) + " |\n"
    if skipped:
        table += f"\nSkipped for lack of time (--budget {args.budget:g} s): {skipped}\n"
    print(head + table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(head + table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "cpus": os.cpu_count(), "workers": workers, "duration_s": args.duration,
            "interval_s": args.interval, "keys_per_node": keys, "postgres": str(pg_version()),
            "argv": sys.argv[1:], "cases": rows, "skipped": skipped}, indent=1) + "\n")
    return 0 if all(r["lost"] == 0 and r["all_closed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
