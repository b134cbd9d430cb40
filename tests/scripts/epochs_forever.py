import time

from radtrack import RADTBenchmark

with RADTBenchmark() as run:
    epoch = 0
    while True:
        run.log_metric("acc", epoch / 100, epoch)
        epoch += 1
        time.sleep(0.05)
