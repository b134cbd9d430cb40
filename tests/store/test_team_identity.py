"""Who launched what, on a shared store: every run carries its user (MLflow's ``mlflow.user``
tag and the run's user id) and its launch (``radtrack.launch_id``); two launches of one
workload number never give runs a reader cannot tell apart; a user who may not write to an
experiment is refused up front with the admin's grant command (docs/deployment.md,
section 5). Through the real CLI, against SQLite and ``mlflow server --app-name basic-auth``
over PostgreSQL (tests/servers.py).

The same user's two launches of one co-located workload (two sheets) are launched once per
module and read by both tests about them."""

from __future__ import annotations

import getpass
import os
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support import launch_importing, radtrack_cli, run_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"


def _runs(uri: str, experiment: str) -> list:
    from mlflow import MlflowClient

    c = MlflowClient(uri)
    exp = c.get_experiment_by_name(experiment)
    return c.search_runs([exp.experiment_id]) if exp else []


def _by_role(runs: list, role: str) -> list:
    return [r for r in runs if r.data.tags.get("radtrack.role") == role]


def test_run_names_of_launches_of_one_workload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The naming itself, against a real store: a later launch gets a suffix and says so;
    two launches that both looked before either created: the later one renames itself."""
    from radtrack.spec import RunSpec
    from radtrack.store import tracking
    from radtrack.store.mlflow_client import mlflow_client

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    c = mlflow_client(uri)
    exp_id = tracking.experiment_id(c, uri, "names")
    spec = RunSpec("names", 1, Path("x.py"))
    monkeypatch.setenv(tracking.LAUNCH_ID_ENV, "aaaaaaaa")
    assert tracking.workload_run_name(c, exp_id, spec) == "names-1"
    a = tracking.create_workload_run(c, exp_id, spec, "names-1", tracking.workload_tags(spec))
    assert a.info.run_name == "names-1" and a.data.tags["radtrack.launch_id"] == "aaaaaaaa"
    assert "[radtrack]" not in capsys.readouterr().err
    monkeypatch.setenv(tracking.LAUNCH_ID_ENV, "bbbbbbbb")
    assert tracking.workload_run_name(c, exp_id, spec) == "names-1 #bbbb"
    assert "workload names-1 already exists" in capsys.readouterr().err
    # raced: launch b looked before a created, so it creates "names-1" too, then renames
    b = tracking.create_workload_run(c, exp_id, spec, "names-1", tracking.workload_tags(spec))
    assert b.info.run_name == "names-1 #bbbb" and "'names-1 #bbbb'" in capsys.readouterr().err
    assert c.get_run(a.info.run_id).info.run_name == "names-1"  # the earlier one keeps it
    assert tracking.row_run_name(spec, b.info.run_name) == "names-1 A #bbbb"
    assert tracking.row_run_name(spec, "names-1") == "names-1 A"
    spec.run_name = "mine"
    assert tracking.row_run_name(spec, "names-1 #bbbb") == "mine #bbbb"
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "alice")
    assert tracking.identity_tags() == {"mlflow.user": "alice", "radtrack.launch_id": "bbbbbbbb"}
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME")
    assert tracking.launch_user() == getpass.getuser()


PAIR = ("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
        "grouped,1,,,,-,{busy},none,0.2\n"
        "grouped,1,,,,-,{busy},none,0.3\n")


@pytest.fixture(scope="module")
def two_sheets(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The same co-located workload (experiment grouped, workload 1, two rows) launched
    from two sheets one after the other, by the same user (the OS user, no MLflow account),
    into one SQLite store: the store's URI, the environment and both launches."""
    folder = tmp_path_factory.mktemp("two-sheets")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    env = {"RADTRACK_HOME": str(folder / ".radtrack"), "MLFLOW_TRACKING_URI": uri,
           "MLFLOW_TRACKING_USERNAME": ""}
    launches = []
    for name in ("one", "two"):
        sheet = folder / f"{name}.csv"
        sheet.write_text(PAIR.format(busy=SCRIPTS / "busy.py"))
        launches.append(radtrack_cli(str(sheet), cwd=folder, env=env))
    return {"uri": uri, "env": env, "launches": launches}


