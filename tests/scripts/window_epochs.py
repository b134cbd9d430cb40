"""Three 'epochs' of --seconds each in code windows, a nested 'eval' window in each, and
one 'warmup' block opened with begin_window/end_window."""
import argparse
import time

from radtrack import RADTBenchmark

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=1.0)
p.add_argument("--tag", default="w")
a = p.parse_args()
with RADTBenchmark() as run:
    run.begin_window("warmup")
    time.sleep(0.3)
    run.end_window("warmup")
    for epoch in range(3):
        with run.window("epoch", step=epoch):
            time.sleep(a.seconds * 0.7)
            with run.window("eval", step=epoch):
                time.sleep(a.seconds * 0.3)
            run.log_metric("loss", 1.0 / (epoch + 1), epoch)  # inside: epochs tile their span
    with run.window("tiny"):
        pass  # far below the power sensor's 100-ms refresh
