"""The SLURM executor end to end: ``radtrack sheet.csv --executor slurm`` as a subprocess
against a real single-node SLURM (tests/slurm_cluster.py: slurmctld + slurmd + munged on
127.0.0.1, two fake GPUs) into a real store: an ``mlflow server`` over PostgreSQL
(tests/servers.py) or SQLite on a path declared shared (``--shared-fs``)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from slurm_cluster import wait_for
from support import radtrack_cli, run_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"


def _sheet(tmp_path: Path, text: str, scripts: tuple[str, ...] = ("show_env.py",)) -> Path:
    for name in scripts:
        shutil.copy(SCRIPTS / name, tmp_path / name)
    path = tmp_path / "sheet.csv"
    path.write_text(text)
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return [{k.strip(): (v or "").strip() for k, v in r.items()}
            for r in csv.DictReader(lines, skipinitialspace=True)]


def _env(cluster, uri: str, tmp_path: Path) -> dict[str, str]:
    return {**cluster.env, "MLFLOW_TRACKING_URI": uri,
            "RADTRACK_JOB_HOME": str(tmp_path / "jobhome"),
            "RADTRACK_HOME": str(tmp_path / ".radtrack")}


def _spooled_lines(spool: Path, listener: str) -> int:
    """Lines the listener wrote to the spool (its hello, then its samples)."""
    return sum(len(f.read_bytes().splitlines()) for f in spool.glob(f"*/{listener}.jsonl"))


def _runs(uri: str, experiment: str):
    from mlflow import MlflowClient

    c = MlflowClient(uri)
    exp = c.get_experiment_by_name(experiment)
    return c, (c.search_runs([exp.experiment_id]) if exp else [])


# top reads every 0.2 s on its rows: its first CPU % falls inside the 1.5-s script's span
# even when it starts late on a loaded host (the solo row had no top/cpu_pct in CI at 1 s)
THREE = """\
Experiment, Workload, Status, Run, Devices, Collocation, File, Listeners, Params, Partition, Job, Interval
slurmy, 1, , , 0, -, show_env.py, top, pair-a, , , 0.2
slurmy, 1, , , 1, -, show_env.py, none, pair-b, , ,
slurmy, 2, , , , -, show_env.py, top, solo, other, , 0.2
slurmy, 3, , , 0, -, show_env.py, none, gpu-solo, , ,
"""


def test_three_workloads_into_mlflow_server_over_postgres(slurm_cluster, mlflow_server_uri: str,
                                                          tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, THREE)
    env = _env(slurm_cluster, mlflow_server_uri, tmp_path)
    before = set(slurm_cluster.jobs())
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--grace", "2", env=env, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = _rows(sheet)
    assert [r["Status"] for r in rows] == ["FINISHED slurmy-1 A", "FINISHED slurmy-1 B",
                                           "FINISHED slurmy-2 A", "FINISHED slurmy-3 A"], p.stderr
    jobs = [r["Job"].split() for r in rows]
    assert all(state == "COMPLETED" for _, state in jobs), p.stderr
    assert jobs[0][0] == jobs[1][0] != jobs[2][0] != jobs[3][0]  # one job per workload
    assert set(slurm_cluster.jobs()) - before == {j for j, _ in jobs}
    # progress lines with job ids and states
    assert f"slurmy-1 job {jobs[0][0]} PENDING" in p.stderr or \
        f"slurmy-1 job {jobs[0][0]} RUNNING" in p.stderr
    assert f"slurmy-1 job {jobs[0][0]} COMPLETED" in p.stderr, p.stderr

    # job resources: --gres=gpu:N from the distinct devices, Partition from the sheet
    def job_field(job: str, fmt: str) -> str:
        return slurm_cluster.run("squeue", "-h", "--states=all", "-j", job, "-o", fmt).stdout.strip()

    assert "gpu:2" in job_field(jobs[0][0], "%b")
    assert "gpu:1" in job_field(jobs[3][0], "%b")
    assert job_field(jobs[2][0], "%P") == "other"
    assert job_field(jobs[0][0], "%P") == "debug"

    c, runs = _runs(mlflow_server_uri, "slurmy")
    by_name = {r.info.run_name: r for r in runs if r.data.tags["radtrack.role"] == "row"}
    assert set(by_name) == {"slurmy-1 A", "slurmy-1 B", "slurmy-2 A", "slurmy-3 A"}
    a, b = by_name["slurmy-1 A"], by_name["slurmy-1 B"]
    assert a.data.tags["mlflow.parentRunId"] == b.data.tags["mlflow.parentRunId"]  # co-located
    assert a.data.tags["radtrack.slurm.job_id"] == jobs[0][0]
    assert rows[0]["Run"] == a.info.run_id
    # Devices 0 and 1 of the allocation are the job's two GPUs, one per row
    assert {a.data.tags["radtrack.devices"], b.data.tags["radtrack.devices"]} == {"0", "1"}
    for r in by_name.values():
        assert r.info.status == "FINISHED"
    solo = by_name["slurmy-2 A"]
    assert any(k.endswith("top/cpu_pct") for k in solo.data.metrics), solo.data.metrics
    artifacts = {f.path for f in c.list_artifacts(solo.info.run_id, "telemetry")}
    assert "telemetry/top.parquet" in artifacts
    log = Path(c.download_artifacts(a.info.run_id, "logs/output.log", str(tmp_path)))
    assert "argv [\"pair-a\"]" in log.read_text()


def test_detach_then_status_on_shared_sqlite(slurm_cluster, tmp_path: Path) -> None:
    """Two workloads submitted with --detach, one of them named and given arguments to break
    out of a shell (none of it reaches one: the experiment name arrives verbatim, the script
    gets its arguments as written, --sbatch-arg's text is SLURM's comment as written)."""
    marker = tmp_path / "pwned"
    evil_exp = f'x"; touch {marker}; #$(touch {marker})'
    sheet = _sheet(tmp_path, (
        "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Job\n"
        "detached,1,,,,-,show_env.py,none,x,\n"
        f"\"{evil_exp.replace(chr(34), chr(34) * 2)}\",1,,,,-,show_env.py,none,"
        f"\"'$(touch {marker})' '`touch {marker}`' '; touch {marker}' \"\"x y\"\"\",\n"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = _env(slurm_cluster, uri, tmp_path)
    comment = f"--sbatch-arg=--comment=$(touch {marker})"
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--shared-fs", "--detach", comment,
                     env=env)
    assert p.returncode == 0, p.stderr
    row, evil = _rows(sheet)
    assert row["Status"] == "PENDING detached-1 A"  # back before the job ran
    job, evil_job = row["Job"].split()[0], evil["Job"].split()[0]
    assert "radtrack status" in p.stderr

    # SLURM says when the jobs ended (squeue, cheap); then one `radtrack status` finds it so
    wait_for(lambda: all(slurm_cluster.state(j) not in ("PENDING", "RUNNING", "COMPLETING", "")
                         for j in (job, evil_job)), 120, "the jobs to end")
    assert slurm_cluster.state(job) == slurm_cluster.state(evil_job) == "COMPLETED"
    s = radtrack_cli("status", str(sheet), env=env)
    assert s.returncode == 0 and f"detached-1: job {job} COMPLETED" in s.stdout, s.stdout + s.stderr
    assert f"{evil_exp}-1: job {evil_job} COMPLETED" in s.stdout, s.stdout
    row, evil = _rows(sheet)
    assert row["Status"] == "FINISHED detached-1 A"
    assert row["Job"] == f"{job} COMPLETED" and row["Run"]
    assert evil["Status"] == f"FINISHED {evil_exp}-1 A" and evil["Job"] == f"{evil_job} COMPLETED"

    assert not marker.exists()
    c, runs = _runs(uri, evil_exp)  # the experiment name arrived verbatim
    child = next(r for r in runs if r.data.tags["radtrack.role"] == "row")
    assert child.info.run_id == evil["Run"]
    log = Path(c.download_artifacts(child.info.run_id, "logs/output.log", str(tmp_path)))
    expected = json.dumps([f"$(touch {marker})", f"`touch {marker}`", f"; touch {marker}", "x y"])
    assert f"argv {expected}" in log.read_text()
    for j in (job, evil_job):
        got = slurm_cluster.run("squeue", "-h", "--states=all", "-j", j, "-o", "%k").stdout
        assert got.strip() == f"$(touch {marker})"

    # resume: a FINISHED workload is not submitted again
    again = radtrack_cli(str(sheet), "--executor", "slurm", "--shared-fs", comment, env=env)
    assert again.returncode == 0 and again.stderr.count("FINISHED, skipped") == 2, again.stderr
    assert [r["Job"] for r in _rows(sheet)] == [f"{job} COMPLETED", f"{evil_job} COMPLETED"]
    assert not marker.exists()


WAITER = ("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Job\n"
          "{exp},1,,,,-,wait_for_file.py,top,{pid} {release},\n")


def test_ctrl_c_cancels_the_jobs(slurm_cluster, tmp_path: Path) -> None:
    pid_file, release = tmp_path / "pid", tmp_path / "release"
    sheet = _sheet(tmp_path, WAITER.format(exp="interrupted", pid=pid_file, release=release),
                   ("wait_for_file.py",))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {**os.environ, **_env(slurm_cluster, uri, tmp_path), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "radtrack", str(sheet), "--executor", "slurm",
                             "--shared-fs", "--grace", "2"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for(pid_file.exists, 120, "the job's workload to start")
        # the script starts before its run exists (radtrack/run/record.py): a
        # cancel before that leaves no run to look at
        wait_for(lambda: any((tmp_path / "jobhome" / "spool").glob("*/meta.json")),
                 120, "the job's run to be created")
        workload_pid = int(pid_file.read_text())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "cancelling job(s)" in err
    row = _rows(sheet)[0]
    job = row["Job"].split()[0]
    assert row["Job"] == f"{job} CANCELLED"
    assert slurm_cluster.state(job) == "CANCELLED"
    assert row["Status"].startswith("KILLED interrupted-1 A")
    _, runs = _runs(uri, "interrupted")
    child = next(r for r in runs if r.data.tags["radtrack.role"] == "row")
    assert child.info.status == "KILLED"
    assert child.data.tags["radtrack.slurm.state"] == "CANCELLED"
    assert child.data.tags["radtrack.stopped_by"] == "slurm:CANCELLED"
    wait_for(lambda: not Path(f"/proc/{workload_pid}").exists(), 30, "the workload to end")


def test_radtrack_cancel_scancels_a_detached_sheets_jobs(slurm_cluster, tmp_path: Path) -> None:
    """``radtrack cancel SHEET`` through the SLURM executor's side of the contract: the
    sheet's live jobs scancelled, their end written by the next ``radtrack status``."""
    pid_file, release = tmp_path / "pid", tmp_path / "release"
    sheet = _sheet(tmp_path, WAITER.format(exp="cancelled", pid=pid_file, release=release),
                   ("wait_for_file.py",))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = _env(slurm_cluster, uri, tmp_path)
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--shared-fs", "--detach",
                     "--grace", "2", env=env)
    assert p.returncode == 0, p.stderr
    job = _rows(sheet)[0]["Job"].split()[0]
    wait_for(pid_file.exists, 120, "the job's workload to start")
    c = run_cli("cancel", str(sheet), env=env)
    assert c.returncode == 0, c.stderr
    assert f"cancelled job(s) {job} (scancel)" in c.stdout
    wait_for(lambda: slurm_cluster.state(job) not in ("PENDING", "RUNNING", "COMPLETING", ""),
             120, "the cancelled job to end")
    assert slurm_cluster.state(job) == "CANCELLED"
    s = run_cli("status", str(sheet), env=env)
    assert s.returncode == 1 and f"cancelled-1: job {job} CANCELLED" in s.stdout, s.stderr
    assert _rows(sheet)[0]["Job"] == f"{job} CANCELLED"
    again = run_cli("cancel", str(sheet), env=env)  # nothing of it is live any more
    assert again.returncode == 0 and "is queued or running" in again.stdout, again.stderr


