"""The hook folder every Python process of a script's tree starts with
(radtrack/script/hook/sitecustomize.py), the row's events file written by many processes at
once, and finding what the tree left running (radtrack/run/stopping.py leftovers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from radtrack.run import stopping
from radtrack.run.start import HOOK_DIR
from radtrack.script import handshake, run_events


def _python(code: str, tmp_path: Path, extra_path: list[str] | None = None,
            **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RADTRACK_RUN_EVENTS")}
    full.update(env)
    full["PYTHONPATH"] = os.pathsep.join([str(HOOK_DIR), *(extra_path or [])])
    return subprocess.run([sys.executable, "-c", code], env=full, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_hook_imports_nothing_until_mlflow_and_runs_the_sitecustomize_it_hides(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import os\nos.environ['OWN_SITECUSTOMIZE'] = 'ran'\n")
    code = ("import os, sys; print(os.environ.get('OWN_SITECUSTOMIZE'), "
            "'radtrack.script.run_events' in sys.modules, 'mlflow' in sys.modules)")
    out = _python(code, tmp_path, [str(own)], RADTRACK_RUN_EVENTS=str(tmp_path / "ev.jsonl"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ran", "False", "False"]


def test_hook_records_the_runs_of_a_child_process(tmp_path: Path) -> None:
    events = tmp_path / "ev.jsonl"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code = ("import mlflow\n"
            "with mlflow.start_run(run_name='kid') as r:\n"
            "    mlflow.set_tag('mlflow.runName', 'kid2')\n"
            "print(r.info.run_id)\n")
    out = _python(code, tmp_path, RADTRACK_RUN_EVENTS=str(events), MLFLOW_TRACKING_URI=uri,
                  RANK="3", MLFLOW_DISABLE_TELEMETRY="true")
    assert out.returncode == 0, out.stderr
    (span,) = run_events.read_spans(events)
    assert span.run_id == out.stdout.split()[-1] and span.name == "kid2"
    assert span.rank == "3" and span.pid > 0 and span.status == "FINISHED"


def test_no_hook_without_the_events_variable(tmp_path: Path) -> None:
    out = _python("import sys; print(any(type(f).__name__ == '_WhenMlflow' for f in sys.meta_path))",
                  tmp_path)
    assert out.stdout.strip() == "False"


def test_many_processes_append_whole_lines(tmp_path: Path) -> None:
    events = tmp_path / "ev.jsonl"
    code = ("import sys\nfrom radtrack.script.run_events import _Recorder\n"
            "r = _Recorder(sys.argv[1], None)\n"
            "for i in range(300): r.emit('start', f'{sys.argv[2]}-{i}', name='x' * 2000)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(events), str(k)]) for k in range(4)]
    assert all(p.wait(120) == 0 for p in procs)
    lines = events.read_text().splitlines()
    assert len(lines) == 1200
    assert len({json.loads(line)["run_id"] for line in lines}) == 1200


def test_leftovers_finds_a_setsid_descendant_by_its_marker_and_stops_it(tmp_path: Path) -> None:
    env = {**os.environ, "RADTRACK_TREE": "key-of-this-test"}
    p = subprocess.Popen(["setsid", "sleep", "60"], env=env)
    try:
        deadline = time.monotonic() + 10
        found: dict[int, str] = {}
        while time.monotonic() < deadline and not found:
            found = stopping.leftovers(("RADTRACK_TREE", "key-of-this-test"))
            time.sleep(0.05)
        assert found and "sleep 60" in next(iter(found.values()))
        assert stopping.leftovers(("RADTRACK_TREE", "another-key")) == {}
        assert stopping.stop_pids(found) == []
        assert p.wait(5) is not None
    finally:
        p.kill()


def test_a_stop_request_is_read_back(tmp_path: Path) -> None:
    assert handshake.stop_request(tmp_path) is None
    handshake.request_stop(tmp_path, "max_time", "FINISHED")
    stop = handshake.stop_request(tmp_path)
    assert stop is not None and stop["stopped_by"] == "max_time" and stop["status"] == "FINISHED"


def test_param_cuts_are_read_back_last_one_winning(tmp_path: Path) -> None:
    events = tmp_path / "ev.jsonl"
    run_events.keep_param("r1", "k", "a" * 7000, str(events), tmp_path)
    run_events.keep_param("r1", "k", "b" * 8000, str(events), tmp_path)
    run_events.keep_param("", "row", "c" * 6001, str(events), tmp_path)
    cuts = {(c.run_id, c.key): c for c in run_events.read_param_cuts(events)}
    assert set(cuts) == {("r1", "k"), ("", "row")}
    assert cuts[("r1", "k")].chars == 8000 and Path(cuts[("r1", "k")].file).read_text() == "b" * 8000
    assert run_events.read_spans(events) == []  # cut events are not runs
