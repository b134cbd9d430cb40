"""Starts two child scripts as new Python processes, each making its own MLflow run."""
import subprocess
import sys
from pathlib import Path

child = Path(__file__).with_name("child.py")
for i in range(2):
    subprocess.run([sys.executable, str(child), f"child-{i}"], check=True)
