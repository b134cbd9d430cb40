"""End-to-end: ``python -m radtrack script.py`` into a real temporary SQLite MLflow store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from support import REPO, radtrack_cli

SCRIPTS = Path(__file__).parent / "scripts"


def _runs(uri: str, experiment: str = "Default"):
    from mlflow import MlflowClient

    c = MlflowClient(uri)
    exp = c.get_experiment_by_name(experiment)
    assert exp is not None, f"experiment {experiment} not created"
    runs = c.search_runs([exp.experiment_id])
    rows = [r for r in runs if r.data.tags.get("radtrack.role") == "row"]
    parents = [r for r in runs if r.data.tags.get("radtrack.role") == "workload"]
    return c, rows, parents


def test_finished_run_params_tags_metrics_log(store: str, tmp_path: Path) -> None:
    p = radtrack_cli("-e", "core", "-l", "top", "--interval", "0.2", str(SCRIPTS / "train_ok.py"),
                     "pos one", "--batch-size", "128", "--lr=0.5", "--fast")
    assert p.returncode == 0, p.stderr
    assert "hello from train_ok batch=128 name=pos one" in p.stdout  # quoting preserved
    c, rows, parents = _runs(store, "core")
    assert len(rows) == 1 and len(parents) == 1
    run = rows[0]
    assert run.info.status == "FINISHED"
    assert run.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
    assert parents[0].info.status == "FINISHED"
    params = run.data.params
    assert params["batch-size"] == "128" and params["lr"] == "0.5" and params["fast"] == "true"
    assert params["args"] == "'pos one'"
    assert params["script"].endswith("train_ok.py")
    assert "--batch-size 128" in params["command"]
    assert params["listeners"] == "top" and params["interval"] == "0.2"
    tags = run.data.tags
    assert tags["radtrack.exit_code"] == "0"
    assert tags["radtrack.workload"] == "1" and tags["radtrack.letter"] == "A"
    assert tags["radtrack.version"] and tags["radtrack.hostname"]
    assert tags["radtrack.listener.top"] == "ok"
    assert tags["custom"] == "yes"
    m = run.data.metrics
    assert m["loss"] == pytest.approx(1 / 3)
    assert m["throughput_samples_per_s"] == 123.0
    assert m["plain_mlflow_metric"] == 7.0
    assert m["summary/duration_s"] > 0
    assert "summary/top/cpu_pct/mean" in m
    hist = c.get_metric_history(run.info.run_id, "loss")
    assert sorted(h.step for h in hist) == [0, 1, 2]
    arts = {a.path for a in c.list_artifacts(run.info.run_id)}
    assert {"logs", "telemetry", "environment"} <= arts
    log = Path(c.download_artifacts(run.info.run_id, "logs/output.log", str(tmp_path)))
    text = log.read_text()
    assert "hello from train_ok" in text and "to stderr" in text and "done" in text
    env_files = {a.path for a in c.list_artifacts(run.info.run_id, "environment")}
    assert "environment/pip-freeze.txt" in env_files and "environment/platform.json" in env_files
    # a second launch in the same experiment takes the next workload number
    p2 = radtrack_cli("-e", "core", "-l", "none", str(SCRIPTS / "exit_code.py"), "0")
    assert p2.returncode == 0, p2.stderr
    _, rows, _ = _runs(store, "core")
    assert sorted(r.data.tags["radtrack.workload"] for r in rows) == ["1", "2"]


def test_failed_run(store: str) -> None:
    p = radtrack_cli("-l", "none", "--run-name", "boom", str(SCRIPTS / "exit_code.py"), "3")
    assert p.returncode == 1
    assert "about to fail" in p.stdout
    _, rows, parents = _runs(store)
    assert rows[0].info.status == "FAILED" and parents[0].info.status == "FAILED"
    assert rows[0].data.tags["radtrack.exit_code"] == "3"
    assert rows[0].info.run_name == "boom"


def test_max_epoch_stops_cleanly(store: str) -> None:
    p = radtrack_cli("-l", "none", "--max-epoch", "5", str(SCRIPTS / "epochs_forever.py"), timeout=120)
    assert p.returncode == 0, p.stderr
    c, rows, _ = _runs(store)
    run = rows[0]
    assert run.info.status == "FINISHED"
    assert run.data.tags["radtrack.stopped_by"] == "max_epoch"
    assert run.data.tags["radtrack.exit_code"] == "0"
    steps = sorted(h.step for h in c.get_metric_history(run.info.run_id, "acc"))
    assert steps == [0, 1, 2, 3, 4, 5]


def test_max_time_stops_run_as_finished(store: str) -> None:
    p = radtrack_cli("-l", "none", "--max-time", "0.05", "--grace", "2",
                     str(SCRIPTS / "busy.py"), "60", timeout=120)
    assert p.returncode == 0, p.stderr
    _, rows, _ = _runs(store)
    assert rows[0].info.status == "FINISHED"
    assert rows[0].data.tags["radtrack.stopped_by"] == "max_time"
    assert 2.5 < rows[0].data.metrics["summary/duration_s"] < 20


def test_manual_mode_times_only_the_context(store: str) -> None:
    p = radtrack_cli("-l", "top", "--interval", "0.1", "--manual", str(SCRIPTS / "manual.py"))
    assert p.returncode == 0, p.stderr
    c, rows, _ = _runs(store)
    run = rows[0]
    dur = run.data.metrics["summary/duration_s"]
    assert 1.3 < dur < 3.0, dur  # 1.5 s inside the context, not the 4.5 s of the script
    hist = c.get_metric_history(run.info.run_id, "system/top/cpu_pct")
    times = sorted(h.timestamp for h in hist)
    assert times and (times[-1] - times[0]) / 1000 < 3.0


def test_noop_outside_radtrack(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RADTRACK_", "MLFLOW_RUN"))}
    p = subprocess.run([sys.executable, str(SCRIPTS / "train_ok.py")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "done" in p.stdout
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "mlruns").exists()
    code = ("from radtrack import RADTBenchmark\n"
            "with RADTBenchmark() as r:\n"
            "    assert r.log_metric('a', 1.0, 0) is None\n"
            "    assert r.log_param('p', 1) is None and r.log_artifact('x') is None\n"
            "import sys; assert 'mlflow' not in sys.modules\n")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("args,expect", [
    (["missing.py"], "missing.py: no such file"),
    (["--bogus", "x.py"], "unrecognized arguments"),
    (["-l", "smi+nope", "x.py"], "unknown listener(s) nope"),
    (["--tracking-uri", "http://no-such-host.invalid:9", "SCRIPT"], "unreachable"),
    (["--interval", "0", "SCRIPT"], "--interval must be > 0"),
    (["-l", "top@fast", "SCRIPT"], "listener 'top@fast': the interval after '@' must be a number of seconds > 0"),
])
def test_bad_input_one_line_exit_2(store: str, args: list[str], expect: str) -> None:
    args = [str(SCRIPTS / "exit_code.py") if a == "SCRIPT" else a for a in args]
    t0 = time.monotonic()
    p = radtrack_cli(*args)
    assert p.returncode == 2, p.stderr
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expect in lines[0], p.stderr
    assert time.monotonic() - t0 < 30
    assert not Path("mlflow.db").exists() or "unreachable" not in expect


def test_a_listener_with_its_own_interval(store: str) -> None:
    """-l top@0.5+iostat --interval 0.1: top samples every 0.5 s, iostat every 0.1 s."""
    p = radtrack_cli("-e", "paces", "-l", "top@0.5+iostat", "--interval", "0.1", str(SCRIPTS / "busy.py"), "3")
    assert p.returncode == 0, p.stderr
    c, rows, _ = _runs(store, "paces")
    run = rows[0]
    assert run.data.params["listeners"] == "top@0.5+iostat"
    assert run.data.tags["radtrack.listener.top.interval_s"] == "0.5"
    assert run.data.tags["radtrack.listener.iostat.interval_s"] == "0.1"

    def median_gap(key: str) -> float:
        ts = sorted(h.timestamp for h in c.get_metric_history(run.info.run_id, key))
        gaps = sorted(b - a for a, b in zip(ts, ts[1:], strict=False))
        return gaps[len(gaps) // 2] / 1000

    assert median_gap("system/top/cpu_pct") == pytest.approx(0.5, abs=0.05)
    assert median_gap("system/iostat/net/recv_bytes_per_s") == pytest.approx(0.1, abs=0.03)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_ctrl_c_kills_and_leaves_no_process(store: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    launcher = subprocess.Popen([sys.executable, "-m", "radtrack", "-l", "top", "--interval", "0.2",
                                 "--grace", "2", str(SCRIPTS / "sleeper.py"), str(pidfile)],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    deadline = time.monotonic() + 90
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "script never started"
        assert launcher.poll() is None, launcher.communicate()
        time.sleep(0.1)
    time.sleep(1.0)
    tree = [p.pid for p in psutil.Process(launcher.pid).children(recursive=True)]
    script_pid, child_pid = map(int, pidfile.read_text().split())
    assert script_pid in tree and child_pid in tree
    launcher.send_signal(signal.SIGINT)
    out, err = launcher.communicate(timeout=60)
    assert launcher.returncode == 130, err
    time.sleep(0.5)
    survivors = [pid for pid in tree if _alive(pid)]
    assert survivors == [], f"left running: {survivors}"
    _, rows, parents = _runs(store)
    assert rows[0].info.status == "KILLED" and parents[0].info.status == "KILLED"
    assert rows[0].data.tags["radtrack.stopped_by"] == "signal"


def test_console_script_and_module_same(store: str) -> None:
    exe = Path(sys.executable).with_name("radtrack")
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    a = subprocess.run([str(exe), "--help"], capture_output=True, text=True)
    b = radtrack_cli("--help")
    assert a.returncode == b.returncode == 0
    assert a.stdout.replace("radtrack", "") == b.stdout.replace("radtrack", "")


def test_repo_layout_installs_namespaced_packages(tmp_path: Path) -> None:
    code = ("import importlib.util as u\n"
            "assert u.find_spec('radtrack.listeners') and u.find_spec('radtrack.frontend')\n"
            "assert u.find_spec('listeners') is None and u.find_spec('frontend') is None\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # import names are paths: the listeners and the page live under radtrack/
    assert (REPO / "radtrack" / "listeners" / "base.py").exists()
    assert not (REPO / "listeners").exists() and not (REPO / "frontend").exists()