def test_launcher_killed_on_the_node_leaves_its_spool_for_status(slurm_cluster,
                                                                 tmp_path: Path) -> None:
    """The job's launcher dies at once (SIGKILL, as from the OOM killer): the run stays
    RUNNING until `radtrack status` closes it KILLED; status names the node's spool and the
    sync command while this host cannot see it, and ships it, exactly once, when it can."""
    pid_file, release = tmp_path / "pid", tmp_path / "release"
    sheet = _sheet(tmp_path, WAITER.format(exp="nodespool", pid=pid_file, release=release),
                   ("wait_for_file.py",))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = _env(slurm_cluster, uri, tmp_path)
    assert radtrack_cli(str(sheet), "--executor", "slurm", "--shared-fs", "--detach",
                        env=env).returncode == 0
    job = _rows(sheet)[0]["Job"].split()[0]
    wait_for(pid_file.exists, 120, "the job's workload to start")
    home = tmp_path / "jobhome"
    spool = home / "spool"
    # the workload starts before its run exists (radtrack/run/record.py): wait for the run
    wait_for(lambda: any(spool.glob("*/meta.json")), 120, "the job's run to be created")
    wait_for(lambda: _spooled_lines(spool, "top") >= 4, 60, "a few top samples in the spool")
    workload_pid = int(pid_file.read_text())
    launcher = int(Path(f"/proc/{workload_pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(launcher, signal.SIGKILL)
    release.write_text("go")  # the workload (its own process group) outlives its launcher
    wait_for(lambda: slurm_cluster.state(job) not in ("RUNNING", "COMPLETING", ""), 60,
              "the job to end")
    left = [d for d in spool.iterdir() if (d / "meta.json").exists()]
    assert len(left) == 1, list(spool.iterdir())
    run_id = json.loads((left[0] / "meta.json").read_text())["run_id"]
    # the node's folder out of this host's sight (node-local /tmp): status names it
    hidden = tmp_path / "elsewhere"
    home.rename(hidden)
    s = radtrack_cli("status", str(sheet), env=env)
    assert s.returncode == 1 and f"job {job} FAILED" in s.stdout, s.stdout + s.stderr
    assert f"runs {run_id} were left RUNNING" in s.stdout, s.stdout
    assert f"'RADTRACK_HOME={home} radtrack sync' on node " in s.stdout, s.stdout
    assert _rows(sheet)[0]["Status"].startswith("KILLED nodespool-1 A")
    c, _ = _runs(uri, "nodespool")
    assert c.get_run(run_id).info.status == "KILLED"
    def traces() -> set[str]:
        return {f.path for f in c.list_artifacts(run_id, "telemetry")}

    assert "telemetry/top.parquet" not in traces()  # the trace is written when a spool closes
    # in sight again (a shared RADTRACK_JOB_HOME): the next status ships it
    hidden.rename(home)
    s = radtrack_cli("status", str(sheet), env=env)
    assert s.returncode == 1 and f"finished run(s) {run_id} from what the killed launcher " \
        f"left in {home}/spool (samples, telemetry, output log)" in s.stdout, s.stdout
    assert not [d for d in spool.iterdir() if d.is_dir()]
    run = c.get_run(run_id)
    assert run.info.status == "KILLED"
    assert run.data.tags["radtrack.stopped_by"] == "slurm:FAILED"
    assert "telemetry/top.parquet" in traces()
    history = c.get_metric_history(run_id, "system/top/cpu_pct")
    assert history, sorted(run.data.metrics)
    steps = [m.step for m in history]
    assert len(steps) == len(set(steps))  # stored exactly once
    log = Path(c.download_artifacts(run_id, "logs/output.log", str(tmp_path / "log")))
    assert "waiting for" in log.read_text()
    s = radtrack_cli("status", str(sheet), env=env)
    assert "left RUNNING" not in s.stdout and "finished run(s)" not in s.stdout
    node_env = {**env, "RADTRACK_HOME": str(home)}
    again = radtrack_cli("sync", env=node_env)
    assert again.returncode == 0 and "0 run(s) stored" in again.stdout or \
        "nothing to do" in again.stdout
    assert len(c.get_metric_history(run_id, history[0].key)) == len(history)


def test_bad_slurm_columns_reported_before_anything_is_submitted(slurm_cluster,
                                                                  tmp_path: Path) -> None:
    text = """\
Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Partition,TimeLimit,QoS,Constraint
bad,1,,,0,-,show_env.py,none,,a b,,,
bad,2,,,,-,show_env.py,none,,,90 min,,
bad,3,,,,-,show_env.py,none,,,,x;y,
bad,4,,,,-,show_env.py,none,,,,,a100 && rm
bad,5,,,0,1g.10gb,show_env.py,none,,,,,
bad,6,,,1,-,show_env.py,none,,,,,
bad,7,,,0,-,show_env.py,none,,debug,,,
bad,7,,,0,-,show_env.py,none,,other,,,
bad,8,,,GPU-0123abcd-0000,-,show_env.py,none,,,,,
"""
    sheet = _sheet(tmp_path, text)
    env = _env(slurm_cluster, f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path)
    before = set(slurm_cluster.jobs())
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--shared-fs", env=env)
    assert p.returncode == 2
    err = p.stderr
    for line, column in ((2, "Partition"), (3, "TimeLimit"), (4, "QoS"), (5, "Constraint")):
        assert f"{sheet}:{line}: column {column}: " in err, err
    # the SLURM checks run once the columns themselves parse
    fixed = text.replace("a b", "").replace("90 min", "").replace("x;y", "") \
        .replace("a100 && rm", "")
    sheet.write_text(fixed)
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--shared-fs", env=env)
    assert p.returncode == 2
    err = p.stderr
    assert f"{sheet}:6: column Collocation: MIG profile 1g.10gb: under SLURM" in err, err
    assert f"{sheet}:7: column Devices: workload bad-6 uses device(s) 1" in err
    assert f"{sheet}:9: column Partition: workload bad-7 is one SLURM job" in err
    assert f"{sheet}:10: column Devices: GPU-0123abcd-0000: under SLURM" in err
    assert set(slurm_cluster.jobs()) == before
    assert not (tmp_path / ".sheet.csv.slurm").exists()


def test_local_sqlite_store_is_refused_without_shared_fs(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, "Experiment,Workload,Status,Run,Devices,Collocation,File,"
                             "Listeners,Params\nrefused,1,,,,-,show_env.py,none,\n")
    for uri in (f"sqlite:///{tmp_path / 'mlflow.db'}", str(tmp_path / "mlruns")):
        p = radtrack_cli(str(sheet), "--executor", "slurm", "--tracking-uri", uri)
        assert p.returncode == 2
        assert f"tracking store {uri} is a file on this machine" in p.stderr
        assert "http://" in p.stderr and "postgresql://" in p.stderr and "--shared-fs" in p.stderr
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / ".sheet.csv.slurm").exists()
    p = radtrack_cli(str(sheet), "--executor", "nomad")
    assert p.returncode == 2 and "unknown executor 'nomad'" in p.stderr
    p = radtrack_cli(str(sheet), "--detach")
    assert p.returncode == 2 and "--detach only apply with --executor slurm" in p.stderr


def test_dry_run_shows_sbatch_commands(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, THREE)
    p = radtrack_cli(str(sheet), "--dry-run", "--time-limit", "1:00:00", "--account", "lab",
                     "--sbatch-arg=--mem=4G", env={"RADTRACK_EXECUTOR": "slurm",
                                                   "MLFLOW_TRACKING_URI": "http://127.0.0.1:9"})
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "SLURM jobs (one per workload):" in out
    line1 = next(x for x in out.splitlines() if x.strip().startswith("slurmy-1:"))
    assert "--gres=gpu:2" in line1 and "--time=1:00:00" in line1 and "--account=lab" in line1
    assert line1.rstrip().endswith(".py") and "--mem=4G" in line1
    line2 = next(x for x in out.splitlines() if x.strip().startswith("slurmy-2:"))
    assert "--gres" not in line2 and "--partition=other" in line2
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--dry-run", "--time-limit", "soon",
                     env={"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"})
    assert p.returncode == 2 and "--time-limit: 'soon' is not a SLURM time limit" in p.stderr


