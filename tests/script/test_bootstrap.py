"""The workload bootstrap holds the script at the barrier until the launcher releases it,
and runs without a barrier when its pipe is not the one the launcher named."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from radtrack.script.bootstrap import BARRIER_FD, BARRIER_ID, RELEASE_FILE, pipe_id


def _start(tmp_path: Path, ident: str | None) -> tuple[subprocess.Popen, int, Path]:
    script = tmp_path / "touch.py"
    marker = tmp_path / "ran"
    script.write_text(f"import sys\nopen({str(marker)!r}, 'w').write(' '.join(sys.argv))\n")
    r, w = os.pipe()
    env = {**os.environ, BARRIER_FD: str(r), RELEASE_FILE: str(tmp_path / "released")}
    env[BARRIER_ID] = ident if ident is not None else pipe_id(r)
    p = subprocess.Popen([sys.executable, "-m", "radtrack.script.bootstrap", str(script), "a b", "--x"],
                         env=env, pass_fds=(r,))
    os.close(r)
    return p, w, marker


def test_held_until_released(tmp_path: Path) -> None:
    p, w, marker = _start(tmp_path, None)
    time.sleep(1.5)
    assert p.poll() is None and not marker.exists()  # waiting at the barrier
    t = time.time()
    os.write(w, b"g")
    os.close(w)
    assert p.wait(30) == 0
    assert marker.read_text().endswith("touch.py a b --x")  # argv as given
    assert abs(float((tmp_path / "released").read_text()) - t) < 5


def test_launcher_gone_before_release(tmp_path: Path) -> None:
    p, w, marker = _start(tmp_path, None)
    os.close(w)  # EOF: the launcher died
    assert p.wait(30) == 130 and not marker.exists()


def test_foreign_descriptor_is_not_read(tmp_path: Path) -> None:
    p, w, marker = _start(tmp_path, "0:0")  # as if a wrapper had reused the number
    assert p.wait(30) == 0 and marker.exists()
    os.close(w)
