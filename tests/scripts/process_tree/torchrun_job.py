"""Runs ``torchrun --nproc_per_node 2 rank.py`` (torchrun next to this Python), as a user's
launcher script would; its arguments go to the ranks (``--backend nccl`` on GPUs)."""
import subprocess
import sys
from pathlib import Path

torchrun = Path(sys.executable).with_name("torchrun")
rank = Path(__file__).with_name("torchrun_rank.py")
subprocess.run([str(torchrun), "--nproc_per_node", "2", "--standalone", str(rank), *sys.argv[1:]],
               check=True)