@pytest.mark.parametrize("text", ["30", "1:30:00", "2-12", "2-12:30:00", "UNLIMITED", "5:00"])
def test_time_limits_sbatch_accepts(text: str) -> None:
    from radtrack.sheet.cells import parse_time_limit

    assert parse_time_limit(text) == text


def test_devices_map_to_the_allocation() -> None:
    from radtrack.errors import RadtrackError
    from radtrack.executors.slurm_job import allocated_devices, map_devices
    from radtrack.spec import RunSpec

    assert allocated_devices({"CUDA_VISIBLE_DEVICES": "2,3", "SLURM_JOB_GPUS": "2,3"}) == ["2", "3"]
    assert allocated_devices({"SLURM_JOB_GPUS": "5"}) == ["5"]
    assert allocated_devices({"CUDA_VISIBLE_DEVICES": "MIG-aaaa"}) == ["MIG-aaaa"]
    assert allocated_devices({}) == []
    specs = [RunSpec("e", 1, Path("x.py"), devices=["1"], row=2),
             RunSpec("e", 1, Path("x.py"), devices=["0", "1"], row=3)]
    map_devices(specs, ["6", "7"])
    assert [s.devices for s in specs] == [["7"], ["6", "7"]]
    with pytest.raises(RadtrackError, match="needs GPU 1 of the allocation"):
        map_devices([RunSpec("e", 1, Path("x.py"), devices=["1"], row=2)], ["6"])


