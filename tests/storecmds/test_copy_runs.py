"""``radtrack copy`` through the CLI (issue 42: moving runs from a laptop's store to a team
server). A real launch seeds a SQLite store: one workload of two co-located rows (a parent,
two row runs), one row's script opening its own ``mlflow.start_run()`` (a script run radtrack
links both ways), plus a run still RUNNING. It is copied into a new SQLite store and into a
real ``mlflow server``; every run must come back whole (params, tags, every metric point,
artifacts with the Parquet trace readable, times, statuses, names) with its links pointing
at the copies, ``radtrack report`` must read the copy, and a second copy adds nothing (or,
after an interrupted copy, makes that one again).

The source store and its report are made once per module (module fixtures); ``copy`` and
``report`` run in-process (support.run_cli: the CLI's entry point, no interpreter start and
MLflow import per call), the launch and the unknown command as processes. Every metric
point is compared in the stores' own tables (all SQLite, the server's backend too): one
query a run, where MLflow's client asks once per metric key (80 a row run).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from servers import MlflowServer, free_port, start_mlflow_server
from support import radtrack_cli, run_cli

from radtrack.store import newstore
from radtrack.vocab import schema

EXP = "cp"
OWN_RUN = """\
import time

import mlflow

with mlflow.start_run(run_name="own"):
    mlflow.log_param("lr", 0.1)
    for step in range(6):
        mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
        time.sleep(0.15)
    mlflow.log_text("hello", "notes/hello.txt")
"""
PLAIN = "import time\ntime.sleep(1.0)\n"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("copy-source")
    (folder / "own_run.py").write_text(OWN_RUN)
    (folder / "plain.py").write_text(PLAIN)
    sheet = folder / "sheet.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval\n"
                     f"{EXP},1,,,,-,{folder / 'own_run.py'},top,,0.1\n"
                     f"{EXP},1,,,,-,{folder / 'plain.py'},top,--x 1,0.1\n")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    env = {"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(folder / ".radtrack")}
    p = radtrack_cli(str(sheet), cwd=folder, env=env, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    from mlflow import MlflowClient

    c = MlflowClient(uri)
    exp_id = c.get_experiment_by_name(EXP).experiment_id
    c.set_experiment_tag(exp_id, "team.note", "from the laptop")
    # a run still going (another launch on this store): never copied as if it had ended
    c.create_run(exp_id, run_name="still-running")
    runs = {r.info.run_name: r for r in c.search_runs([exp_id])}
    roles = [r.data.tags.get(schema.ROLE) for r in runs.values()]
    assert sorted(map(str, roles)) == ["None", "row", "row", "script", "workload"], runs.keys()
    return {"uri": uri, "db": folder / "mlflow.db", "folder": folder, "env": env, "runs": runs}


@pytest.fixture(scope="module")
def source_report(source: dict[str, Any]) -> Any:
    """``radtrack report`` of the source store, what each copy's report is compared with."""
    return run_cli("report", EXP, "--tracking-uri", source["uri"], env=source["env"])


def _points(db: Path, run_id: str) -> dict[str, list[tuple]]:
    """Every point of every metric history of one run, read from the SQLite store's own
    table: key -> sorted (step, timestamp, value, is_nan)."""
    with contextlib.closing(sqlite3.connect(db)) as con:
        rows = con.execute("SELECT key, step, timestamp, value, is_nan FROM metrics WHERE run_uuid = ?",
                           (run_id,)).fetchall()
    out: dict[str, list[tuple]] = {}
    for key, *point in rows:
        out.setdefault(key, []).append(tuple(point))
    return {key: sorted(points) for key, points in out.items()}


def _files(c: Any, run_id: str, path: str = "") -> dict[str, int]:
    out: dict[str, int] = {}
    for f in c.list_artifacts(run_id, path or None):  # a server says None for an empty file
        out.update(_files(c, run_id, f.path) if f.is_dir else {f.path: f.file_size or 0})
    return out


