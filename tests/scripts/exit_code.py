import sys

print("about to fail", flush=True)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
