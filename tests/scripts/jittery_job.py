"""shared_gpu_job.py with run-to-run spread: 'trains' for --seconds at JOB_RATE samples/s,
times a factor drawn once per run from [1 - JOB_JITTER, 1 + JOB_JITTER] (default 0.03), so
repeats of one configuration differ as real ones do and their intervals have a width;
--tag names it for the NVML scenario doubles (tests/doubles/nvml_scenario.py)."""
import argparse
import os
import random
import time

from radtrack import RADTBenchmark

p = argparse.ArgumentParser()
p.add_argument("--tag", required=True)
p.add_argument("--seconds", type=float, default=2.0)
a = p.parse_args()
jitter = float(os.environ.get("JOB_JITTER", "0.03"))
rate = float(os.environ.get("JOB_RATE", "100")) * random.uniform(1 - jitter, 1 + jitter)
with RADTBenchmark() as run:
    t0 = time.time()
    step = 0
    while time.time() - t0 < a.seconds:
        time.sleep(0.25)
        run.log_metric("throughput_samples_per_s", rate, step)
        step += 1
