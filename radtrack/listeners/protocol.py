"""The listener contract: typed messages, their one encoder and decoder, launch argv, choices.

Messages travel one JSON object a line, on a listener's stdout and in the sink's spool:

  {"type": "hello", "listener": NAME, "metrics": [{key, unit, description, source, role,
   scope, label, unit_text}],
   "tags": {...}, "interval": SECONDS[, "pid": PID]}
  {"type": "sample", "t": UNIX_SECONDS, "v": {KEY: VALUE, ...}[, "resume": {KEY: POS}]
   [, "listener": NAME]}
  {"type": "error", "message": TEXT[, "listener": NAME]}
  {"type": "samples", "t": [UNIX_SECONDS, ...], "v": {KEY: [VALUE | null, ...], ...}
   [, "resume": {KEY: POS}][, "listener": NAME]}
  {"type": "stats", "listener": NAME, "cpu_s": SECONDS, "samples": N, "missed": N}

``listener`` names the listener on lines of a shared sampler (several listeners in one
process). A listener whose metrics grow (smi following a GPU the run turned out to use,
radtrack/listeners/gpu_follow.py) says hello again, with every metric so far and its tags; a later
hello replaces the earlier one wherever hellos are read (the sink's stream, its crash
recovery, ``radtrack sync``), and run tags come from the last. A ``samples`` line is a columnar batch: several samples on one line, the i-th
at ``t[i]`` with the i-th entry of each value list (null: no value then); listeners write
the readings their source stamps itself this way (smi's driver power buffer: ~50 a
second, one line a second instead of 50), and readers expand it with :func:`samples_of`
into the very samples, in order, that one line each would have given. Its ``resume``
positions hold once the whole line is written. A ``stats`` line is what a listener cost
(its CPU time reading and writing, its samples, the deadlines it missed); the runner
writes it on stderr at a clean stop, never on the sample stream. :func:`encode` and :func:`decode` are the only places that know this layout:
writers (radtrack/listeners/runner.py) and readers (the sink, its crash recovery, the launcher's
listener handles) exchange :class:`Hello` / :class:`Sample` / :class:`Error` objects, so a
cheaper wire format can later go in here without touching them.

:class:`ListenerLaunch` is the command line that starts a listener process
(``python -m radtrack.listeners ...``), built and parsed here; :class:`ListenerChoice` is a
listener as a user names it (``dcgm@1``: dcgm every second, whatever the run's interval).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from radtrack.errors import RadtrackError
from radtrack.vocab.declared import ALIASES as ALIASES  # a listener's names: the vocabulary's
from radtrack.vocab.declared import canonical as canonical
from radtrack.vocab.schema import listener_tag


class ProtocolError(ValueError):
    """A line that is not a message of this protocol (not JSON, unknown type, a field missing)."""


@dataclass(slots=True)
class Hello:
    """A listener's first line: what it will emit, with units, and tags describing its probe
    (again, whole, when that grew: the last one holds)."""

    listener: str
    metrics: list[dict[str, Any]]  # MetricSpec fields: key, unit, description, source (older
    # hellos end there), role, scope, label, unit_text
    tags: dict[str, Any]
    interval: float | None = None  # seconds between its samples
    pid: int | None = None  # the shared sampler process it runs in
    extra: dict[str, Any] = field(default_factory=dict)  # fields this reader does not know


@dataclass(slots=True)
class Sample:
    """One reading: metric key -> value at ``t`` (unix seconds)."""

    t: float
    values: dict[str, float]
    resume: dict[str, int] | None = None  # positions a restart picks up from, once written
    listener: str | None = None  # on a shared sampler's lines


@dataclass(slots=True)
class Error:
    """Why a listener (``listener`` on a shared sampler's line) stopped."""

    message: str
    listener: str | None = None


@dataclass(slots=True)
class Samples:
    """Several samples on one line, columnar: the i-th at ``t[i]`` with ``values[key][i]``
    for each key (None: no value at that sample)."""

    t: list[float]
    values: dict[str, list[float | None]]
    resume: dict[str, int] | None = None  # positions a restart picks up from, once written
    listener: str | None = None

    def expand(self) -> list[Sample]:
        """The samples this line carries, in order (values that are None left out)."""
        cols = list(self.values.items())
        return [Sample(t, {k: v[i] for k, v in cols if v[i] is not None})
                for i, t in enumerate(self.t)]


@dataclass(slots=True)
class Stats:
    """What watching cost, as a listener reports it at a clean stop: CPU seconds of its own
    readings and lines, samples written, sampling deadlines it missed (fell behind)."""

    listener: str
    cpu_s: float
    samples: int = 0
    missed: int = 0


Message = Hello | Sample | Error | Samples | Stats


#: a device a listener began to watch mid-run (smi following a GPU the run turned out to use,
#: radtrack/listeners/gpu_follow.py): tag ``radtrack.listener.<name>.<scope>.followed`` = unix s
FOLLOWED = "followed"


def late_keys(hello: Hello | None) -> dict[str, float]:
    """Key -> the unix time its series became the run's, for each device the hello's
    listener followed mid-run: a reader starts such a series there, not at the run's start
    (radtrack/store/spans.py holds no reading back before it)."""
    if hello is None:
        return {}
    prefix, suffix = listener_tag(hello.listener) + ".", "." + FOLLOWED
    out: dict[str, float] = {}
    for tag, value in hello.tags.items():
        if not (tag.startswith(prefix) and tag.endswith(suffix)):
            continue
        try:
            at = float(value)
        except (TypeError, ValueError):
            continue
        # a node's keys carry its segment first (node1/smi/gpu1/power_w: schema.node_scoped)
        part = re.compile(rf"(node\d+/)?{re.escape(hello.listener)}/{re.escape(tag[len(prefix):-len(suffix)])}/")
        out.update({str(m["key"]): at for m in hello.metrics if part.match(str(m.get("key", "")))})
    return out


def samples_of(msg: Message | None) -> list[Sample]:
    """The samples a message carries: a sample itself, a batch's, none for the others."""
    if type(msg) is Sample:
        return [msg]
    if type(msg) is Samples:
        return msg.expand()
    return []


def batch(samples: Sequence[tuple[float, Mapping[str, float]]], resume: dict[str, int] | None = None,
          listener: str | None = None) -> Samples:
    """``(t, values)`` samples as one :class:`Samples` line (keys in first-seen order)."""
    keys: dict[str, None] = {}
    for _, values in samples:
        keys.update(dict.fromkeys(values))
    return Samples([t for t, _ in samples],
                   {k: [values.get(k) for _, values in samples] for k in keys}, resume, listener)


def encode(msg: Message) -> str:
    """``msg`` as one line of the wire format (no newline)."""
    if type(msg) is Sample and msg.listener is None and not msg.resume:  # the hot path
        return json.dumps({"type": "sample", "t": msg.t, "v": msg.values})
    return json.dumps(as_dict(msg))


def as_dict(msg: Message) -> dict[str, Any]:
    """``msg`` as the JSON object it travels as (the probe JSON artifact is a hello's)."""
    if type(msg) is Sample:  # the hot path first
        d: dict[str, Any] = {"type": "sample", "t": msg.t, "v": msg.values}
        if msg.resume:
            d["resume"] = msg.resume
    elif type(msg) is Hello:
        d = {"type": "hello", "listener": msg.listener, "metrics": msg.metrics, "tags": msg.tags}
        if msg.interval is not None:
            d["interval"] = msg.interval
        if msg.pid is not None:
            d["pid"] = msg.pid
        d.update(msg.extra)
        return d
    elif type(msg) is Error:
        d = {"type": "error", "message": msg.message}
    elif type(msg) is Samples:
        d = {"type": "samples", "t": msg.t, "v": msg.values}
        if msg.resume:
            d["resume"] = msg.resume
    elif type(msg) is Stats:
        return {"type": "stats", "listener": msg.listener, "cpu_s": msg.cpu_s,
                "samples": msg.samples, "missed": msg.missed}
    else:
        raise TypeError(f"not a listener message: {msg!r}")
    if msg.listener is not None:
        d["listener"] = msg.listener
    return d


def decode(line: str | bytes) -> Message:
    """The message one line carries; ProtocolError when it carries none."""
    try:
        d = json.loads(line)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ProtocolError(f"not JSON: {exc}") from exc
    if not isinstance(d, dict):
        raise ProtocolError(f"not a JSON object: {type(d).__name__}")
    kind = d.get("type")
    try:
        if kind == "sample":
            values = d.get("v")
            if type(values) is not dict:
                if values is not None:
                    raise TypeError(f"'v' is a {type(values).__name__}, not an object")
                values = {}
            if len(d) == 3:  # type, t, v: a listener of its own, no restart position
                return Sample(float(d["t"]), values)
            resume = d.get("resume")
            return Sample(float(d["t"]), values, resume if type(resume) is dict else None,
                          d.get("listener"))
        if kind == "hello":
            known = ("type", "listener", "metrics", "tags", "interval", "pid")
            interval, pid = d.get("interval"), d.get("pid")
            return Hello(str(d.get("listener", "")), list(d.get("metrics") or []),
                         dict(d.get("tags") or {}),
                         None if interval is None else float(interval),
                         None if pid is None else int(pid),
                         {k: v for k, v in d.items() if k not in known})
        if kind == "samples":
            t, values = [float(x) for x in d["t"]], d["v"]
            if type(values) is not dict or any(
                    type(v) is not list or len(v) != len(t) for v in values.values()):
                raise ValueError("'v' must map each key to a list as long as 't'")
            resume = d.get("resume")
            return Samples(t, values, resume if type(resume) is dict else None, d.get("listener"))
        if kind == "error":
            return Error(str(d.get("message")), d.get("listener"))
        if kind == "stats":
            return Stats(str(d["listener"]), float(d["cpu_s"]), int(d.get("samples", 0)),
                         int(d.get("missed", 0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed {kind} line: {type(exc).__name__}: {exc}") from exc
    raise ProtocolError(f"unknown message type {kind!r}")


def decode_line(line: str) -> tuple[str, Message]:
    """A reader's view of one stripped line: the line as it keeps it (spools it) and its
    message; a line that is no message becomes an :class:`Error` line saying so."""
    try:
        return line, decode(line)
    except ProtocolError:
        msg = Error(f"unparsable output: {line[:200]}")
        return encode(msg), msg


# -- listener choices ------------------------------------------------------------------
def seconds(value: float) -> str:
    """An interval as a command line or a sheet cell writes it: ``1``, ``0.5``, exact."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


class ListenerChoice(NamedTuple):
    """A listener as a user picks it: ``dcgm@1`` -> ``ListenerChoice('dcgm', 1.0)``, its own
    interval; ``smi`` -> ``ListenerChoice('smi', None)``, the run's interval."""

    name: str
    interval: float | None = None

    @classmethod
    def parse(cls, text: str) -> ListenerChoice:
        """``'dcgm@0.5'``, ``'nvidia-smi'``, ...; RadtrackError names a bad interval."""
        name, at, every = text.partition("@")
        if not at:
            return cls(canonical(name))
        try:
            value = float(every)
        except ValueError:
            value = float("nan")
        if not value > 0 or value == float("inf"):
            raise RadtrackError(f"listener {text.strip()!r}: the interval after '@' must be a "
                                f"number of seconds > 0, e.g. {canonical(name)}@0.5")
        return cls(canonical(name), value)

    def format(self) -> str:
        """The inverse of :meth:`parse`: ``'dcgm@1'``, ``'smi'``."""
        return self.name if self.interval is None else f"{self.name}@{seconds(self.interval)}"

    def at(self, default: float) -> ListenerChoice:
        """This choice with an interval: its own, else ``default`` (the run's)."""
        return self if self.interval is not None else self._replace(interval=default)

    def __str__(self) -> str:
        return self.format()


def parse_choices(text: str | None) -> list[ListenerChoice] | None:
    """'smi+dcgm@1' -> [smi, dcgm every second]; 'none' -> []; None/'' -> None (= every
    available one). RadtrackError names a malformed entry, an empty name ('smi++top') included."""
    if text is None or not text.strip():
        return None
    choices = []
    for part in text.split("+"):
        if not part.strip():
            raise RadtrackError(f"{text.strip()!r} has an empty listener name (a '+' with no "
                                "name on one side); join names with single '+', e.g. smi+top")
        choices.append(ListenerChoice.parse(part))
    return [] if choices == [("none", None)] else choices


# -- the launch command line -----------------------------------------------------------
RUNNER = (sys.executable, "-m", "radtrack.listeners")


@dataclass(frozen=True, slots=True)
class ListenerLaunch:
    """How the launcher starts a listener process: one listener (``smi``), or several sharing
    one sampler process, each at its own interval (``smi@0.1+dcgm@1``)."""

    listeners: tuple[ListenerChoice, ...]
    interval: float  # the process's interval (a shared sampler's: its members' shortest)
    devices: tuple[str, ...] = ()  # GPUs as the run sees them ('0', UUIDs); () = all
    pid: int | None = None  # root of the process tree to follow
    outdir: Path | None = None  # folder for listener artifacts
    count: int | None = None  # stop after this many samples (tests, benchmarks)
    runner: tuple[str, ...] = RUNNER  # the command that runs listeners
    # the run's start (unix s): readings whose source keeps history reach back to it
    # (smi's energy and the driver's power samples; ListenerConfig.since)
    since: float | None = None

    @classmethod
    def one(cls, name: str, interval: float, devices: Sequence[str] = (), pid: int | None = None,
            outdir: Path | None = None, since: float | None = None) -> ListenerLaunch:
        """A process of its own for listener ``name``."""
        return cls((ListenerChoice(name),), interval, tuple(devices), pid, outdir, since=since)

    @classmethod
    def shared(cls, launches: Sequence[ListenerLaunch]) -> ListenerLaunch:
        """One sampler process for several listeners of one run (devices, pid, outdir from
        the first); each keeps its own interval. It reaches back to the run's start only
        while none of them has read (a restart must not count anything twice)."""
        first = launches[0]
        members = tuple(c.at(la.interval) for la in launches for c in la.listeners)
        since = first.since if all(la.since is not None for la in launches) else None
        return cls(members, min(la.interval for la in launches), first.devices, first.pid,
                   first.outdir, first.count, first.runner, since)

    @property
    def spec(self) -> str:
        return "+".join(c.format() for c in self.listeners)

    def argv(self, resume: Mapping[str, int] | None = None) -> list[str]:
        """The command line; ``resume``: positions a restarted listener picks up from."""
        argv = [*self.runner, self.spec, "--interval", seconds(self.interval),
                "--devices", "+".join(self.devices)]
        if self.pid is not None:
            argv += ["--pid", str(self.pid)]
        if self.outdir is not None:
            argv += ["--outdir", str(self.outdir)]
        if self.count is not None:
            argv += ["--count", str(self.count)]
        if self.since is not None:
            argv += ["--since", f"{self.since:.6f}"]
        if resume:
            argv += ["--resume", json.dumps(dict(resume))]
        return argv

    @classmethod
    def parse(cls, argv: Sequence[str] | None = None) -> tuple[ListenerLaunch, dict[str, int]]:
        """The inverse of :meth:`argv` (without the runner): the launch and its resume
        positions. Exits with a usage message (argparse) on a bad command line."""
        p = _parser()
        a = p.parse_args(argv)
        if a.interval <= 0:
            p.error("--interval must be > 0")
        devices = tuple(d for d in a.devices.replace(",", "+").split("+") if d.strip())
        if "+" not in a.name:  # one listener, named as given
            listeners: tuple[ListenerChoice, ...] = (ListenerChoice(a.name),)
        else:
            try:
                listeners = tuple(parse_choices(a.name) or [])
            except RadtrackError as exc:
                p.error(str(exc))
        resume = {str(k): int(v) for k, v in json.loads(a.resume).items()}
        return cls(listeners, a.interval, devices, a.pid, Path(a.outdir) if a.outdir else None,
                   a.count, since=a.since), resume


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m radtrack.listeners",
                                description="Run one radtrack listener and print JSON-lines samples.")
    p.add_argument("name", help="listener name, e.g. smi, top, iostat, dcgm; several joined "
                                "with '+' (smi+dcgm@1) share one sampler process")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    p.add_argument("--devices", default="", help="GPUs as the run sees them: '0', '0+1', UUIDs")
    p.add_argument("--pid", type=int, default=None, help="root PID of the process tree to follow")
    p.add_argument("--count", type=int, default=None, help="stop after this many samples")
    p.add_argument("--outdir", default=None, help="folder for listener artifacts")
    p.add_argument("--since", type=float, default=None,
                   help="the run's start (unix seconds): energy and driver power samples "
                        "reach back to it where the GPU keeps them")
    p.add_argument("--resume", default="{}",
                   help="JSON {metric key: source timestamp} to pick up from after a restart")
    return p
