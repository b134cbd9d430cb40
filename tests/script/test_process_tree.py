"""The whole process tree is the script (docs/mlflow-code.md, "Every process of the script").

Through the real CLI into a real SQLite store that exists already: child scripts started as
new Python processes, ``torch.multiprocessing.spawn`` workers (rank 0 logs; every rank logs)
and ``torchrun``'s ranks (gloo on CPU) make MLflow runs, and each of those runs gets the
telemetry of its own span, the links to the row run and the row's experiment; a run renamed
after its start is named by its final name; a 100-kB param from the sheet, RADTBenchmark and
the script's own ``mlflow.log_param`` is stored cut, whole as an artifact, tagged and said;
a child started without radtrack's hook is named at the end. These are the seven workloads of
one sheet, launched once (each launch costs seconds of MLflow start-up). Then, each in its
own launch: a ``setsid`` grandchild holding the output neither holds the launch nor runs on;
``--max-time`` ends the row and the script's ``with mlflow.start_run()`` run with one status
and no traceback; a crashing script's traceback starts at the script.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support import radtrack_cli
from synthetic import new_store
from test_mlflow_code import SLACK_MS, Store

# the seven-workload sheet (three of them importing torch in several processes) runs in the
# first test's setup: minutes on a loaded 2-core host, past the default 300 s
pytestmark = pytest.mark.timeout(900)
TREE = Path(__file__).parents[1] / "scripts" / "process_tree"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval\n"
BLOB = "y" * 100_000


def existing_store(folder: Path) -> str:
    """A SQLite store made before radtrack runs (the store engineer owns new stores): a copy
    of an empty MLflow store made once per test process (tests/synthetic.py)."""
    return new_store(folder)


def env_for(folder: Path, uri: str) -> dict[str, str]:
    return {"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(folder / ".radtrack"),
            "MLFLOW_DISABLE_TELEMETRY": "true"}


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, subprocess.CompletedProcess[str]]:
    """The process-tree scripts as workloads 1-7 of one sheet (the 100-kB param of workload 2
    in its Params cell): 1 renamed runs, 2 long params, 3 a child without the hook, 4 two
    child scripts, 5 spawned ranks (rank 0 logs), 6 spawned ranks (all log), 7 torchrun."""
    folder = tmp_path_factory.mktemp("light")
    uri = existing_store(folder)
    rows = [("renamed.py", ""), ("long_params.py", f"--blob {BLOB}"), ("unhooked_child.py", ""),
            ("launcher.py", ""), ("spawn_ranks.py", ""), ("spawn_ranks.py", "--all"),
            ("torchrun_job.py", "")]
    sheet = folder / "sheet.csv"
    sheet.write_text(HEADER + "".join(f"tree,{i},,,,-,{TREE / f},top,{params},0.1\n"
                                      for i, (f, params) in enumerate(rows, 1)))
    proc = radtrack_cli(str(sheet), cwd=folder, env=env_for(folder, uri), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Store(uri), proc


def row_of(s: Store, workload: int = 1) -> Any:
    return s.named(f"tree-{workload} A")


def bound_runs(s: Store, row: Any) -> list[Any]:
    return [r for r in s.runs if r.data.tags.get("radtrack.row_run") == row.info.run_id]


def assert_bound(s: Store, run: Any, row: Any) -> None:
    """Its span's series, summaries, traces and both links, in the row's experiment."""
    hist = s.system(run, "system/top/proc/cpu_pct")
    assert hist, f"{run.info.run_name}: no system/ series"
    assert min(m.timestamp for m in hist) >= run.info.start_time
    assert max(m.timestamp for m in hist) <= run.info.end_time + SLACK_MS
    assert run.data.metrics["summary/duration_s"] > 0
    assert "summary/top/proc/cpu_pct/mean" in run.data.metrics
    files = {a.path for a in s.c.list_artifacts(run.info.run_id, "telemetry")}
    assert "telemetry/top.parquet" in files
    assert run.data.tags["radtrack.role"] == "script"
    assert run.info.run_id in row.data.tags["radtrack.script_runs"].split(",")
    assert s.experiment(run) == "tree"


def test_child_scripts_runs_are_bound_like_the_scripts_own(light: tuple[Store, Any]) -> None:
    s, proc = light
    row = row_of(s, 4)
    runs = {r.info.run_name: r for r in bound_runs(s, row)}
    assert set(runs) == {"child-0", "child-1"}, proc.stderr[-2000:]
    for run in runs.values():
        assert run.info.status == "FINISHED"
        assert_bound(s, run, row)
        assert [m.value for m in s.c.get_metric_history(run.info.run_id, "loss")] == [1, 0.5, 1 / 3, 0.25]
    # each child's series is of its own span: the second child's starts after the first ended
    assert runs["child-1"].info.start_time >= runs["child-0"].info.end_time
    # no run lands in MLflow's Default experiment (but workload 3's child, which by design
    # runs without radtrack's hook)
    assert "Default" not in {s.experiment(r) for r in s.runs if r.info.run_name != "lost-child"}
    assert "telemetry bound to the script's run(s): child-0, child-1" in proc.stderr


def test_spawned_rank_zero_gets_the_rows_telemetry(light: tuple[Store, Any]) -> None:
    s, _ = light
    row = row_of(s, 5)
    (run,) = bound_runs(s, row)
    assert run.info.run_name == "spawn-rank0" and run.data.tags["radtrack.rank"] == "0"
    assert_bound(s, run, row)
    assert s.c.get_metric_history(run.info.run_id, "sum")


def test_every_spawned_rank_that_logs_gets_its_own_run_bound(light: tuple[Store, Any]) -> None:
    s, _ = light
    row = row_of(s, 6)
    runs = {r.data.tags["radtrack.rank"]: r for r in bound_runs(s, row)}
    assert set(runs) == {"0", "1"}
    for rank, run in runs.items():
        assert run.info.run_name == f"spawn-rank{rank}"
        assert_bound(s, run, row)


def test_torchrun_rank_zero_run_is_bound(light: tuple[Store, Any]) -> None:
    s, _ = light
    row = row_of(s, 7)
    (run,) = bound_runs(s, row)
    assert run.info.run_name == "torchrun-rank0" and run.data.tags["radtrack.rank"] == "0"
    assert_bound(s, run, row)


def test_renamed_runs_are_named_by_their_final_name(light: tuple[Store, Any]) -> None:
    s, proc = light
    row = row_of(s, 1)
    assert {r.info.run_name for r in bound_runs(s, row)} == {"renamed-by-tag", "renamed-by-update"}
    assert "telemetry bound to the script's run(s): renamed-by-tag, renamed-by-update" in proc.stderr
    assert "run(s): tmp" not in proc.stderr


def test_a_100kb_param_is_cut_kept_whole_tagged_and_said_on_every_path(light: tuple[Store, Any],
                                                                         tmp_path: Path) -> None:
    s, proc = light
    row = row_of(s, 2)
    (own,) = bound_runs(s, row)
    cases = [(row, "blob", BLOB), (row, "bench_long", "b" * 100_000), (own, "own_long", "o" * 100_000)]
    for run, key, whole in cases:
        assert run.data.params[key] == whole[:6000], key
        note = run.data.tags[f"radtrack.param_cut.{key}"]
        assert "100000 characters" in note and f"params/{key}.txt" in note
        got = Path(s.c.download_artifacts(run.info.run_id, f"params/{key}.txt", str(tmp_path)))
        assert got.read_text() == whole, key
    assert row.data.params["bench_short"] == "ok" and own.data.params["own_short"] == "fine"
    lines = [ln for ln in proc.stderr.splitlines() if "longer than MLflow's 6000" in ln]
    assert len(lines) == 1, lines
    for key in ("blob", "bench_long", "own_long", "command"):
        assert f"{key} (" in lines[0], (key, lines[0])


def test_a_child_without_the_hook_is_named_at_the_end(light: tuple[Store, Any]) -> None:
    s, proc = light
    row = row_of(s, 3)
    lost = s.named("lost-child")
    assert "radtrack.row_run" not in lost.data.tags
    lines = [ln for ln in proc.stderr.splitlines() if "got no telemetry and no link" in ln]
    assert len(lines) == 1 and lost.info.run_id in lines[0] and "from child.py" in lines[0]
    assert row.info.run_id in lines[0]
    # the other rows' runs are not named: each was recorded
    for other in ("own-long", "renamed", "child-", "spawn-rank", "torchrun-rank"):
        assert other not in lines[0], (other, lines[0])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_setsid_grandchild_neither_holds_the_launch_nor_runs_on(tmp_path: Path) -> None:
    uri = existing_store(tmp_path)
    t0 = time.monotonic()
    proc = radtrack_cli("-l", "none", str(TREE / "setsid_grandchild.py"), cwd=tmp_path,
                        env=env_for(tmp_path, uri), timeout=120)
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr[-2000:]
    pid = int(next(ln for ln in proc.stdout.splitlines() if ln.startswith("grandchild")).split()[1])
    (line,) = [ln for ln in proc.stderr.splitlines() if "outside its process group" in ln]
    assert f"pid {pid} (sleep 120)" in line and "stopped with the run" in line
    assert not _alive(pid)
    assert "FINISHED" in proc.stderr
    # the two 10-s output joins are gone: the drain waits 1 s, stops the grandchild, reads on
    launch_end = [ln for ln in proc.stderr.splitlines() if "FINISHED (exit 0" in ln]
    assert launch_end and took < 60, took


def test_max_time_ends_row_and_script_run_alike_without_a_traceback(tmp_path: Path) -> None:
    uri = existing_store(tmp_path)
    proc = radtrack_cli("-e", "mt", "-l", "top", "--interval", "0.1", "--max-time", "0.4",
                        str(TREE / "stopped_in_run.py"), cwd=tmp_path, env=env_for(tmp_path, uri),
                        timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr, proc.stderr
    s = Store(uri)
    row, run = s.named("mt-1 A"), s.named("until-stopped")
    assert row.info.status == "FINISHED" and row.data.tags["radtrack.stopped_by"] == "max_time"
    assert run.info.status == "FINISHED" and run.data.tags["radtrack.stopped_by"] == "max_time"
    assert run.data.tags["radtrack.row_run"] == row.info.run_id
    assert s.c.get_metric_history(run.info.run_id, "step")


def test_a_crashing_scripts_traceback_starts_at_the_script(tmp_path: Path) -> None:
    uri = existing_store(tmp_path)
    proc = radtrack_cli("-l", "none", str(TREE / "crash.py"), cwd=tmp_path,
                        env=env_for(tmp_path, uri), timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    start = lines.index("Traceback (most recent call last):")
    frames = [ln.strip() for ln in lines[start + 1:] if ln.strip().startswith("File ")]
    assert frames and all("crash.py" in f for f in frames), frames
    assert frames[0].endswith("line 12, in <module>") and len(frames) == 3
    assert "ValueError: boom from the script" in proc.stderr
    assert "FAILED (exit 1" in proc.stderr
