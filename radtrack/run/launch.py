"""Run one workload: its rows' processes released together, listeners, sink, statuses.

``run_workload`` gets the rows of one (Experiment, Workload), their already-created
MLflow runs and the placement environment of each row; it returns when every row has
ended and everything it recorded is stored (or safely spooled for ``radtrack sync``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.run.envcapture import capture_in_background
from radtrack.run.listen import READY_TIMEOUT_S, ListenerProc, hello_tags, start_listeners
from radtrack.run.procs import GroupStopper, prefix_for, pump, reap_group, set_parent_death_signal
from radtrack.script import env as renv
from radtrack.script.bootstrap import BARRIER_FD, BARRIER_ID, RELEASE_FILE, pipe_id
from radtrack.spec import RunSpec
from radtrack.store import schema
from radtrack.store.sink import Sink

if TYPE_CHECKING:
    from mlflow import MlflowClient

PROGRESS_EVERY_S = 30.0


def say(text: str) -> None:
    print(f"[radtrack] {text}", file=sys.stderr, flush=True)


@dataclass
class Row:
    """One row of a workload while it runs."""

    spec: RunSpec
    run_id: str
    env: dict[str, str]  # full environment of the workload process
    listeners: list[str]  # sampling listeners to attach
    wrappers: list[type]  # command-wrapping listener classes (nsys, ncu)
    folder: Path
    proc: subprocess.Popen[bytes] | None = None
    stopper: GroupStopper | None = None
    pumps: list[threading.Thread] = field(default_factory=list)
    lprocs: list[ListenerProc] = field(default_factory=list)
    sink: Sink | None = None
    started: float = 0.0  # wall clock, when measurement started
    ended: float = 0.0
    listening: bool = False
    stopped_by: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    status: str = ""
    exit_code: int | None = None
    params: dict[str, str] = field(default_factory=dict)  # stored at the end (store_row_params)
    exp_id: str = ""
    record_tags: dict[str, str] = field(default_factory=dict)  # the tags it was created with
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or self.spec.run_name or self.spec.default_run_name()

    @property
    def devices(self) -> list[str]:
        cvd = self.env.get("CUDA_VISIBLE_DEVICES", "")
        return [d.strip() for d in cvd.split(",") if d.strip()]


class Interrupt:
    """Set by the launcher's SIGINT/SIGTERM handler; checked by the workload loop."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum = 0

    def __call__(self, signum: int, _frame: object) -> None:
        self.signum = signum
        self.event.set()


def command_for(spec: RunSpec) -> list[str]:
    return [sys.executable, "-m", "radtrack.script.bootstrap", str(spec.file), *spec.args]


