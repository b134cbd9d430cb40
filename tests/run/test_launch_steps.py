"""The launcher's steps below the CLI (radtrack/run/start, supervise, finish), over fake
processes and listeners: status rules, limits, signals, the order of a row's end."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from radtrack.run import supervise as supervise_mod
from radtrack.run.row_end import end_row
from radtrack.run.row_status import decide_status
from radtrack.run.rows import Row
from radtrack.run.supervise import hms, supervise
from radtrack.spec import RunSpec
from radtrack.store.diskfull import Drops


class FakeProc:
    """A process that ends after ``polls`` polls with ``code`` (or when stopped)."""

    def __init__(self, polls: int, code: int = 0):
        self.polls, self.code, self.pid = polls, code, 999_999
        self.returncode: int | None = None

    def poll(self) -> int | None:
        self.polls -= 1
        if self.polls <= 0 and self.returncode is None:
            self.returncode = self.code
        return self.returncode


class FakeStopper:
    def __init__(self, proc: FakeProc):
        self.proc, self.requested, self.ticks = proc, 0, 0

    def request(self) -> None:
        self.requested += 1
        self.proc.code, self.proc.polls = -15, 0

    def tick(self) -> None:
        self.ticks += 1


class FakeListener:
    sampler = None  # runs in a process of its own

    def __init__(self, name: str, change: str | None = None):
        self.name, self.change, self.stopped = name, change, False
        self.gave_up, self.failure, self.killed_at_stop = False, "", False
        self.ready = threading.Event()
        self.ready.set()

    def check(self) -> str | None:
        change, self.change = self.change, None
        return change

    def stop(self) -> None:
        self.stopped = True


class FakeSink:
    drops = Drops("spool")  # nothing dropped

    def __init__(self) -> None:
        self.start: float | None = None
        self.end: float | None = None

    def hello(self, _name: str) -> None:
        return None

    def set_start(self, start: float) -> None:
        self.start = start

    def set_end(self, clock) -> float:
        self.end = clock() if callable(clock) else clock
        return self.end


def _row(tmp_path: Path, letter: str, proc: FakeProc, max_time: float | None = None) -> Row:
    spec = RunSpec(experiment="e", workload=1, letter=letter, file=tmp_path / "s.py", args=[],
                   max_time=max_time)
    row = Row(spec=spec, key=letter, env={}, listeners=[], wrappers=[], folder=tmp_path / letter)
    row.proc, row.stopper = proc, FakeStopper(proc)  # type: ignore[assignment]
    row.lprocs = [FakeListener("top")]  # type: ignore[list-item]
    row.sink = FakeSink()  # type: ignore[assignment]
    return row


@pytest.fixture(autouse=True)
def _no_reap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervise_mod, "reap_group", lambda pid: None)


@pytest.mark.parametrize(("stopped_by", "code", "status"), [
    ("", 0, "FINISHED"), ("", 3, "FAILED"), ("", -9, "KILLED"), ("", None, "FAILED"),
    ("signal", 0, "KILLED"), ("max_time", -15, "FINISHED"), ("max_epoch", 0, "FINISHED"),
])
def test_status_follows_exit_code_unless_radtrack_stopped_it(stopped_by: str, code: int | None,
                                                             status: str) -> None:
    assert decide_status(stopped_by, code) == status


def test_supervise_waits_for_every_row_and_stamps_its_end(tmp_path: Path) -> None:
    clock = iter(float(t) for t in range(100, 1000))
    a, b = _row(tmp_path, "A", FakeProc(2)), _row(tmp_path, "B", FakeProc(5, code=1))
    supervise([a, b], threading.Event(), released=100.0, clock=lambda: next(clock), tick=0)
    assert a.proc.returncode == 0 and b.proc.returncode == 1
    assert 100 <= a.ended < b.ended
    assert a.stopper.requested == b.stopper.requested == 0


def test_a_row_s_span_and_listeners_end_with_its_process_while_its_partner_runs_on(tmp_path: Path) -> None:
    now = [100.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    class StampedListener(FakeListener):
        def stop(self) -> None:
            self.stopped_at = self.stopped_at if self.stopped else now[0]
            self.stopped = True

    class TickingProc(FakeProc):  # each poll of the partner is a second of wall clock
        def poll(self) -> int | None:
            now[0] += 1.0
            return super().poll()

    short, long = _row(tmp_path, "A", FakeProc(3)), _row(tmp_path, "B", TickingProc(40))
    for row in (short, long):
        row.started, row.listening = 50.0, True
        row.lprocs = [StampedListener("top"), StampedListener("smi")]  # type: ignore[list-item]
    seen: list[bool] = []
    real = supervise_mod.end_span

    def end_span(row, clock):
        threads = real(row, clock)
        for t in threads:
            t.join()
        seen.append(long.proc.returncode is None)  # the partner still runs
        return threads

    supervise_mod.end_span, saved = end_span, supervise_mod.end_span
    try:
        supervise([short, long], threading.Event(), released=50.0, clock=clock, tick=0)
    finally:
        supervise_mod.end_span = saved
    assert seen[0] is True
    assert short.sink.start == long.sink.start == 50.0
    assert short.sink.end == short.ended < long.ended == long.sink.end
    for lp in short.lprocs:  # stopped at the short row's end, long before its partner's
        assert lp.stopped and lp.stopped_at <= short.ended + 1 < long.ended
    assert not short.listening and all(lp.stopped for lp in long.lprocs)


def test_supervise_stops_every_row_on_a_signal(tmp_path: Path) -> None:
    rows = [_row(tmp_path, "A", FakeProc(10**6)), _row(tmp_path, "B", FakeProc(10**6))]
    stop = threading.Event()
    stop.set()
    supervise(rows, stop, released=0.0, tick=0)
    assert [r.stopped_by for r in rows] == ["signal", "signal"]
    assert all(r.stopper.requested for r in rows)


def test_supervise_stops_a_row_at_its_max_time_only(tmp_path: Path) -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 6.0
        return now[0]

    limited = _row(tmp_path, "A", FakeProc(10**6), max_time=0.5)  # 30 s
    other = _row(tmp_path, "B", FakeProc(40))
    supervise([limited, other], threading.Event(), released=0.0, clock=clock, tick=0)
    assert limited.stopped_by == "max_time" and limited.stopper.requested == 1
    assert other.stopped_by == "" and other.stopper.requested == 0


def test_supervise_records_a_listener_restart(tmp_path: Path) -> None:
    row = _row(tmp_path, "A", FakeProc(3))
    row.lprocs = [FakeListener("smi", change="restarted 1x: died")]  # type: ignore[list-item]
    supervise([row], threading.Event(), released=0.0, tick=0)
    assert row.tags["radtrack.listener.smi"] == "restarted 1x: died"


def test_end_row_decides_status_and_tags_without_the_store(tmp_path: Path) -> None:
    row = _row(tmp_path, "A", FakeProc(1, code=2))
    row.proc.poll()
    row.stopped_by = ""
    end_row(row)
    assert row.status == "FAILED" and row.exit_code == 2
    assert row.tags["radtrack.exit_code"] == "2" and row.tags["radtrack.listener.top"] == "ok"
    assert all(lp.stopped for lp in row.lprocs)


def test_hms() -> None:
    assert hms(3725.9) == "1:02:05"


@pytest.mark.parametrize(("listeners", "manual", "held"), [
    (["smi", "dcgm@1", "top"], False, False),  # smi reads its energy back to the run's start
    (["top", "tegrastats"], False, True),  # tegrastats' power rails keep no history
    (["tegrastats"], True, False),  # a --manual row starts no listener at its release
    (["no-such-listener"], False, False),  # fails in its own process, as before
])
def test_only_listeners_that_cannot_read_back_hold_the_scripts(tmp_path, listeners, manual, held):
    from radtrack.run.start import holds_start

    spec = RunSpec(experiment="e", workload=1, file=tmp_path / "s.py", manual=manual)
    row = Row(spec=spec, key="a", env={}, listeners=listeners, wrappers=[], folder=tmp_path / "a")
    assert holds_start([row]) is held


def test_listeners_are_told_the_run_start(tmp_path, monkeypatch):
    """At the release a row's listeners reach back to now; a --manual row's, started when
    its RADTBenchmark context began, to that context's start (the control file's time)."""
    import time

    from radtrack.run import start as start_mod

    seen: list[float] = []
    monkeypatch.setattr(start_mod, "start_listeners", lambda *a, since=None, **k: seen.append(since) or [])
    for manual, started in ((False, 0.0), (True, 1_795_000_000.5)):
        spec = RunSpec(experiment="e", workload=1, file=tmp_path / "s.py", manual=manual)
        row = Row(spec=spec, key="a", env={}, listeners=["smi"], wrappers=[], folder=tmp_path / "a")
        row.proc, row.sink, row.started = FakeProc(5), object(), started  # type: ignore[assignment]
        before = time.time()
        start_mod.start_row_listeners(row)
        assert row.listening
        if manual:
            assert seen[-1] == started
        else:
            assert before <= seen[-1] <= time.time()
