"""Prints the CPUs this process may run on (os.sched_getaffinity), then burns CPU briefly."""
import json
import os
import time

cpus = sorted(os.sched_getaffinity(0))
print("affinity", len(cpus), json.dumps(cpus), flush=True)
end = time.time() + 1.0
while time.time() < end:
    pass
