"""Starts a child script with a rebuilt environment that drops radtrack's hook (PYTHONPATH)."""
import os
import subprocess
import sys
from pathlib import Path

env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
subprocess.run([sys.executable, str(Path(__file__).with_name("child.py")), "lost-child"], env=env,
               check=True)
