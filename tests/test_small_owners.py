"""The one liveness check and the one atomic write (radtrack/liveness.py, radtrack/atomic.py)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import pytest

from radtrack.atomic import replacing, write_atomic
from radtrack.liveness import pid_alive, process_state


def test_a_running_process_is_alive_and_an_exited_one_is_not():
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pid_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not pid_alive(child.pid)
    assert not pid_alive(0) and not pid_alive(-1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="zombies are read from /proc")
def test_a_zombie_counts_as_exited():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while process_state(child.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process_state(child.pid) == "Z"  # exited, not reaped yet
    assert not pid_alive(child.pid)
    child.wait()


def test_another_users_process_is_alive():
    assert pid_alive(1)  # init: PermissionError for a user, plain success for root


def test_write_atomic_replaces_whole_and_keeps_the_mode(tmp_path):
    target = tmp_path / "sheet.csv"
    target.write_text("old\n")
    target.chmod(0o600)
    write_atomic(target, "new\n", sync_folder=True)
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["sheet.csv"]  # no temp file left


def test_write_atomic_leaves_the_target_as_it_was_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "state.json"
    target.write_bytes(b"{}")

    def broken(*_args, **_kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, b'{"a": 1}')
    assert target.read_bytes() == b"{}"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_write_atomic_makes_a_new_file_readable(tmp_path):
    path = write_atomic(tmp_path / "new.txt", b"x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_replacing_puts_a_made_file_in_place_whole_or_not_at_all(tmp_path):
    """A file the caller makes itself (a copy, a database built there): in place on a clean
    exit, the target as it was and no temp file left after a failure."""
    target = tmp_path / "store.db"
    target.write_bytes(b"old")
    with replacing(target) as tmp:
        assert tmp.parent == tmp_path and tmp != target
        tmp.write_bytes(b"new")
        assert target.read_bytes() == b"old"  # nothing visible before the end
    assert target.read_bytes() == b"new"
    named = tmp_path / ".store.db.repair.tmp"
    with pytest.raises(RuntimeError, match="migration refused"), replacing(target, tmp=named) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("migration refused")
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["store.db"]
