"""The sink: write-ahead spool, log_batch chunking, exactly-once shipping, sync, outages."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from servers import free_port as _free_port  # outside the ephemeral ports
from support import cli_here, run_cli, spooled_samples

from radtrack.store.sink import MAX_METRICS_PER_CALL, Sink, summarize

SCRIPTS = Path(__file__).parents[1] / "scripts"


def _client(uri: str):
    from mlflow import MlflowClient

    return MlflowClient(uri)


def _new_run(uri: str) -> str:
    c = _client(uri)
    exp = c.create_experiment("sink")
    return c.create_run(exp).info.run_id


def _history(c, rid: str, key: str) -> list:
    """A listener key's stored history, bare or under MLflow's ``system/`` prefix."""
    return c.get_metric_history(rid, key) or c.get_metric_history(rid, "system/" + key)


def _sample(i: int, n_keys: int) -> str:
    return json.dumps({"type": "sample", "t": 1_700_000_000 + i * 0.1,
                       "v": {f"t/k{j}_pct": float(i + j) for j in range(n_keys)}})


class _Spy:
    """Wraps a real MlflowClient, counting log_batch sizes; can fail the first N calls."""

    def __init__(self, client, fail_first: int = 0):
        self.client = client
        self.sizes: list[int] = []
        self.fail_left = fail_first

    def log_batch(self, run_id, metrics=(), **kw):
        if self.fail_left > 0:
            self.fail_left -= 1
            raise ConnectionError("store down (test)")
        self.sizes.append(len(metrics))
        return self.client.log_batch(run_id, metrics=metrics, **kw)

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_batches_are_chunked_and_every_sample_stored_once(store: str, tmp_path: Path) -> None:
    run_id = _new_run(store)
    spy = _Spy(_client(store), fail_first=2)
    sink = Sink(spy, run_id, tmp_path / "spool", store, flush_every=0.2, sql_bulk=False)
    sink.feed("fake", json.dumps({"type": "hello", "listener": "fake", "metrics": [], "tags": {}}))
    sink.start()
    n, k = 400, 23  # 9200 points; 23 does not divide 1000, so whole samples must not be split
    for i in range(n):
        sink.feed("fake", _sample(i, k))
    assert sink.close(retry_for=30)
    assert spy.sizes and max(spy.sizes) <= MAX_METRICS_PER_CALL
    assert all(s % k == 0 for s in spy.sizes)
    # the samples, and the summaries: mean, min, max and the readings in the span (n) per key
    assert sum(spy.sizes) == n * k + len(summarize(read_parquet(store, run_id, tmp_path))) + k
    hist = _client(store).get_metric_history(run_id, "system/t/k5_pct")
    assert sorted(h.step for h in hist) == list(range(n))  # exactly once, step = sample index
    assert hist[0].timestamp == 1_700_000_000_000 + 0
    assert not (tmp_path / "spool" / run_id).exists()  # fully stored spool is removed


@pytest.mark.parametrize("sql_bulk", [False, True], ids=["log_batch", "sql"])
def test_a_backlog_ships_in_bounded_rounds(store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           sql_bulk: bool) -> None:
    """After an outage the backlog goes in rounds of ROUND_CALLS calls a stream (memory
    bounded), all of it in one ship(), each sample once."""
    from radtrack.store import shipping

    monkeypatch.setattr(shipping, "ROUND_CALLS", 2)
    run_id = _new_run(store)
    spy = _Spy(_client(store))
    sink = Sink(spy, run_id, tmp_path / "spool", store, sql_bulk=sql_bulk)
    rounds = []
    real = sink.shipper._next_round
    monkeypatch.setattr(sink.shipper, "_next_round", lambda: rounds.append(1) or real())
    for i in range(150):  # 150 x 40 = 6000 points a stream: 6 calls, 3 rounds
        sink.feed("a", _sample(i, 40))
        sink.feed("b", json.dumps({"type": "sample", "t": 1_700_000_000 + i * 0.1, "v": {}}))
    assert sink.ship() and sink.pending_count == 0
    assert len(rounds) == 3  # 2 + 2 + 2 calls of stream a
    if not sql_bulk:
        assert spy.sizes == [1000] * 6
    hist = _history(_client(store), run_id, "t/k39_pct")
    assert sorted(h.step for h in hist) == list(range(150))
    assert (tmp_path / "spool" / run_id / "b.shipped").read_text() == "150"


def read_parquet(uri: str, run_id: str, tmp: Path) -> pd.DataFrame:
    path = _client(uri).download_artifacts(run_id, "telemetry/fake.parquet", str(tmp))
    return pd.read_parquet(path)


def test_parquet_trace_and_summary(store: str, tmp_path: Path) -> None:
    run_id = _new_run(store)
    sink = Sink(_client(store), run_id, tmp_path / "spool", store)
    for i in range(11):  # 100 W for 10 s, energy counter 0..1000 J
        sink.feed("smi", json.dumps({"type": "sample", "t": 1000.0 + i,
                                     "v": {"smi/gpu0/power_w": 100.0, "smi/gpu0/energy_j": 100.0 * i}}))
    assert sink.close()
    frame = pd.read_parquet(_client(store).download_artifacts(run_id, "telemetry/smi.parquet", str(tmp_path)))
    assert list(frame.columns) == ["time", "step", "smi/gpu0/power_w", "smi/gpu0/energy_j"]
    assert len(frame) == 11 and frame["step"].tolist() == list(range(11))
    m = _client(store).get_run(run_id).data.metrics
    assert m["summary/smi/gpu0/energy_j"] == pytest.approx(1000.0)
    assert m["summary/smi/gpu0/power_w/mean"] == pytest.approx(100.0)


def test_recover_ships_only_unshipped_lines(store: str, tmp_path: Path) -> None:
    run_id = _new_run(store)
    root = tmp_path / "spool"
    sink = Sink(_client(store), run_id, root, store)
    for i in range(50):
        sink.feed("fake", _sample(i, 3))
    assert sink.ship()
    for i in range(50, 80):  # spooled, never shipped: the launcher "dies" here
        sink.feed("fake", _sample(i, 3))
    (root / run_id / "fake.jsonl").open("a").write('{"type": "sample", "t": 17')  # torn line
    assert (root / run_id / "fake.shipped").read_text() == "50"
    spy = _Spy(_client(store))
    again = Sink.recover(spy, root / run_id)
    again.writer.enabled = False  # count log_batch calls
    assert again.pending_count == 30
    assert again.close()
    assert spy.sizes[0] == 30 * 3  # only the unshipped lines (the summary batch follows)
    hist = _client(store).get_metric_history(run_id, "system/t/k1_pct")
    assert sorted(h.step for h in hist) == list(range(80))


def _start_server(db: Path, artifacts: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{db}",
         "--artifacts-destination", str(artifacts), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})  # no job runners
    deadline = time.monotonic() + 90
    import urllib.request

    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).close()
            return proc
        except OSError:
            assert proc.poll() is None, "mlflow server exited during start"
            time.sleep(0.3)
    raise AssertionError("mlflow server did not start")


def _stop_server(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_store_outage_mid_run_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RADTRACK_HOME", str(tmp_path / ".radtrack"))
    port = _free_port()
    uri = f"http://127.0.0.1:{port}"
    db, arts = tmp_path / "server.db", tmp_path / "server-artifacts"
    server = _start_server(db, arts, port)
    try:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "radtrack", "--tracking-uri", uri, "-e", "outage", "-l", "top",
             "--interval", "0.1", str(SCRIPTS / "busy.py"), "14"],
            env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        spool = tmp_path / ".radtrack" / "spool"
        deadline = time.monotonic() + 120
        # the run is sampling and its run exists, so its sink ships (meta.json: Sink.bind);
        # on a loaded host MLflow's import and the run's creation take seconds after the start
        while not (any(spool.glob("*/top.jsonl")) and any(spool.glob("*/meta.json"))):
            assert launcher.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(2)  # a shipment or two (every 2 s) before the outage
        _stop_server(server)  # the store goes away mid-run...
        time.sleep(4)
        server = _start_server(db, arts, port)  # ...and comes back
        out, _ = launcher.communicate(timeout=180)
        assert launcher.returncode == 0, out
        assert "storing top samples failed" in out  # the outage really hit the sink
        c = _client(uri)
        exp = c.get_experiment_by_name("outage")
        run = next(r for r in c.search_runs([exp.experiment_id])
                   if r.data.tags.get("radtrack.role") == "row")
        frame = pd.read_parquet(c.download_artifacts(run.info.run_id, "telemetry/top.parquet",
                                                     str(tmp_path)))
        assert len(frame) > 80  # ~14 s at 10 Hz
        for key in ("top/mem_used_mib", "top/cpu_pct"):  # every sample; all but the first
            steps = sorted(h.step for h in c.get_metric_history(run.info.run_id, f"system/{key}"))
            emitted = frame.loc[frame[key].notna(), "step"].tolist()
            assert steps == emitted, f"{key}: emitted != stored, or stored twice"
        # a rate needs half an interval since its baseline: on a loaded host a few bunched
        # readings carry none (top's rate_window), never most of them
        assert len(emitted) >= 0.95 * len(frame) - 1
    finally:
        _stop_server(server)


@pytest.mark.slow
def test_sigkilled_launcher_then_sync(store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    # The script runs until the launcher is killed (it waits for a file never written). It
    # used to burn for 30 s: on a loaded 2-core host the run's creation, the live sync (a
    # subprocess then) and the 3-s wait took longer, the run FINISHED before the kill and
    # the sync found nothing to store (issue 47).
    launcher = subprocess.Popen(
        [sys.executable, "-m", "radtrack", "-e", "crash", "-l", "top", "--interval", "0.1",
         str(SCRIPTS / "wait_for_file.py"), str(tmp_path / "pid"), str(tmp_path / "never")],
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    spool = Path(os.environ["RADTRACK_HOME"]) / "spool"
    try:
        deadline = time.monotonic() + 120
        # the script starts before its run exists (radtrack/run/record.py): wait for the run
        while not any(spool.glob("*/meta.json")):
            assert launcher.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        live = cli_here(monkeypatch, capsys, "sync")  # a live launcher's spool is left alone
        assert live.returncode == 0 and "0 run(s) stored" in live.stdout, live.stdout
        assert "is still running it" in live.stdout
        # some 30 readings spooled (counted, not waited for: a loaded host reads late)
        while spooled_samples(spool, "top") < 30:
            assert launcher.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        launcher.kill()
        launcher.wait()
    p = cli_here(monkeypatch, capsys, "sync")  # the kernel released its lock as it died
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 run(s) stored" in p.stdout, p.stdout
    c = _client(store)
    exp = c.get_experiment_by_name("crash")
    run = next(r for r in c.search_runs([exp.experiment_id]) if r.data.tags.get("radtrack.role") == "row")
    assert run.info.status == "KILLED"
    frame = pd.read_parquet(c.download_artifacts(run.info.run_id, "telemetry/top.parquet", str(tmp_path)))
    steps = sorted(h.step for h in c.get_metric_history(run.info.run_id, "system/top/mem_used_mib"))
    assert len(frame) >= 20 and steps == list(range(len(frame)))
    cpu_steps = sorted(h.step for h in c.get_metric_history(run.info.run_id, "system/top/cpu_pct"))
    assert cpu_steps == frame.loc[frame["top/cpu_pct"].notna(), "step"].tolist()
    assert not any(spool.glob("*/meta.json"))
    again = cli_here(monkeypatch, capsys, "sync")
    assert again.returncode == 0 and "0 run(s) stored" in again.stdout


def _equivalence_metrics():
    """Points that exercise log_batch's rules: NaN, infinities, a larger value at the same
    step and time, an older step, and batches arriving out of order (a resend)."""
    from mlflow.entities import Metric

    metrics = [Metric(f"smi/gpu0/k{j}_w", float((i * 7 + j) % 11), 1_700_000_000_000 + i * 100, i)
               for i in range(300) for j in range(5)]
    metrics.append(Metric("smi/gpu0/k0_w", float("nan"), 1_700_000_999_000, 300))
    metrics.append(Metric("smi/gpu0/k1_w", float("inf"), 1_700_000_999_000, 300))
    metrics.append(Metric("smi/gpu0/k2_w", float("-inf"), 1_700_000_999_100, 301))
    # the same step and time with a larger value wins the latest; an older step never does
    metrics.append(Metric("smi/gpu0/k3_w", 99.0, 1_700_000_000_000 + 299 * 100, 299))
    metrics.append(Metric("smi/gpu0/k4_w", 1e9, 1_700_000_000_000, 0))
    # batches arrive out of order (a resend after an outage): the latest must not regress
    order = [2, 0, 3, 1]
    return [m for b in order for m in metrics[b * 400:(b + 1) * 400]]


def _store_state(c, rid: str):
    run = c.get_run(rid)
    hist = {k: sorted((h.step, h.timestamp, str(h.value)) for h in c.get_metric_history(rid, k))
            for k in run.data.metrics}
    return run.data.metrics, hist


def _assert_same_store(bulk, reference) -> None:
    assert str(bulk[0]) == str(reference[0])  # latest values (str: NaN == NaN)
    assert bulk[1] == reference[1]  # every point, once
    assert {len(h) for h in bulk[1].values()} == {301}  # 300 samples + one extra point each


@pytest.mark.parametrize("store_kind", ["sqlite-upsert", "sqlalchemy-and-mlflow", "postgresql-upsert",
                                        "postgresql-sqlalchemy-and-mlflow"])
def test_sql_bulk_path_stores_what_log_batch_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    request: pytest.FixtureRequest,
                                                    store_kind: str) -> None:
    """The SQL fast path leaves the store exactly as MlflowClient.log_batch would: same
    history, same latest values, duplicates (a resend) stored once; its SQLite
    DB-API/UPSERT form, the SQLAlchemy + MLflow form (SQLite before 3.24, other databases),
    and both on a real PostgreSQL server (a ``postgresql+psycopg://`` tracking URI)."""
    from radtrack.store import sqlwriter
    from radtrack.store.sqlwriter import SqlMetricWriter

    monkeypatch.setattr(sqlwriter, "_SQLITE_UPSERT", store_kind == "sqlite-upsert")
    if store_kind == "postgresql-sqlalchemy-and-mlflow":  # the form other databases take
        monkeypatch.setattr(sqlwriter, "_DIRECT_DRIVERS", ())
    metrics = _equivalence_metrics()
    points = [(m.key, m.value, m.timestamp, m.step) for m in metrics]
    states = {}
    for name in ("bulk", "reference"):
        if store_kind.startswith("postgresql"):
            uri = request.getfixturevalue("postgres_server").new_database(f"eq_{name}_{store_kind.replace('-', '_')}")
        else:
            uri = f"sqlite:///{tmp_path / name}.db"
        c = _client(uri)
        rid = c.create_run(c.create_experiment(name)).info.run_id
        w = SqlMetricWriter(c)
        if name == "bulk":
            assert w.enabled and w._direct == store_kind.endswith("upsert")
            for i in range(0, len(points), 500):
                w.log_metrics(rid, points[i:i + 500])
            w.log_metrics(rid, points[:500])  # a resend: must not duplicate
            assert w.enabled
        else:
            for i in range(0, len(metrics), 500):
                c.log_batch(rid, metrics=metrics[i:i + 500])
        states[name] = _store_state(c, rid)
    _assert_same_store(states["bulk"], states["reference"])


def test_an_empty_batch_writes_nothing_and_keeps_the_bulk_path(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """A script run shorter than every listener's interval has no point to store: the
    writer stores nothing, says nothing, and keeps its fast path (an empty executemany made
    it warn "SQL bulk path failed" and fall back to log_batch for the rest of the run)."""
    from radtrack.store.sqlwriter import SqlMetricWriter

    c = _client(f"sqlite:///{tmp_path / 'empty.db'}")
    rid = c.create_run(c.create_experiment("empty")).info.run_id
    w = SqlMetricWriter(c)
    with caplog.at_level("WARNING"):
        w.log_metrics(rid, [])
        w.log_metrics(rid, [("m", 1.0, 1000, 0)])
    assert w.enabled
    assert not [r.getMessage() for r in caplog.records if r.levelname in ("WARNING", "ERROR")]
    assert [(m.key, m.value) for m in c.get_metric_history(rid, "m")] == [("m", 1.0)]


def test_rest_path_stores_what_log_batch_stores(mlflow_server_uri: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Against a real mlflow server over PostgreSQL, the sink's REST writer (JSON log_batch
    bodies built directly, calls in flight together, a resend) stores exactly what plain
    MlflowClient.log_batch calls store: NaN, infinities and the latest-value rule included."""
    from radtrack.store.restwriter import RestMetricWriter

    monkeypatch.setenv("RADTRACK_SHIP_CONCURRENCY", "4")
    metrics = _equivalence_metrics()
    points = [(m.key, m.value, m.timestamp, m.step) for m in metrics]
    c = _client(mlflow_server_uri)
    exp = c.create_experiment("rest-equivalence")
    ref, rid = c.create_run(exp).info.run_id, c.create_run(exp).info.run_id
    for i in range(0, len(metrics), 500):
        c.log_batch(ref, metrics=metrics[i:i + 500])
    w = RestMetricWriter(c)
    assert w.concurrent
    batches = [points[i:i + 400] for i in range(0, len(points), 400)]
    assert w.log_many(rid, batches) == [None] * len(batches)
    assert w.log_many(rid, batches[:2]) == [None, None]  # a resend: must not duplicate
    _assert_same_store(_store_state(c, rid), _store_state(c, ref))


class _FlakyRest:
    """Fails every ``every``-th REST call (before sending anything) to force resends."""

    def __init__(self, writer, every: int):
        self.real, self.every, self.calls = writer.log_metrics, every, 0
        writer.log_metrics = self

    def __call__(self, run_id, points):
        self.calls += 1
        if self.calls % self.every == 0:
            raise ConnectionError("connection reset (test)")
        return self.real(run_id, points)


def test_concurrent_rest_shipping_with_failures_stores_each_sample_once(
        mlflow_server_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several streams shipped with calls in flight together, one call in three failing:
    every sample ends up stored exactly once, and each stream's .shipped count never passes
    a sample that is not stored."""
    monkeypatch.setenv("RADTRACK_SHIP_CONCURRENCY", "4")
    c = _client(mlflow_server_uri)
    rid = c.create_run(c.create_experiment("rest-concurrent")).info.run_id
    root = tmp_path / "spool"
    sink = Sink(c, rid, root, mlflow_server_uri)
    assert sink.rest.concurrent and not sink.writer.enabled
    flaky = _FlakyRest(sink.rest, every=3)
    n, k = 60, 40  # per stream 30 samples (1200 points, 2 calls) between ships
    names = ["smi", "dcgm", "top"]
    rounds = 0
    for i in range(n):
        for name in names:
            sink.feed(name, json.dumps({"type": "sample", "t": 1_700_000_000 + i * 0.1,
                                        "v": {f"{name}/k{j}_pct": float(i * j) for j in range(k)}}))
        if i % 30 == 29:  # ship as the run goes; after each round, check .shipped
            while not sink.ship():
                rounds += 1
                for name in names:
                    shipped = int((root / rid / f"{name}.shipped").read_text() or 0) \
                        if (root / rid / f"{name}.shipped").exists() else 0
                    for key in (f"{name}/k0_pct", f"{name}/k{k - 1}_pct"):
                        steps = {h.step for h in _history(c, rid, key)}
                        assert set(range(shipped)) <= steps, "shipped count ahead of the store"
    assert rounds > 0 and flaky.calls > 6 and sink.failures > 0
    assert sink.pending_count == 0
    for name in names:
        assert (root / rid / f"{name}.shipped").read_text() == str(n)
        for key in (f"{name}/k0_pct", f"{name}/k7_pct", f"{name}/k{k - 1}_pct"):
            j = int(key.rsplit("k", 1)[1].split("_")[0])
            hist = sorted((h.step, h.value) for h in _history(c, rid, key))
            assert hist == [(i, float(i * j)) for i in range(n)], key  # each sample once


def test_a_counter_read_once_stores_no_energy_rather_than_zero() -> None:
    frame = pd.DataFrame({"time": [1.0, 2.0], "step": [0, 1], "smi/gpu0/power_w": [100.0, 100.0],
                          "smi/gpu0/energy_j": [5.0, float("nan")]})
    out = summarize(frame)
    assert "summary/smi/gpu0/energy_j" not in out
    assert out["summary/smi/gpu0/power_w/mean"] == 100.0


def test_sync_names_a_spool_whose_run_was_never_created(store: str) -> None:
    """A launcher stopped before it reached the store: its samples stay, and sync says why."""
    folder = Path(os.environ["RADTRACK_HOME"]) / "spool" / "0123abcd"
    folder.mkdir(parents=True)
    (folder / "top.jsonl").write_text('{"type": "sample", "t": 1.0, "v": {"top/cpu_pct": 5.0}}\n')
    p = run_cli("sync")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "0123abcd: its run was never created" in p.stdout and "0 run(s) stored, 1 left" in p.stdout
    assert (folder / "top.jsonl").exists()


def test_script_values_ship_once_and_a_refused_one_does_not_block_the_rest(store: str, tmp_path: Path) -> None:
    """RADTBenchmark's spooled values (written by radtrack/script/records.py, shipped by
    radtrack/store/scriptlog.py): stored once however often shipping runs, a torn last line
    waits, a param MLflow refuses is named and skipped."""
    from radtrack.script import records
    from radtrack.store import scriptlog

    rid = _new_run(store)
    c = _client(store)
    folder = tmp_path / "script"
    log = records.ScriptLog(folder)
    for step in range(3):
        log.metric(None, "loss", 1.0 / (step + 1), step, timestamp=1_700_000_000_000 + step)
    log.param(None, "lr", "0.1")
    log.param(None, "lr", "0.2")  # MLflow refuses a param logged again with another value
    log.param(None, "batch", "8")
    log.tag(None, "note", "ok")
    (tmp_path / "notes.txt").write_text("hi\n")
    log.artifact(None, str(tmp_path / "notes.txt"), "extra")
    (tmp_path / "notes.txt").unlink()  # the spool kept a copy
    with (folder / records.RECORDS).open("a") as f:
        f.write('{"k": "metric", "run": null, "key": "torn"')  # a writer cut off mid-line
    refused: list[str] = []
    assert scriptlog.ship(c, rid, folder, refused)
    assert scriptlog.ship(c, rid, folder, refused)  # again: nothing twice
    assert len(refused) == 1 and "param lr" in refused[0], refused
    run = c.get_run(rid)
    assert run.data.params == {"lr": "0.1", "batch": "8"} and run.data.tags["note"] == "ok"
    assert sorted((m.step, m.value) for m in c.get_metric_history(rid, "loss")) == [(0, 1.0), (1, 0.5), (2, 1 / 3)]
    assert [a.path for a in c.list_artifacts(rid, "extra")] == ["extra/notes.txt"]
    assert scriptlog.pending(folder)  # the torn line waits for the rest of it
