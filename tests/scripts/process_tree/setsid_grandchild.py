"""Leaves a grandchild in its own session (setsid) holding the script's output, and exits."""
import subprocess
import sys

proc = subprocess.Popen(["setsid", "sleep", "120"])
print(f"grandchild {proc.pid}", flush=True)
sys.exit(0)
