"""Fills the file system holding FOLDER to its last byte, keeps it full HOLD seconds, frees it,
then runs AFTER seconds more; prints when it filled and freed it (unix seconds).

Usage: fill_disk.py FOLDER HOLD AFTER
"""
import os
import sys
import time

folder, hold, after = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
time.sleep(1.5)  # sampled before the disk fills
path = os.path.join(folder, "filler")
with open(path, "wb", buffering=0) as f:
    for size in (1 << 16, 4096, 1):
        while True:
            try:
                if not f.write(b"\0" * size):
                    break
            except OSError:
                break
print(f"full at {time.time()}", flush=True)
time.sleep(hold)
os.unlink(path)
print(f"freed at {time.time()}", flush=True)
time.sleep(after)
