"""radtrack/run/stopping.py over real child processes: each escalation sends its signals in
order, waits its grace, and reaps."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from radtrack.run import stopping

# a child that ignores the given signals and says so once it does
IGNORING = ("import signal, sys, time\n"
            "for s in sys.argv[1:]: signal.signal(int(s), signal.SIG_IGN)\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n")


def _child(*ignored: int, **kw: object) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", IGNORING, *map(str, ignored)],
                            stdout=subprocess.PIPE, start_new_session=True, **kw)  # type: ignore[call-overload]
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def test_stop_escalates_after_the_grace_and_reaps() -> None:
    proc = _child(signal.SIGTERM)
    started = time.monotonic()
    stopping.stop(proc, stopping.TERM_THEN_KILL, grace=0.3)
    assert proc.returncode == -signal.SIGKILL
    assert time.monotonic() - started >= 0.3


def test_stop_takes_the_first_signal_that_works_and_may_wait_first() -> None:
    proc = _child()
    stopping.stop(proc, stopping.TERM_THEN_KILL, grace=5)
    assert proc.returncode == -signal.SIGTERM
    held = _child()
    stopping.stop(held, (None, signal.SIGKILL), grace=0.1)  # waits, then kills
    assert held.returncode == -signal.SIGKILL
    stopping.stop(held, stopping.TERM_THEN_KILL, grace=1)  # already ended: nothing
    stopping.stop(None, stopping.TERM_THEN_KILL, grace=1)


def test_group_stopper_steps_sigint_sigterm_sigkill_one_grace_apart() -> None:
    proc = _child(signal.SIGINT, signal.SIGTERM)
    stopper = stopping.GroupStopper(proc, grace=0.2)
    stopper.tick()
    assert stopper.stage == 0 and proc.poll() is None  # nothing before request()
    stopper.request()
    stopper.tick()
    assert stopper.stage == 1 and proc.poll() is None  # SIGINT ignored, grace not over
    time.sleep(0.25)
    stopper.tick()
    assert stopper.stage == 2 and proc.poll() is None  # SIGTERM ignored too
    time.sleep(0.2)
    stopper.tick()
    assert stopper.stage == 3
    assert proc.wait(10) == -signal.SIGKILL


def test_reap_group_ends_what_the_leader_left_behind() -> None:
    leader = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys\n"
         f"p = subprocess.Popen([sys.executable, '-c', {IGNORING!r}, '{int(signal.SIGTERM)}'],"
         " stdout=subprocess.PIPE)\n"
         "p.stdout.readline()\n"  # it ignores SIGTERM now
         "print(p.pid, flush=True)\n"],
        stdout=subprocess.PIPE, start_new_session=True)
    assert leader.stdout is not None
    orphan = int(leader.stdout.readline())
    assert leader.wait(10) == 0
    assert stopping.signal_group(leader.pid, 0)  # the orphan keeps the group alive
    stopping.reap_group(leader.pid, timeout=0.3)  # SIGTERM is ignored: SIGKILL ends it
    assert _dead(orphan)


def _dead(pid: int) -> bool:
    """Gone, or a zombie its new parent has not reaped yet."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_stopped_process_acts_on_its_stop_signal_at_once() -> None:
    """SIGSTOPped (a debugger, a job manager, ``kill -STOP``): SIGCONT follows each signal
    but SIGKILL, so it ends by the first one, within the grace, not killed after it."""
    proc = _child()
    proc.send_signal(signal.SIGSTOP)
    started = time.monotonic()
    assert stopping.stop(proc, stopping.TERM_THEN_KILL, grace=5) == signal.SIGTERM
    assert proc.returncode == -signal.SIGTERM and time.monotonic() - started < 4
    group = _child()
    group.send_signal(signal.SIGSTOP)
    stopper = stopping.GroupStopper(group, grace=5)
    stopper.request()
    assert group.wait(4) == -signal.SIGINT  # the first step, not the SIGKILL 10 s on
