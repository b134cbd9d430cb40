"""Writes its pid to argv[1] and waits until the file argv[2] exists (exit 0). On SIGINT it
'saves a checkpoint' for argv[3] seconds before exiting 0 (a script slower to stop than
SLURM's KillWait); SIGTERM ends it at once (Python's default)."""
import os
import signal
import sys
import time
from pathlib import Path

checkpoint_s = float(sys.argv[3])


def on_sigint(signum, frame):
    print(f"SIGINT: checkpointing for {checkpoint_s:g} s", flush=True)
    time.sleep(checkpoint_s)
    print("checkpoint saved", flush=True)
    sys.exit(0)


signal.signal(signal.SIGINT, on_sigint)
Path(sys.argv[1]).write_text(str(os.getpid()))
print("waiting for", sys.argv[2], flush=True)
while not Path(sys.argv[2]).exists():
    time.sleep(0.1)
print("released", flush=True)