def test_same_user_twice_gets_a_suffix_and_is_told(two_sheets: dict) -> None:
    first, second = two_sheets["launches"]
    assert first.returncode == 0, first.stderr
    assert "already exists" not in first.stderr
    assert second.returncode == 0, second.stderr
    runs = _runs(two_sheets["uri"], "grouped")
    parents = {r.data.tags["radtrack.launch_id"]: r for r in _by_role(runs, "workload")}
    rows: dict[str, list] = {}
    for r in _by_role(runs, "row"):
        rows.setdefault(r.data.tags["radtrack.launch_id"], []).append(r)
    assert len(parents) == 2 and set(parents) == set(rows)
    names = sorted(p.info.run_name for p in parents.values())
    assert names[0] == "grouped-1" and names[1].startswith("grouped-1 #")
    suffix = names[1].split(" #")[1]
    newer = next(lid for lid, p in parents.items() if p.info.run_name == names[1])
    assert newer.startswith(suffix)
    assert sorted(r.info.run_name for r in rows[newer]) == [f"grouped-1 A #{suffix}", f"grouped-1 B #{suffix}"]
    line = next(x for x in second.stderr.splitlines() if "already exists" in x)
    assert f"'grouped-1 #{suffix}'" in line and getpass.getuser() in line, line
    assert len(line) <= 120, line  # one short line among the workload's output (issue 52)
    # who launched: the OS user without an MLflow account
    assert {r.data.tags["mlflow.user"] for r in runs} == {getpass.getuser()}
    assert {r.info.user_id for r in runs} == {getpass.getuser()}
    # the closing lines name the stored (suffixed) runs
    assert f"grouped-1 A #{suffix}: FINISHED" in second.stderr
    assert f"grouped-1 B #{suffix}: FINISHED" in second.stderr
    # no "View run" lines on a local store either way
    assert "View run" not in first.stdout + second.stdout


def test_report_keeps_two_launches_of_one_workload_apart(two_sheets: dict) -> None:
    """The same co-located workload (experiment grouped, workload 1) launched from two
    sheets: the report's per-run rows carry each its user and launch, grouped by launch,
    and the workloads table has one row per launch, not one merged row of four."""
    import json

    uri, env = two_sheets["uri"], two_sheets["env"]
    for p in two_sheets["launches"]:
        assert p.returncode == 0, p.stderr
    rows = _by_role(_runs(uri, "grouped"), "row")
    launches = {r.data.tags["radtrack.launch_id"] for r in rows}
    assert len(rows) == 4 and len(launches) == 2
    rep = run_cli("report", "grouped", "--user", getpass.getuser(), "--format", "json", env=env)
    assert rep.returncode == 0, rep.stderr
    tables = json.loads(rep.stdout)
    shown = [(r["run_name"], r["user"], r["launch"]) for r in tables["runs"]]
    assert len(shown) == 4 and len(set(shown)) == 4, shown
    assert {u for _, u, _ in shown} == {getpass.getuser()}
    assert [lid for _, _, lid in shown[:2]] == [shown[0][2]] * 2  # grouped by launch
    assert {lid for _, _, lid in shown} == launches
    assert shown[0][0] == "grouped-1 A" and shown[2][0].startswith("grouped-1 A #")
    workloads = tables["workloads"]
    assert sorted((w["launch"], w["rows"]) for w in workloads) == sorted((lid, 2) for lid in launches)
    assert workloads[0]["launch"] == shown[0][2]  # the earlier launch first
    text = run_cli("report", "grouped", env=env)
    assert text.returncode == 0 and all(lid in text.stdout for lid in launches), text.stdout


def _users(srv, monkeypatch: pytest.MonkeyPatch, *names: str) -> dict[str, tuple[str, str]]:
    """Accounts made by the admin with MLflow's client (12+ character passwords); the
    admin's credentials stay in this test's environment only (undone at its end)."""
    from mlflow.server import get_app_client

    made = {}
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", srv.admin[0])
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", srv.admin[1])
    auth = get_app_client("basic-auth", tracking_uri=srv.uri)
    for name in names:
        user = f"{name}-{secrets.token_hex(3)}"
        made[name] = (user, secrets.token_hex(8))
        auth.create_user(user, made[name][1])
    return made


