"""Sleeps 2 s between a START and an END line (epoch seconds) appended to the file named by
argv[1]: the tracked script of benchmarks/phase_profile.py's fixed-cost profile."""
import sys
import time

with open(sys.argv[1], "a") as f:
    f.write(f"START {time.time()}\n")
time.sleep(2)
with open(sys.argv[1], "a") as f:
    f.write(f"END {time.time()}\n")