def test_batch_script_holds_the_sheet_only_as_one_string_literal(tmp_path: Path) -> None:
    import ast

    from radtrack.executors.slurm import batch_script
    from radtrack.spec import RunSpec

    evil = "a'\"\n#SBATCH --wrap=rm -rf /\n$(x)"
    script = batch_script([RunSpec(evil, 1, Path("x.py"), args=[evil])], "http://h", 2.0, None)
    assert script.startswith(f"#!{sys.executable}\n")
    tree = ast.parse(script)
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
               and isinstance(n.value, str)]
    assert len(strings) == 1
    payload = json.loads(strings[0])
    assert payload["rows"][0]["experiment"] == evil and payload["rows"][0]["args"] == [evil]
    assert all(not line.startswith("#SBATCH") for line in script.splitlines())


def test_job_states_from_squeue_scontrol_and_sacct(slurm_cluster, monkeypatch) -> None:
    from radtrack.executors import slurm_queue as q

    for key, value in slurm_cluster.env.items():
        monkeypatch.setenv(key, value)
    done = q.submit(["--wrap=true", "--output=/dev/null"])
    held = q.submit(["--wrap=true", "--output=/dev/null", "--hold"])
    try:
        wait_for(lambda: q.states([done])[done].state == "COMPLETED", 60, "the job to end")
        found = q.states([done, held, "999999"])
        assert found[done] == q.JobState("COMPLETED")
        assert found[held].state == "PENDING" and found[held].reason == "JobHeldUser"
        # the test cluster keeps no accounting: sacct refuses, the job is UNKNOWN
        assert found["999999"].state == q.UNKNOWN and found["999999"].ended
        assert q._from_scontrol([done, held]) == {done: found[done], held: found[held]}
        assert q.cancel([held]) == ""
        wait_for(lambda: q.states([held])[held].state == "CANCELLED", 30, "scancel")
    finally:
        q.cancel([held])
    with pytest.raises(q.RadtrackError, match="sbatch refused the job: .*partition"):
        q.submit(["--wrap=true", "--partition=nosuchpartition"])