def assert_copied(src_uri: str, dst_uri: str, tmp: Path, src_db: Path, dst_db: Path) -> dict[str, str]:
    """Every ended run of EXP in ``src_uri`` is in ``dst_uri`` whole, its links remapped;
    returns source id -> copy id. ``src_db``, ``dst_db``: the SQLite files behind them
    (a server's backend), where the metric histories are compared."""
    import pandas as pd
    from mlflow import MlflowClient

    s, d = MlflowClient(src_uri), MlflowClient(dst_uri)
    s_exp, d_exp = s.get_experiment_by_name(EXP), d.get_experiment_by_name(EXP)
    assert d_exp.tags.get("team.note") == "from the laptop"
    ended = [r for r in s.search_runs([s_exp.experiment_id]) if r.info.status != "RUNNING"]
    copies = d.search_runs([d_exp.experiment_id])
    assert len(copies) == len(ended) == 4, [r.info.run_name for r in copies]
    ids = {r.data.tags[schema.COPIED_FROM]: r.info.run_id for r in copies}
    assert set(ids) == {r.info.run_id for r in ended}
    assert not set(ids) & set(ids.values())  # new ids, not the source's
    by_id = {r.info.run_id: r for r in copies}
    for run in ended:
        copy = by_id[ids[run.info.run_id]]
        name = run.info.run_name
        assert copy.info.run_name == name
        assert (copy.info.status, copy.info.start_time, copy.info.end_time) == (
            run.info.status, run.info.start_time, run.info.end_time), name
        assert copy.info.user_id == run.info.user_id
        assert copy.data.params == run.data.params, name
        for key, value in run.data.tags.items():
            want = (",".join(ids[v] for v in value.split(","))
                    if key in schema.RUN_ID_TAGS else value)
            assert copy.data.tags[key] == want, (name, key)
        assert copy.data.tags[schema.COPIED_FROM_STORE] == src_uri
        assert set(copy.data.metrics) == set(run.data.metrics), name
        theirs, ours = _points(src_db, run.info.run_id), _points(dst_db, copy.info.run_id)
        assert set(theirs) == set(run.data.metrics), name
        for key in run.data.metrics:
            assert ours[key] == theirs[key], (name, key)
        files = _files(s, run.info.run_id)
        assert _files(d, copy.info.run_id) == files, name
        if schema.trace_artifact("top") in files:
            theirs = pd.read_parquet(s.download_artifacts(run.info.run_id, schema.trace_artifact("top"),
                                                          str(tmp / "s")))
            ours = pd.read_parquet(d.download_artifacts(copy.info.run_id, schema.trace_artifact("top"),
                                                        str(tmp / "d")))
            assert len(ours) > 0
            pd.testing.assert_frame_equal(ours, theirs)
    # the links, named: children to the parent, script run <-> row run
    roles = {r.data.tags.get(schema.ROLE): r for r in copies}
    parent, script = roles["workload"], roles["script"]
    rows = [r for r in copies if r.data.tags.get(schema.ROLE) == "row"]
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in rows)
    holder = by_id[script.data.tags[schema.ROW_RUN]]
    assert holder.data.tags[schema.SCRIPT_RUNS] == script.info.run_id
    assert script.data.metrics["loss"] == pytest.approx(1.0 / 6)
    return ids


def _copy(src: str, dst: str, *more: str, env: dict[str, str]) -> Any:
    return run_cli("copy", "--from", src, "--to", dst, *more, env=env)


def _check_report(source: dict[str, Any], theirs: Any, dst: str) -> None:
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    ours = run_cli("report", EXP, "--tracking-uri", dst, env=source["env"])
    assert ours.returncode == 0, ours.stdout + ours.stderr
    for name in (f"{EXP}-1 A", f"{EXP}-1 B"):  # the row runs, as the source's report has them
        assert name in ours.stdout and name in theirs.stdout
    assert "still-running" in theirs.stdout and "still-running" not in ours.stdout
    assert f"experiment {EXP}: 2 run(s)" in ours.stdout


