"""--manual: 1.5 s of 'loading' outside the context, 1.5 s of work inside."""
import time

from radtrack import RADTBenchmark

time.sleep(1.5)
with RADTBenchmark() as run:
    x = 0
    end = time.time() + 1.5
    while time.time() < end:
        x += 1
    run.log_metric("work", float(x))
time.sleep(1.5)
