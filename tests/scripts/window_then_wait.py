"""One closed code window ('warmup'), then writes its pid to argv[1] and waits until the file
argv[2] exists (exit 0): a script stopped from outside after a window it completed."""
import os
import sys
import time
from pathlib import Path

from radtrack import RADTBenchmark

with RADTBenchmark() as run:
    with run.window("warmup"):
        time.sleep(0.3)
    Path(sys.argv[1]).write_text(str(os.getpid()))
    print("waiting for", sys.argv[2], flush=True)
    while not Path(sys.argv[2]).exists():
        time.sleep(0.1)
print("released", flush=True)