def test_copy_into_a_new_sqlite_store_then_again_after_an_interrupted_copy(
        source: dict[str, Any], source_report: Any, tmp_path: Path) -> None:
    """A dry run makes nothing; the copy; then a copy an earlier ``radtrack copy`` could
    not end (it stays RUNNING in the target) is deleted and copied again, never counted as
    there, while the other three are (still exactly one copy each)."""
    from mlflow import MlflowClient

    dst = f"sqlite:///{tmp_path / 'team.db'}"
    dry = _copy(source["uri"], dst, "--dry-run", env=source["env"])
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "4 run(s) would be copied, 0 already there, 1 still running skipped" in dry.stdout
    assert not (tmp_path / "team.db").exists()  # a dry run makes nothing
    p = _copy(source["uri"], dst, env=source["env"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "4 run(s) copied, 0 already there, 1 still running skipped, 0 failed" in p.stdout
    assert "still-running: skipped, still RUNNING in the source" in p.stdout
    first = assert_copied(source["uri"], dst, tmp_path, source["db"], tmp_path / "team.db")

    d = MlflowClient(dst)
    exp_id = d.get_experiment_by_name(EXP).experiment_id
    victim = next(r for r in d.search_runs([exp_id]) if r.data.tags.get(schema.ROLE) == "script")
    d.update_run(victim.info.run_id, status="RUNNING")  # as if the copy stopped before its end
    again = _copy(source["uri"], dst, EXP, env=source["env"])
    assert again.returncode == 0, again.stdout + again.stderr
    assert "unfinished copy" in again.stdout
    assert "1 run(s) copied, 3 already there, 1 still running skipped, 0 failed" in again.stdout
    assert again.stdout.count("already copied") == 3
    ids = assert_copied(source["uri"], dst, tmp_path, source["db"], tmp_path / "team.db")
    made_again = victim.data.tags[schema.COPIED_FROM]
    assert ids[made_again] != victim.info.run_id == first[made_again]
    assert {k: v for k, v in ids.items() if k != made_again} == {
        k: v for k, v in first.items() if k != made_again}  # the other three left as they were
    _check_report(source, source_report, dst)


def test_copy_into_an_mlflow_server(source: dict[str, Any], source_report: Any, tmp_path: Path) -> None:
    """Into a real ``mlflow server`` (artifacts through it); a second copy adds nothing."""
    newstore.create(tmp_path / "server.db")  # whole from radtrack's template: MLflow's migrations not run again
    server: MlflowServer = start_mlflow_server(f"sqlite:///{tmp_path / 'server.db'}",
                                               tmp_path / "server-artifacts", tmp_path / "server")
    try:
        p = _copy(source["uri"], server.uri, EXP, env=source["env"])
        assert p.returncode == 0, p.stdout + p.stderr
        assert "4 run(s) copied, 0 already there, 1 still running skipped, 0 failed" in p.stdout
        first = assert_copied(source["uri"], server.uri, tmp_path, source["db"], tmp_path / "server.db")
        # the artifacts went through the server, into its own artifact store
        assert list((tmp_path / "server-artifacts").rglob("top.parquet"))
        again = _copy(source["uri"], server.uri, EXP, env=source["env"])
        assert again.returncode == 0, again.stdout + again.stderr
        assert "0 run(s) copied, 4 already there, 1 still running skipped, 0 failed" in again.stdout
        assert again.stdout.count("already copied") == 4
        # still exactly one copy each, the same ones
        assert assert_copied(source["uri"], server.uri, tmp_path, source["db"], tmp_path / "server.db") == first
        _check_report(source, source_report, server.uri)
    finally:
        server.stop()


@pytest.mark.parametrize("case", ["unknown", "same", "unreachable", "no-source"])
def test_bad_input_is_named(source: dict[str, Any], tmp_path: Path, case: str) -> None:
    src, dst, exps = source["uri"], f"sqlite:///{tmp_path / 'team.db'}", [EXP]
    if case == "unknown":
        exps, said = ["cpp"], "no experiment 'cpp' in"
    elif case == "same":
        dst = f"sqlite:///{source['folder'] / '.' / 'mlflow.db'}"
        said = "--from and --to name the same store"
    elif case == "unreachable":
        dst, said = f"http://127.0.0.1:{free_port()}", "--to: tracking server http://127.0.0.1"
    else:
        src, said = f"sqlite:///{tmp_path / 'nothing.db'}", "no such store"
    p = _copy(src, dst, *exps, env=source["env"])
    assert p.returncode == 2, p.stdout + p.stderr
    assert said in p.stderr and "Traceback" not in p.stderr, p.stderr
    if case == "unknown":
        assert "did you mean 'cp'?" in p.stderr
    if case == "unreachable":
        assert "unreachable" in p.stderr
    if case == "no-source":
        assert not (tmp_path / "nothing.db").exists()
    assert not (tmp_path / "team.db").exists()  # nothing made in the target


def test_the_command_is_known_and_its_options_checked(tmp_path: Path) -> None:
    """Did-you-mean knows the command and its options; both stores are asked for."""
    p = radtrack_cli("cpoy", cwd=tmp_path)
    assert p.returncode == 2 and "did you mean 'copy'?" in p.stderr, p.stderr
    p = radtrack_cli("copy", "--form", "sqlite:///a.db", "--to", "sqlite:///b.db", cwd=tmp_path)
    assert p.returncode == 2 and "--form (did you mean --from?)" in p.stderr, p.stderr
    p = radtrack_cli("copy", "--to", "sqlite:///b.db", cwd=tmp_path)
    assert p.returncode == 2 and "--from missing" in p.stderr, p.stderr
    p = radtrack_cli("copy", "--help", cwd=tmp_path)
    assert p.returncode == 0 and "--dry-run" in p.stdout
    assert not list(tmp_path.iterdir())  # no store made
