"""Prints its arguments and the GPUs it was given, then burns CPU briefly for the listeners."""
import json
import os
import sys
import time

print("argv", json.dumps(sys.argv[1:]), flush=True)
print("visible", os.environ.get("CUDA_VISIBLE_DEVICES", "-"), flush=True)
end = time.time() + 1.5
while time.time() < end:
    pass

