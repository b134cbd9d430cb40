"""Writes its pid to argv[1], then waits until the file argv[2] exists (exit 0)."""
import os
import sys
import time
from pathlib import Path

Path(sys.argv[1]).write_text(str(os.getpid()))
print("waiting for", sys.argv[2], flush=True)
while not Path(sys.argv[2]).exists():
    time.sleep(0.1)
print("released", flush=True)
