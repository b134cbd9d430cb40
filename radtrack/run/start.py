"""Start a workload's rows: processes held at one barrier, their listeners, then the release.

Each row's script runs in ``python -m radtrack.script.bootstrap``, held on a pipe until every
row's process exists; listeners follow each row's process tree from its PID. Nothing here
waits for MLflow: the runs are created alongside (radtrack/run/record.py) while the scripts
already run, and the sinks spool until then.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.run import stopping
from radtrack.run.listen import READY_TIMEOUT_S, start_listeners
from radtrack.run.procs import prefix_for, pump
from radtrack.run.stopping import GroupStopper, set_parent_death_signal
from radtrack.script import env as renv
from radtrack.script import handshake
from radtrack.script.bootstrap import BARRIER_FD, BARRIER_ID, RELEASE_FILE, pipe_id
from radtrack.store.sink import Sink
from radtrack.vocab import schema

if TYPE_CHECKING:
    from radtrack.run.rows import Row


def say(text: str) -> None:
    print(f"[radtrack] {text}", file=sys.stderr, flush=True)


#: the folder whose sitecustomize.py gives every Python process of the script's tree the
#: run_events hook (radtrack/script/hook/sitecustomize.py; docs/mlflow-code.md)
HOOK_DIR = Path(__file__).resolve().parents[1] / "script" / "hook"


def tree_env(row: Row) -> dict[str, str]:
    """The script process's environment: the row's, with the hook folder first on
    ``PYTHONPATH`` (the user's entries kept after it) and the row's tree marker, by which
    radtrack finds the processes the script left behind (stopping.leftovers). Listeners get
    ``row.env`` without either."""
    e = dict(row.env)
    theirs = e.get("PYTHONPATH", "")
    # kept as given (an empty entry is the working folder), our folder not twice
    kept = [p for p in theirs.split(os.pathsep) if p != str(HOOK_DIR)] if theirs else []
    e["PYTHONPATH"] = os.pathsep.join([str(HOOK_DIR), *kept])
    e[renv.TREE] = row.key
    return e


def command_for(script: Path, args: list[str]) -> list[str]:
    """The workload process's command line (before any profiler wraps it)."""
    return [sys.executable, "-m", "radtrack.script.bootstrap", str(script), *args]


def spawn_rows(rows: list[Row], grace: float, spool_root: Path) -> list[int]:
    """Every row's sink (spooling, not yet bound to a run) and process, held at the barrier;
    returns the barrier's write ends (one per row)."""
    prefixed = len(rows) > 1
    barrier_w: list[int] = []
    for i, row in enumerate(rows):
        row.folder.mkdir(parents=True, exist_ok=True)
        row.sink = Sink.unbound(spool_root, row.key)
        row.sink.hold()  # nothing is the run's before its start (radtrack/run/supervise.py)
        r, w = os.pipe()
        barrier_w.append(w)
        row.env[BARRIER_FD] = str(r)
        row.env[BARRIER_ID] = pipe_id(r)
        row.env[RELEASE_FILE] = str(row.folder / "released")
        row.env[renv.WINDOWS_FILE] = str(row.folder / "windows.jsonl")
        row.env[handshake.ROW_DIR] = str(row.folder)
        if row.spec.manual:
            row.env[renv.CONTROL_DIR] = str(row.folder / "control")
        keep_long_params(row)
        argv = command_for(row.spec.file, row.spec.args)
        for cls in row.wrappers:
            from radtrack.listeners.base import ListenerConfig

            prof = cls(ListenerConfig(interval=row.spec.interval, devices=row.devices,
                                      outdir=row.folder / schema.PROFILES_DIR))
            (row.folder / schema.PROFILES_DIR).mkdir(exist_ok=True)
            argv = prof.wrap(argv)
            row.tags.update(prof.tags())
            row.tags[schema.listener_tag(prof.name)] = "ok"
        log = (row.folder / schema.LOG_FILE).open("wb")
        log_lock = threading.Lock()
        try:
            row.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, env=tree_env(row), pass_fds=(r,),
                                        start_new_session=True,
                                        preexec_fn=set_parent_death_signal)
        finally:
            os.close(r)
            if row.proc is None:
                log.close()
        row.stopper = GroupStopper(row.proc, grace, before=_stop_note(row))
        prefix = prefix_for(row.spec.letter, i) if prefixed else None
        assert row.proc.stdout is not None and row.proc.stderr is not None
        row.pumps = [pump(row.proc.stdout, sys.stdout.buffer, log, log_lock, prefix),
                     pump(row.proc.stderr, sys.stderr.buffer, log, log_lock, prefix)]
    return barrier_w


def keep_long_params(row: Row) -> None:
    """The row's command-line params longer than MLflow keeps (stored cut: store/runs.py
    row_params): their whole values kept for the end of the row, as the script's own are
    (script/run_events.py keep_param; bound in radtrack/postrun/script_runs.py)."""
    import shlex

    from radtrack.script.params import over_long, parse_script_args
    from radtrack.script.run_events import keep_param

    full = parse_script_args(row.spec.args, cut=False)
    full["command"] = shlex.join(command_for(row.spec.file, row.spec.args))
    for key, value in over_long(full).items():
        keep_param("", key, value, events=str(row.folder / "mlflow-runs.jsonl"), folder=row.folder)