def run_workload(client: MlflowClient, uri: str, rows: list[Row], interrupt: Interrupt,
                 grace: float = 10.0, spool_root: Path | None = None) -> None:
    """Run ``rows`` together; fill in each row's status, exit code, tags. Never raises for a
    failing script: a row's failure does not stop its siblings."""
    spool_root = spool_root or renv.radtrack_home() / "spool"
    prefixed = len(rows) > 1
    barrier_w: list[int] = []
    try:
        for i, row in enumerate(rows):
            row.folder.mkdir(parents=True, exist_ok=True)
            row.sink = Sink(client, row.run_id, spool_root, uri)
            row.sink.start()
            r, w = os.pipe()
            barrier_w.append(w)
            row.env[BARRIER_FD] = str(r)
            row.env[BARRIER_ID] = pipe_id(r)
            row.env[RELEASE_FILE] = str(row.folder / "released")
            row.env[renv.WINDOWS_FILE] = str(row.folder / "windows.jsonl")
            if row.spec.manual:
                row.env[renv.CONTROL_DIR] = str(row.folder / "control")
            argv = command_for(row.spec)
            for cls in row.wrappers:
                from radtrack.listeners.base import ListenerConfig

                prof = cls(ListenerConfig(interval=row.spec.interval, devices=row.devices,
                                          outdir=row.folder / "profiles"))
                (row.folder / "profiles").mkdir(exist_ok=True)
                argv = prof.wrap(argv)
                row.tags.update(prof.tags())
                row.tags[f"radtrack.listener.{prof.name}"] = "ok"
            log = (row.folder / "output.log").open("wb")
            log_lock = threading.Lock()
            try:
                row.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            stdin=subprocess.DEVNULL, env=row.env, pass_fds=(r,),
                                            start_new_session=True,
                                            preexec_fn=set_parent_death_signal)
            finally:
                os.close(r)
                if row.proc is None:
                    log.close()
            row.stopper = GroupStopper(row.proc, grace)
            prefix = prefix_for(row.spec.letter, i) if prefixed else None
            assert row.proc.stdout is not None and row.proc.stderr is not None
            row.pumps = [pump(row.proc.stdout, sys.stdout.buffer, log, log_lock, prefix),
                         pump(row.proc.stderr, sys.stderr.buffer, log, log_lock, prefix)]
        env_threads = [capture_in_background(row.folder / "environment") for row in rows]

        # Listeners of non-manual rows are up and sampling before the barrier opens.
        for row in rows:
            if not row.spec.manual:
                _start_listeners(row)
        _await_listeners(rows)
        for row in rows:
            if not row.spec.manual:
                row.started = time.time()
    except BaseException:
        _abort_start(rows, barrier_w)
        raise
    for w in barrier_w:
        try:
            os.write(w, b"g")
        except OSError:
            pass  # that process died during start-up; its exit code tells why
        os.close(w)
    released = time.time()
    last_progress = time.monotonic()
    running = set(range(len(rows)))
    while running:
        if interrupt.event.is_set():
            for i in running:
                rows[i].stopped_by = rows[i].stopped_by or "signal"
                rows[i].stopper.request()
        for i in list(running):
            row = rows[i]
            _manual_control(row)
            for lp in row.lprocs:
                change = lp.check()
                if change:
                    row.tags[f"radtrack.listener.{lp.name}"] = change
                    say(f"{row.spec.letter}: listener {lp.name} {change}")
            if row.spec.max_time is not None and not row.stopped_by:
                t0 = row.started or released
                if time.time() - t0 >= row.spec.max_time * 60:
                    row.stopped_by = "max_time"
                    say(f"{row.spec.letter}: max time {row.spec.max_time} min reached, stopping")
                    row.stopper.request()
            row.stopper.tick()
            if row.proc.poll() is not None:
                row.ended = row.ended or time.time()
                running.discard(i)
                reap_group(row.proc.pid)
        if time.monotonic() - last_progress >= PROGRESS_EVERY_S and running:
            last_progress = time.monotonic()
            _progress(rows, running, released)
        time.sleep(0.05)

    for row in rows:
        _finish_row(client, row, env_threads)


def _abort_start(rows: list[Row], barrier_w: list[int]) -> None:
    """Start-up failed part way (a process could not be created, ...): release nothing,
    end what was started, keep what was recorded."""
    for w in barrier_w:
        try:
            os.close(w)  # held rows read EOF and exit without running their script
        except OSError:
            pass
    for row in rows:
        _stop_listeners(row)
        if row.proc is not None:
            try:
                row.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                row.proc.kill()
                row.proc.wait()
        if row.sink is not None:
            row.sink.close(retry_for=5)


def _start_listeners(row: Row) -> None:
    assert row.proc is not None and row.sink is not None
    lenv = {k: v for k, v in row.env.items() if k not in (BARRIER_FD, BARRIER_ID, RELEASE_FILE)}
    from radtrack.listeners.registry import split

    entries = [(name, every or row.spec.interval) for name, every in map(split, row.listeners)]
    # smi and dcgm (NVML GPM) share one sampler process: Listener.shared_sampler
    row.lprocs += start_listeners(entries, row.sink, row.devices, row.proc.pid,
                                  row.folder / "listener-artifacts", lenv)
    row.listening = True


