"""Burn CPU for N seconds so the top listener has something to see."""
import sys
import time

end = time.time() + float(sys.argv[1] if len(sys.argv) > 1 else 2)
x = 0
while time.time() < end:
    x += 1
print("busy done", x > 0)