def test_a_controller_that_does_not_answer_is_an_error_not_an_ended_job(monkeypatch,
                                                                        tmp_path: Path) -> None:
    """squeue failing (controller down) must never read as 'job gone' (that would close runs
    of jobs still running)."""
    from radtrack.executors import slurm_queue as q

    if shutil.which("squeue") is None:
        pytest.skip("slurm: no squeue (Debian package slurm-client)")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=down\nSlurmctldHost=nohost(127.0.0.1)\nSlurmctldPort=1\n"
                    "MessageTimeout=1\nTCPTimeout=1\nNodeName=n CPUs=1\nPartitionName=p Nodes=n\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    with pytest.raises(q.QueueError, match="squeue failed"):
        q.states(["1"])
    p = radtrack_cli("status", str(tmp_path / "none.csv"))
    assert p.returncode == 2 and "no such sheet" in p.stderr


def test_no_sbatch_here_is_one_message_before_anything(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, "Experiment,Workload,Status,Run,Devices,Collocation,File,"
                             "Listeners,Params\nnosbatch,1,,,,-,show_env.py,none,\n")
    empty = tmp_path / "bin"
    empty.mkdir()
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--tracking-uri", "http://127.0.0.1:9",
                     env={"PATH": str(empty)})
    assert p.returncode == 2
    assert "--executor slurm needs SLURM's sbatch, squeue, scancel on PATH" in p.stderr
    assert not (tmp_path / ".sheet.csv.slurm").exists()


def test_example_slurm_sheet_passes_the_slurm_checks(tmp_path: Path) -> None:
    from support import REPO

    from radtrack.executors.slurm import SlurmOptions, describe
    from radtrack.executors.slurm_checks import check_for_slurm
    from radtrack.plan import group_workloads
    from radtrack.sheet import read_sheet

    sheet = REPO / "examples" / "slurm.csv"
    specs = read_sheet(sheet, check_host=False)
    check_for_slurm(specs, sheet)
    text = describe(group_workloads(specs), sheet, SlurmOptions())
    assert text.count("--gres=gpu:1") == 2 and text.count("--time=0:15:00") == 2
