"""A listener that dies is restarted with backoff (at most 3 times), the event is a run tag,
and the run itself goes on: through the real launcher, with two third-party listeners
registered the way any plugin is (an installed distribution's entry points)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
from support import plugin_site, radtrack_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"

MODULE = '''
import os
from pathlib import Path

from radtrack.listeners import Listener, MetricSpec
from radtrack.listeners.wrappers import CommandWrapper


class Crashy(Listener):
    """Dies on its third sample, every time."""

    name = "crashy"

    def probe(self):
        self.n = 0
        return [MetricSpec("crashy/host/n_count", "count")]

    def sample(self):
        self.n += 1
        if self.n == 3:
            raise RuntimeError("sensor fell off the bus")
        return {"crashy/host/n_count": float(self.n)}


class BrokenWrap(CommandWrapper):
    """A command wrapper whose tool is missing at start."""

    name = "brokenwrap"

    def wrap(self, argv):
        return ["/nonexistent/radtrack-profiler", *argv]


class Flaky(Listener):
    """Dies once (the first process), then samples fine."""

    name = "flaky"

    def probe(self):
        self.marker = Path(os.environ["FLAKY_MARKER"])
        return [MetricSpec("flaky/host/ok_count", "count")]

    def sample(self):
        if not self.marker.exists():
            self.marker.write_text("crashed once")
            os._exit(3)
        return {"flaky/host/ok_count": 1.0}
'''


def _site(tmp_path: Path) -> Path:
    return plugin_site(tmp_path, "restart_listeners", MODULE,
                       {"crashy": "Crashy", "flaky": "Flaky", "brokenwrap": "BrokenWrap"})


def test_dead_listeners_are_restarted_then_given_up(store: str, tmp_path: Path) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(_site(tmp_path)), os.environ.get("PYTHONPATH", "")]),
           "FLAKY_MARKER": str(tmp_path / "flaky-marker")}
    p = radtrack_cli("-e", "restart", "-l", "crashy+flaky+top", "--interval", "0.1",
                     str(SCRIPTS / "busy.py"), "11", env=env, timeout=180)
    assert p.returncode == 0, p.stderr
    assert "listener crashy restarted 1x" in p.stderr and "listener flaky restarted 1x" in p.stderr

    from mlflow import MlflowClient

    c = MlflowClient(store)
    exp = c.get_experiment_by_name("restart")
    run = next(r for r in c.search_runs([exp.experiment_id]) if r.data.tags["radtrack.role"] == "row")
    assert run.info.status == "FINISHED"  # the run itself went on
    tags = run.data.tags
    assert tags["radtrack.listener.crashy"] == \
        "failed after 3 restarts: RuntimeError: sensor fell off the bus"
    assert tags["radtrack.listener.flaky"].startswith("restarted 1x:")
    assert tags["radtrack.listener.top"] == "ok"
    # 4 processes x 2 good samples each, stored with steps that continue across restarts,
    # and the run's span's two end points (steps -1 and 8: radtrack/store/spans.py)
    steps = sorted(h.step for h in c.get_metric_history(run.info.run_id, "system/crashy/host/n_count"))
    assert steps == list(range(-1, 9))
    flaky = pd.read_parquet(c.download_artifacts(run.info.run_id, "telemetry/flaky.parquet", str(tmp_path)))
    stored = c.get_metric_history(run.info.run_id, "system/flaky/host/ok_count")
    assert len(flaky) >= 40 and len(stored) == len(flaky)


def test_a_row_that_cannot_start_fails_cleanly(store: str, tmp_path: Path) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(_site(tmp_path)), os.environ.get("PYTHONPATH", "")])}
    sheet = tmp_path / "s.csv"
    (tmp_path / "busy.py").write_text((SCRIPTS / "busy.py").read_text())
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
                     "nostart,1,,,,-,busy.py,top,5\n"
                     "nostart,1,,,,-,busy.py,brokenwrap+top,5\n"
                     "nostart,2,,,,-,busy.py,none,0.2\n")
    p = radtrack_cli(str(sheet), env=env, timeout=180)
    assert p.returncode == 1
    assert "could not start" in p.stderr and "radtrack-profiler" in p.stderr

    from mlflow import MlflowClient

    c = MlflowClient(store)
    exp = c.get_experiment_by_name("nostart")
    runs = {r.info.run_name: r for r in c.search_runs([exp.experiment_id])}
    assert runs["nostart-1 A"].info.status == runs["nostart-1 B"].info.status == "FAILED"
    assert "radtrack-profiler" in runs["nostart-1 B"].data.tags["radtrack.error"]
    assert runs["nostart-1"].info.status == "FAILED"
    assert runs["nostart-2 A"].info.status == "FINISHED"  # the sheet went on
    assert p.stdout.count("busy done") == 1  # only workload 2: row A was never released
