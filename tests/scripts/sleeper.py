"""Writes its pid (and a child's) to a file, then sleeps until killed."""
import os
import subprocess
import sys
import time

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1], "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
print("sleeping", flush=True)
while True:
    time.sleep(0.1)
