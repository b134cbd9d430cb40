"""Runs ``accelerate launch`` (next to this Python) with two processes on CPU, as a user's
launcher script would: accelerate's multi-process launcher (torch's elastic agent) starts
accelerate_rank.py twice, which talks gloo (``Accelerator(cpu=True)``). Through accelerate's
``accelerate-launch`` entry point: the same launch command as ``accelerate launch``, without
the imports of accelerate's other subcommands (7 CPU-seconds on the 2-core host)."""
import socket
import subprocess
import sys
from pathlib import Path

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
accelerate = Path(sys.executable).with_name("accelerate-launch")
rank = Path(__file__).with_name("accelerate_rank.py")
subprocess.run([str(accelerate), "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(port),
                str(rank)], check=True)
