"""Logs through RADTBenchmark (param, metrics, code windows, tag, artifact) while the tracking
store fails around it; exits with EXIT_CODE.

Usage: store_fault.py EXIT_CODE [start|end]
``start`` / ``end``: SIGKILL the process group ``$RADTRACK_TEST_SERVER_PGID`` (the test's
mlflow server) before the script logs anything / after its last value.
"""
import os
import pathlib
import signal
import sys
import time

from radtrack import RADTBenchmark

code = int(sys.argv[1])
when = sys.argv[2] if len(sys.argv) > 2 else ""


def kill_server() -> None:
    os.killpg(int(os.environ["RADTRACK_TEST_SERVER_PGID"]), signal.SIGKILL)


if when == "start":
    kill_server()
with RADTBenchmark() as run:
    run.log_param("fault", when or "none")
    for step in range(3):
        run.log_metric("loss", 1.0 / (step + 1), step)
        with run.window("epoch", step=step):
            time.sleep(0.4)
    run.set_tag("fault_tag", "yes")
    notes = pathlib.Path("fault_notes.txt")
    notes.write_text("notes\n")
    run.log_artifact(str(notes))
    notes.unlink()  # the spool kept its own copy
print("script done", flush=True)
if when == "end":
    kill_server()
    os._exit(code)  # no atexit: MLflow's end_run would wait for the server to come back
sys.exit(code)
