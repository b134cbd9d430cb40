"""What a workload's SLURM job asks for (CPUs for its rows and listeners, memory), what its
rows then see (``os.sched_getaffinity``), and that no file radtrack writes holds a password:
``radtrack sheet.csv --executor slurm`` as a subprocess against the tests' single-node SLURM
(tests/slurm_cluster.py) into PostgreSQL directly (tests/servers.py), the password only in
the tracking URI given on the command line."""

from __future__ import annotations

import getpass
import re
import shutil
from pathlib import Path

import pytest
from support import radtrack_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"

THREE = """\
Experiment, Workload, Status, Run, Devices, Collocation, File, Listeners, Params, Partition, Job
cpus, 1, , , 0, -, show_env.py, top, pair-a, ,
cpus, 1, , , 1, -, show_env.py, none, pair-b, ,
cpus, 2, , , , -, show_env.py, top, solo, other,
"""


def _sheet(tmp_path: Path, text: str, script: str = "show_env.py") -> Path:
    shutil.copy(SCRIPTS / script, tmp_path / script)
    path = tmp_path / "sheet.csv"
    path.write_text(text)
    return path


def _line(out: str, name: str) -> tuple[str, str]:
    """The dry run's sbatch line of workload ``name`` and the resources line under it."""
    lines = out.splitlines()
    i = next(i for i, x in enumerate(lines) if x.strip().startswith(f"{name}:"))
    return lines[i], lines[i + 1]


def test_dry_run_shows_the_cpu_and_memory_request(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, THREE)
    env = {"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"}
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--dry-run", env=env)
    assert p.returncode == 0, p.stderr
    pair, words = _line(p.stdout, "cpus-1")
    assert "--cpus-per-task=5" in pair and "--mem" not in pair  # 2 a row x 2 + 1
    assert words.strip().startswith("5 CPU(s) (default: 2 per row x 2 + 1 for the launcher")
    assert "memory: the partition's default" in words and "2 GPU(s)" in words
    solo, _ = _line(p.stdout, "cpus-2")
    assert "--cpus-per-task=3" in solo

    # --cpus-per-task and --mem for every workload; a Cpus cell wins for its workload
    sheet.write_text(THREE.replace("Job\n", "Job, Cpus\n", 1)
                     .replace("pair-a, ,\n", "pair-a, , , 8\n").replace("pair-b, ,\n", "pair-b, , , 8\n"))
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--dry-run", "--cpus-per-task", "4",
                     "--mem", "16g", env=env)
    assert p.returncode == 0, p.stderr
    pair, words = _line(p.stdout, "cpus-1")
    assert "--cpus-per-task=8" in pair and "--mem=16G" in pair
    assert "8 CPU(s) (Cpus / --cpus-per-task), memory 16G (--mem)" in words
    solo, _ = _line(p.stdout, "cpus-2")
    assert "--cpus-per-task=4" in solo and "--mem=16G" in solo

    # a bad Cpus cell, or rows of one job that disagree, before anything is submitted
    sheet.write_text(THREE.replace("Job\n", "Job, Cpus\n", 1)
                     .replace("pair-a, ,\n", "pair-a, , , 0\n").replace("pair-b, ,\n", "pair-b, , , 2\n"))
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--dry-run", env=env)
    assert p.returncode == 2 and f"{sheet}:2: column Cpus: '0' must be >= 1" in p.stderr, p.stderr
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--dry-run", "--mem", "lots", env=env)
    assert p.returncode == 2 and "--mem: 'lots' is not a SLURM memory size" in p.stderr, p.stderr


def _files_under(*roots: Path) -> list[Path]:
    return [f for root in roots if root.exists() for f in root.rglob("*") if f.is_file()]


PAIR = """\
Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Cpus,Job
affinity,1,,,0,-,show_affinity.py,top,,2,
affinity,1,,,1,-,show_affinity.py,none,,2,
affinity,2,,,,-,show_affinity.py,none,,,
"""