def _await_listeners(rows: list[Row]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    for row in rows:
        for lp in row.lprocs:
            if not lp.wait_ready(deadline) and lp.proc is not None and lp.proc.poll() is None:
                say(f"{row.spec.letter}: listener {lp.name} not ready after {READY_TIMEOUT_S:.0f} s")


def _manual_control(row: Row) -> None:
    """--manual: listeners and timing follow the script's RADTBenchmark context."""
    if not row.spec.manual:
        return
    control = row.folder / "control"
    if not row.listening and not row.started and (control / "start").exists():
        row.started = float((control / "start").read_text() or time.time())
        _start_listeners(row)
    if row.listening and (control / "stop").exists():
        row.ended = float((control / "stop").read_text() or time.time())
        _stop_listeners(row)


def _stop_listeners(row: Row) -> None:
    for lp in row.lprocs:
        lp.stop()
    row.listening = False


def _progress(rows: list[Row], running: set[int], released: float) -> None:
    elapsed = time.time() - released
    done = len(rows) - len(running)
    limits = [r.spec.max_time * 60 for r in rows if r.spec.max_time is not None]
    eta = f", ETA {_hms(max(max(limits) - elapsed, 0))}" if limits else ""
    name = rows[0].spec.default_run_name().rsplit(" ", 1)[0]
    say(f"{name}: {len(running)} running, {done}/{len(rows)} finished, elapsed {_hms(elapsed)}{eta}")


def _hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _finish_row(client: MlflowClient, row: Row, env_threads: list[threading.Thread]) -> None:
    """Stop listeners, drain output, store everything, decide the status."""
    from mlflow.entities import Metric

    from radtrack.store.tracking import set_tags

    assert row.proc is not None and row.sink is not None
    _stop_listeners(row)
    for t in row.pumps:
        t.join(timeout=10)
    code = row.proc.returncode
    row.exit_code = code
    if row.stopped_by == "signal":
        row.status = "KILLED"
    elif row.stopped_by == "max_time" or code == 0:
        row.status = "FINISHED"
    elif code is not None and code < 0:
        row.status = "KILLED"
    else:
        row.status = "FAILED"
    for lp in row.lprocs:
        key = f"radtrack.listener.{lp.name}"
        if lp.gave_up:
            continue
        if key not in row.tags:
            row.tags[key] = "ok" if lp.ready.is_set() else f"failed: {lp.failure or 'no output'}"
        row.tags.update(hello_tags(lp.name, row.sink.hello(lp.name)))
    stored = row.sink.close()
    if not stored:
        say(f"{row.spec.letter}: tracking store unreachable ({row.sink.last_error}); samples kept in "
            f"{row.sink.dir}; run `radtrack sync` to store them")
    released = row.folder / "released"
    start = row.started or (float(released.read_text()) if released.exists() else time.time())
    end = row.ended or time.time()
    row.tags["radtrack.exit_code"] = str(code)
    if row.stopped_by:
        row.tags["radtrack.stopped_by"] = row.stopped_by
    try:
        store_row_params(client, row.run_id, row.params, row.tags)
        set_tags(client, row.run_id, row.tags)
        client.log_batch(row.run_id, metrics=[Metric("summary/duration_s", end - start,
                                                     int(end * 1000), 0)])
        client.log_artifact(row.run_id, str(row.folder / "output.log"), "logs")
        for t in env_threads:
            t.join(timeout=60)
        if (row.folder / "environment").is_dir():
            client.log_artifacts(row.run_id, str(row.folder / "environment"), "environment")
        profiles = row.folder / "profiles"
        if profiles.is_dir() and any(profiles.iterdir()):
            client.log_artifacts(row.run_id, str(profiles), "profiles")
        client.set_terminated(row.run_id, row.status, end_time=int(end * 1000))
    except Exception as exc:
        say(f"{row.spec.letter}: could not store the end of run {row.run_id}: {exc}")


def store_row_params(client: MlflowClient, run_id: str, params: dict[str, str],
                     tags: dict[str, str]) -> None:
    """The params radtrack derives from the command line, stored after the script ran so
    they never collide with what it logged: where the script set a param itself its value
    wins and radtrack's goes to the tag ``radtrack.param.<name>``."""
    from radtrack.store.tracking import log_params

    if not params:
        return
    have = client.get_run(run_id).data.params
    for key, value in params.items():
        if key in have and have[key] != value:
            tags[schema.PARAM_TAG_PREFIX + key] = value
    log_params(client, run_id, {k: v for k, v in params.items() if k not in have})