def _stop_note(row: Row) -> Callable[[], None]:
    """Before radtrack's first stop signal to a row: its stop file (script/handshake.py), so
    the processes of the row end quietly and the script's runs with the row's status."""

    def note() -> None:
        from radtrack.run.row_status import decide_status

        handshake.request_stop(row.folder, row.stopped_by or "signal",
                               decide_status(row.stopped_by or "signal", None))

    return note


def unavailable(tags: dict[str, str], name: str, reason: str) -> None:
    """A named listener this host cannot run: its ``radtrack.listener.<name>`` tag, and a line."""
    tags[schema.listener_tag(name)] = f"unavailable: {reason}"
    say(f"listener {name} unavailable: {reason}")


#: default listeners already said to be left out by this launcher (one line each per launch)
_DEFAULTS_SAID: set[str] = set()


def check_listeners(row: Row) -> None:
    """Keep the row's sampling listeners this host can run (``registry.availability``), once
    its script's process exists: the check starts NVML (tens of ms on a GPU host), which now
    overlaps the script's own start-up instead of coming before it. A listener the row named
    that cannot run gets an ``unavailable: <why>`` tag and a line; one of the defaults (no
    listeners named) is left out with a line, once per launch, and no tag (issue 52: a CPU
    host's runs had left out smi and dcgm without a word)."""
    from radtrack.listeners.registry import availability, split
    from radtrack.store.runs import listeners_param

    kept = []
    for entry in row.listeners:
        name = split(entry).name
        ok = availability(name)
        if ok:
            kept.append(entry)
        elif row.spec.listeners is not None:
            unavailable(row.record_tags, name, ok.reason)
        elif name not in _DEFAULTS_SAID:
            _DEFAULTS_SAID.add(name)
            say(f"listener {name} unavailable: {ok.reason} (a default listener: left out)")
    if kept != row.listeners:
        row.listeners = kept
        row.params["listeners"] = listeners_param(kept + [w.name for w in row.wrappers])


def start_row_listeners(row: Row) -> None:
    """The row's sampling listeners, following its process tree. They start as the script
    does (not before it), so each is told the run's start: smi reads the GPU's energy and
    power back to it (radtrack/listeners/energy_backfill.py). A --manual row's start is its
    RADTBenchmark context's, which the supervisor notices a tick later."""
    assert row.proc is not None and row.sink is not None
    lenv = {k: v for k, v in row.env.items() if k not in (BARRIER_FD, BARRIER_ID, RELEASE_FILE)}
    from radtrack.listeners.registry import split

    entries = [(name, every or row.spec.interval) for name, every in map(split, row.listeners)]
    # smi and dcgm (NVML GPM) share one sampler process: Listener.shared_sampler
    row.lprocs += start_listeners(entries, row.sink, row.devices, row.proc.pid,
                                  row.folder / "listener-artifacts", lenv,
                                  since=row.started or time.time())
    row.listening = True


def holds_start(rows: list[Row]) -> bool:
    """Whether a row has a listener whose first reading its script must wait for
    (``Plugin.holds_start``: a power source that cannot read back to the run's start)."""
    from radtrack.errors import RadtrackError
    from radtrack.listeners.registry import get, split

    def holds(entry: str) -> bool:
        try:
            return bool(get(split(entry).name).holds_start)
        except RadtrackError:  # unknown or broken: it fails in its own process, as before
            return False

    return any(holds(entry) for row in rows for entry in row.listeners if not row.spec.manual)


def await_listeners(rows: list[Row]) -> None:
    """Until every started listener said hello (``--wait-listeners``), or READY_TIMEOUT_S."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    for row in rows:
        for lp in row.lprocs:
            if not lp.wait_ready(deadline) and lp.proc is not None and lp.proc.poll() is None:
                say(f"{row.spec.letter}: listener {lp.name} not ready after {READY_TIMEOUT_S:.0f} s")


def release(barrier_w: list[int]) -> float:
    """Open the barrier: every row's script starts now. Returns the release time."""
    for w in barrier_w:
        try:
            os.write(w, b"g")
        except OSError:
            pass  # that process died during start-up; its exit code tells why
        os.close(w)
    return time.time()


def stop_row_listeners(row: Row) -> None:
    """Stop the row's listeners, each after its final reading (the end of the row's span:
    radtrack/run/supervise.py stops them as its process ends), all at once: a shared
    sampler's members stop together, the others each in a thread. Safe twice."""
    procs = [lp for lp in row.lprocs if lp.sampler is None or lp is lp.sampler.members[0]]
    threads = [threading.Thread(target=lp.stop, daemon=True, name=f"stop-{lp.name}") for lp in procs[1:]]
    for t in threads:
        t.start()
    for lp in procs[:1]:
        lp.stop()
    for t in threads:
        t.join()
    row.listening = False


def abort(rows: list[Row], barrier_w: list[int]) -> None:
    """Start-up failed part way (a process could not be created, ...): release nothing,
    end what was started, keep what was recorded."""
    for w in barrier_w:
        try:
            os.close(w)  # held rows read EOF and exit without running their script
        except OSError:
            pass
    for row in rows:
        stop_row_listeners(row)
        # a held row exits on its own once the barrier closed: wait, kill only if it hangs
        stopping.stop(row.proc, (None, signal.SIGKILL), 10)
        if row.sink is not None:
            row.sink.close(retry_for=5)
