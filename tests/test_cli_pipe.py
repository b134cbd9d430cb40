"""A subcommand whose reader has gone (``radtrack report EXP | head``) ends quietly, exit 0,
through the real entry point: no BrokenPipeError traceback."""

from __future__ import annotations

import os
import subprocess
import sys


def test_a_closed_pipe_ends_a_subcommand_quietly() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: every write fails (EPIPE)
    try:
        p = subprocess.run([sys.executable, "-m", "radtrack", "listeners"], stdout=write,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, p.stderr
