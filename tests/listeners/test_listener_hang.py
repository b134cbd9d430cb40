"""Fault: a listener that hangs without exiting (docs/architecture.md "Faults"), through the
real launcher with two third-party listeners registered as any plugin is:

- ``stuck`` blocks forever in its third reading (the first process only): silent past
  ``$RADTRACK_LISTENER_STALL_S`` it is killed and restarted like one that died, the event a
  run tag and one line, and the restarted process's readings are stored;
- ``deaf`` reads fine but ignores SIGTERM (blocked): at the run's end it is killed after
  the stop's grace, which the run's tag and one line say;

and a listener stopped with SIGSTOP by someone else (``top``) is let go at the end
(SIGCONT after SIGTERM): it ends at once, cleanly, its last readings stored."""

from __future__ import annotations

import os
from pathlib import Path

from support import plugin_site, radtrack_cli

MODULE = '''
import os
import signal
import time
from pathlib import Path

from radtrack.listeners import Listener, MetricSpec


class Stuck(Listener):
    """Hangs in its third reading, SIGTERM blocked, the first time only (a marker file)."""

    name = "stuck"

    def probe(self):
        self.n = 0
        self.marker = Path(os.environ["STUCK_MARKER"])
        return [MetricSpec("stuck/host/n_count", "count")]

    def sample(self):
        self.n += 1
        if self.n == 3 and not self.marker.exists():
            self.marker.write_text(str(os.getpid()))
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            while True:
                time.sleep(3600)
        return {"stuck/host/n_count": float(self.n)}


class Deaf(Listener):
    """Reads fine; SIGTERM never reaches it."""

    name = "deaf"

    def probe(self):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        return [MetricSpec("deaf/host/ok_count", "count")]

    def sample(self):
        return {"deaf/host/ok_count": 1.0}
'''

SCRIPT = '''import os, signal, sys, time
import psutil

time.sleep(float(sys.argv[1]))
# someone stops the top listener (a debugger, a job manager's SIGSTOP) until the end
for p in psutil.Process(os.getppid()).children(recursive=True):
    try:
        if "radtrack.listeners top" in " ".join(p.cmdline()):
            os.kill(p.pid, signal.SIGSTOP)
            print("stopped top", p.pid, flush=True)
    except psutil.Error:
        pass
time.sleep(1.0)
print("script done", flush=True)
'''


def _site(tmp_path: Path) -> Path:
    return plugin_site(tmp_path, "hang_listeners", MODULE, {"stuck": "Stuck", "deaf": "Deaf"})


def test_a_hung_listener_is_restarted_and_one_that_ignores_its_stop_is_killed(
        store: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    env = {"PYTHONPATH": os.pathsep.join([str(_site(tmp_path)), os.environ.get("PYTHONPATH", "")]),
           "STUCK_MARKER": str(tmp_path / "stuck-marker"), "RADTRACK_LISTENER_STALL_S": "2"}
    p = radtrack_cli("-e", "hang", "-l", "stuck+deaf+top", "--interval", "0.2", str(script), "7",
                     env=env, timeout=180)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "stopped top" in out and "script done" in out
    restarted = [ln for ln in out.splitlines() if "listener stuck restarted 1x" in ln]
    assert len(restarted) == 1 and "(hung): killed" in restarted[0], out
    killed = [ln for ln in out.splitlines() if "listener deaf killed at stop" in ln]
    assert len(killed) == 1 and "Traceback" not in out, out

    c = MlflowClient(store)
    exp = c.get_experiment_by_name("hang")
    run = next(r for r in c.search_runs([exp.experiment_id]) if r.data.tags["radtrack.role"] == "row")
    assert run.info.status == "FINISHED"
    tags = run.data.tags
    assert tags["radtrack.listener.stuck"].startswith("restarted 1x: no line for ")
    assert tags["radtrack.listener.deaf"].startswith("killed at stop:")
    assert tags["radtrack.listener.top"] == "ok"  # let go at the stop, it ended cleanly
    assert int((tmp_path / "stuck-marker").read_text()) > 0  # the first process hung
    # the restarted process read on: the first one never got past its second reading
    values = [m.value for m in c.get_metric_history(run.info.run_id, "system/stuck/host/n_count")]
    assert max(values) >= 5, values