def test_colocated_rows_get_their_cpus_and_no_password_is_written(slurm_cluster, postgres_server,
                                                                   tmp_path: Path) -> None:
    """A co-located pair asks for 2 CPUs (its Cpus cell) and each row sees at least 2; the
    other workload asks for the default 3. The tracking URI (password included) is given
    only on the command line: the job gets it through the environment SLURM propagates,
    and neither the job scripts, the ledger, the job logs, the node's spool and run folders
    nor the sheet hold the password."""
    from mlflow import MlflowClient

    uri = postgres_server.new_database("slurm_secrets")
    password = postgres_server.password
    assert password in uri
    shared = tmp_path / "shared-artifacts"
    MlflowClient(uri).create_experiment("affinity", artifact_location=shared.as_uri())
    sheet = _sheet(tmp_path, PAIR, "show_affinity.py")
    env = {**slurm_cluster.env, "MLFLOW_TRACKING_URI": "",
           "RADTRACK_JOB_HOME": str(tmp_path / "jobhome"),
           "RADTRACK_HOME": str(tmp_path / ".radtrack")}
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--tracking-uri", uri, "--grace", "2",
                     env=env, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    assert password not in p.stdout + p.stderr

    rows = [line.split(",") for line in sheet.read_text().splitlines()[1:]]
    header = sheet.read_text().splitlines()[0].split(",")
    jobs = [r[header.index("Job")].split()[0] for r in rows]
    assert jobs[0] == jobs[1] != jobs[2]

    def job_fields(job: str) -> dict[str, str]:
        out = slurm_cluster.run("scontrol", "show", "job", "-o", job).stdout
        return dict(f.split("=", 1) for f in out.split() if "=" in f)

    pair, solo = job_fields(jobs[0]), job_fields(jobs[2])
    assert pair["NumCPUs"] == "2" and pair.get("CPUs/Task") == "2", pair
    assert solo["NumCPUs"] == "3" and solo.get("CPUs/Task") == "3", solo

    c = MlflowClient(uri)
    exp = c.get_experiment_by_name("affinity")
    runs = c.search_runs([exp.experiment_id])
    row_runs = [r for r in runs if r.data.tags["radtrack.role"] == "row"]
    assert len(row_runs) == 3 and all(r.info.status == "FINISHED" for r in row_runs)
    for r in row_runs:
        if r.data.tags["radtrack.workload"] != "1":
            continue
        log = Path(c.download_artifacts(r.info.run_id, "logs/output.log", str(tmp_path / r.info.run_id)))
        m = re.search(r"^affinity (\d+) ", log.read_text(), re.M)
        assert m, log.read_text()
        # cgroup-confined: exactly the job's CPUs; unconfined (this SLURM binds nothing):
        # every CPU of the host, which must still be at least what the job asked for
        assert int(m.group(1)) >= 2, log.read_text()
    # one submission, one launch; who launched: the OS user (no MLflow account here)
    assert len({r.data.tags["radtrack.launch_id"] for r in runs}) == 1
    assert {r.data.tags["mlflow.user"] for r in runs} == {getpass.getuser()}
    assert {r.info.user_id for r in runs} == {getpass.getuser()}

    written = _files_under(tmp_path / ".sheet.csv.slurm", tmp_path / "jobhome",
                           tmp_path / ".radtrack") + [sheet]
    scripts = list((tmp_path / ".sheet.csv.slurm").glob("*.py"))
    assert len(scripts) == 2 and (tmp_path / ".sheet.csv.slurm" / "jobs.json").is_file()
    assert any(f.suffix == ".out" for f in written)
    holding = [str(f) for f in written if password.encode() in f.read_bytes()]
    assert not holding, holding
    # what the job script and the ledger hold instead: the URI without its password
    bare = uri.replace(f":{password}@", "@")
    assert bare in scripts[0].read_text() and bare in (tmp_path / ".sheet.csv.slurm" / "jobs.json").read_text()

    # `radtrack status` in a shell that has the URI in its environment finds the password
    s = radtrack_cli("status", str(sheet), env={**env, "MLFLOW_TRACKING_URI": uri})
    assert s.returncode == 0, s.stdout + s.stderr
    assert f"affinity-1: job {jobs[0]} COMPLETED" in s.stdout


@pytest.mark.parametrize("text,expected", [("1", "1"), ("64", "64")])
def test_cpus_cell_parses(text: str, expected: str) -> None:
    from radtrack.executors.slurm_options import parse_cpus, parse_mem

    assert parse_cpus(text) == expected
    assert parse_mem("16g") == "16G" and parse_mem("64000") == "64000"
    for bad in ("0", "-1", "1.5", "four"):
        with pytest.raises(ValueError):
            parse_cpus(bad)