def _as(srv, creds: tuple[str, str], tmp_path: Path) -> dict[str, str]:
    return {"RADTRACK_HOME": str(tmp_path / ".radtrack"), "MLFLOW_TRACKING_URI": srv.uri,
            "MLFLOW_TRACKING_USERNAME": creds[0], "MLFLOW_TRACKING_PASSWORD": creds[1]}


@pytest.mark.timeout(600)  # ~2 min at load 5 on 2 cores; past the 300 s default at load 9
def test_two_users_launch_the_same_workload_at_once(mlflow_auth_server, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    srv = mlflow_auth_server
    for var in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    users = _users(srv, monkeypatch, "alice", "bob")
    # the experiment exists (alice made it) and bob was granted EDIT, as docs/deployment.md says
    from mlflow import MlflowClient
    from mlflow.server import get_app_client

    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", users["alice"][0])
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", users["alice"][1])
    exp_id = MlflowClient(srv.uri).create_experiment("collide")
    get_app_client("basic-auth", tracking_uri=srv.uri).grant_user_permission(
        users["bob"][0], "experiment", exp_id, "EDIT")  # alice manages what she created
    procs = {}
    for name, creds in users.items():
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **_as(srv, creds, tmp_path / name)}
        procs[name] = subprocess.Popen(
            [sys.executable, "-m", "radtrack", "-e", "collide", "-w", "1", "-l", "none",
             str(SCRIPTS / "busy.py"), "1"], env=env, cwd=tmp_path, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = {name: p.communicate(timeout=240) for name, p in procs.items()}
    for name, p in procs.items():
        assert p.returncode == 0, out[name]
        assert "View run" not in out[name][0] + out[name][1], out[name]  # MLflow's per-run lines
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", srv.admin[0])
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", srv.admin[1])
    runs = _runs(srv.uri, "collide")
    parents, rows = _by_role(runs, "workload"), _by_role(runs, "row")
    assert len(parents) == 2 and len(rows) == 2
    names = sorted(p.info.run_name for p in parents)
    assert names[0] == "collide-1" and names[1].startswith("collide-1 #"), names
    assert len({r.info.run_name for r in rows}) == 2
    for run in runs:  # each tagged with its user; MLflow's user id agrees
        user = run.data.tags["mlflow.user"]
        assert user in (users["alice"][0], users["bob"][0]) and run.info.user_id == user
    assert {r.data.tags["mlflow.user"] for r in rows} == {users["alice"][0], users["bob"][0]}
    assert len({r.data.tags["radtrack.launch_id"] for r in rows}) == 2
    suffixed = next(p for p in parents if p.info.run_name != "collide-1")
    who = next(n for n, c in users.items() if c[0] == suffixed.data.tags["mlflow.user"])
    assert "already exists" in out[who][1], out[who][1]  # the suffixed launch says so
    # report tells them apart and filters by user
    # in-process (MLflow's client reads the credentials from the environment per request)
    rep = run_cli("report", "collide", "--user", users["bob"][0], "--format", "csv",
                  env=_as(srv, users["bob"], tmp_path))
    assert rep.returncode == 0, rep.stderr
    assert users["bob"][0] in rep.stdout and users["alice"][0] not in rep.stdout
    nobody = run_cli("report", "collide", "--user", "nobody", env=_as(srv, users["bob"], tmp_path))
    assert nobody.returncode == 2 and "no runs launched by 'nobody'" in nobody.stderr


def test_user_without_write_permission_is_refused_up_front(mlflow_auth_server, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    srv = mlflow_auth_server
    for var in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    users = _users(srv, monkeypatch, "carol")
    carol = users["carol"]
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", srv.admin[0])
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", srv.admin[1])
    exp_id = MlflowClient(srv.uri).create_experiment("locked")  # carol: the default READ
    args = ["-e", "locked", "-l", "none", str(SCRIPTS / "busy.py"), "0.2"]
    p = radtrack_cli(*args, cwd=tmp_path, env=_as(srv, carol, tmp_path))
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr  # one line, no traceback
    assert f"user '{carol[0]}' may not write to experiment 'locked'" in lines[0]
    assert "permission READ" in lines[0] and "grant_user_permission" in lines[0]
    assert "busy done" not in p.stdout and not _runs(srv.uri, "locked")
    # the admin runs the command the line names (with the admin's credentials)...
    command = lines[0].split("grant EDIT: ", 1)[1].rsplit(" (docs/deployment.md", 1)[0]
    words = shlex.split(command)
    assert words[:2] == ["MLFLOW_TRACKING_USERNAME=ADMIN",
                         "MLFLOW_TRACKING_PASSWORD=ADMIN_PASSWORD"], words
    assert words[2:4] == ["python", "-c"] and f"'{exp_id}'" in words[4]
    # (its Python in this process: MLflow's client reads the credentials per request, and
    # an interpreter start with MLflow's import costs 2-3 CPU-s)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", srv.admin[0])
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", srv.admin[1])
    exec(compile(words[4], "<the grant command>", "exec"), {})  # noqa: S102 - the line's own command
    # ...and carol's launch goes through, with, in the same launch (a sheet), an experiment
    # that does not exist yet: carol creates it and manages it
    sheet = tmp_path / "carol.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
                     f"locked,1,,,,-,{SCRIPTS / 'busy.py'},none,0.2\n"
                     f"carols-{carol[0]},1,,,,-,{SCRIPTS / 'busy.py'},none,0.2\n")
    p = radtrack_cli(str(sheet), cwd=tmp_path, env=_as(srv, carol, tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    for experiment in ("locked", f"carols-{carol[0]}"):
        (row,) = _by_role(_runs(srv.uri, experiment), "row")
        assert row.data.tags["mlflow.user"] == carol[0] == row.info.user_id, experiment
        assert row.info.status == "FINISHED", experiment


def test_refused_credentials_stop_the_launch_in_one_line(mlflow_auth_server, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong password, or none, is refused before the script starts, in one line naming the
    variables; asked through urllib with what MLflow's client would send (a password in
    the URI wins over the variables, as there), not through MLflow's import."""
    srv = mlflow_auth_server
    for var in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    args = ["-e", "refused", "-l", "none", str(SCRIPTS / "busy.py"), "0.2"]
    wrong = _as(srv, (srv.viewer[0], "not-" + srv.viewer[1]), tmp_path)
    nobody = {k: v for k, v in _as(srv, srv.viewer, tmp_path).items()
              if k not in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")}
    for env, who in ((wrong, f"user '{srv.viewer[0]}' was refused"), (nobody, "no credentials were given")):
        p = radtrack_cli(*args, cwd=tmp_path, env=env)
        assert p.returncode == 2, p.stdout + p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "requires authentication" in lines[0] and who in lines[0], p.stderr
        assert "MLFLOW_TRACKING_PASSWORD" in lines[0] and "busy done" not in p.stdout
    # the right password in the URI goes through, over a wrong one in the variables
    host = srv.uri.removeprefix("http://")
    in_uri = {**wrong, "MLFLOW_TRACKING_URI": f"http://{srv.admin[0]}:{srv.admin[1]}@{host}"}
    p, script_first = launch_importing(["-e", "refused", "-l", "none"], tmp_path, in_uri)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert srv.admin[1] not in p.stdout + p.stderr  # the password is never shown
    # the user's permissions were asked (a user is set) without MLflow's import before the script
    assert script_first


def test_an_experiment_the_user_may_not_read_is_refused_in_one_line(mlflow_auth_server, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    srv = mlflow_auth_server
    for var in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    dave = _users(srv, monkeypatch, "dave")["dave"]
    from mlflow import MlflowClient
    from mlflow.server import get_app_client

    exp_id = MlflowClient(srv.uri).create_experiment(f"hidden-{dave[0]}")  # as the admin
    get_app_client("basic-auth", tracking_uri=srv.uri).grant_user_permission(
        dave[0], "experiment", exp_id, "DENY")
    p = radtrack_cli("-e", f"hidden-{dave[0]}", "-l", "none", str(SCRIPTS / "busy.py"), "0.2",
                     cwd=tmp_path, env=_as(srv, dave, tmp_path))
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr  # one line, no traceback
    assert f"user '{dave[0]}' may not read experiment 'hidden-{dave[0]}'" in lines[0]
    assert "busy done" not in p.stdout
