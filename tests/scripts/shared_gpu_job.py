"""A job that 'trains' for --seconds at JOB_RATE samples/s (logged as its throughput; an
environment variable so solo and co-located rows keep the same params); --tag names it for
the NVML scenario doubles (tests/doubles/nvml_scenario.py). JOB_LINGER=s holds the run open
s seconds after its last log with no work logged (a stop that drains a GPU queue)."""
import argparse
import os
import time

from radtrack import RADTBenchmark

p = argparse.ArgumentParser()
p.add_argument("--tag", required=True)
p.add_argument("--rate", type=float, default=float(os.environ.get("JOB_RATE", "100")))
p.add_argument("--seconds", type=float, default=3.0)
a = p.parse_args()
with RADTBenchmark() as run:
    t0 = time.time()
    step = 0
    while time.time() - t0 < a.seconds:
        time.sleep(0.25)
        run.log_metric("throughput_samples_per_s", a.rate, step)
        step += 1
    time.sleep(float(os.environ.get("JOB_LINGER", "0")))
