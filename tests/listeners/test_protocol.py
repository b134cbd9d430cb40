"""The listener protocol: typed messages round-trip byte for byte, old spools still read, the
launch command line and listener choices build and parse each other."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from radtrack.errors import RadtrackError
from radtrack.listeners.protocol import (
    Error,
    Hello,
    ListenerChoice,
    ListenerLaunch,
    ProtocolError,
    Sample,
    as_dict,
    decode,
    decode_line,
    encode,
)

# lines exactly as listeners have written them (radtrack/listeners/runner.py before the protocol
# module, and older hellos without "interval"): what spools on disk hold
OLD_LINES = [
    '{"type": "hello", "listener": "smi", "metrics": [{"key": "smi/gpu0/power_w", "unit": "W", '
    '"description": "board power", "source": "nvmlDeviceGetPowerUsage"}], '
    '"tags": {"radtrack.listener.smi.gpu0.name": "H100"}, "interval": 0.1}',
    '{"type": "hello", "listener": "dcgm", "metrics": [], "tags": {"radtrack.listener.dcgm.sampler": '
    '"shared: smi+dcgm (pid 7)"}, "interval": 1.0, "pid": 7}',
    '{"type": "hello", "listener": "top", "metrics": [], "tags": {}}',
    '{"type": "sample", "t": 1700000000.125, "v": {"smi/gpu0/power_w": 101.5, "smi/gpu0/util_pct": 3.0}}',
    '{"type": "sample", "t": 1700000000.2, "v": {}}',
    '{"type": "sample", "t": 1700000000.3, "v": {"smi/gpu0/power_instant_w": 99.0}, '
    '"resume": {"smi/gpu0/power_instant_w": 1700000000300000}, "listener": "smi"}',
    '{"type": "sample", "t": 1700000000.4, "v": {"dcgm/gpu0/sm_active_pct": 50.0}, "listener": "dcgm"}',
    '{"type": "error", "message": "RuntimeError: sensor fell off the bus"}',
    '{"type": "error", "message": "NVMLError: gone", "listener": "dcgm"}',
    '{"type": "hello", "listener": "x", "metrics": [], "tags": {}, "interval": 0.5, "future": [1, 2]}',
]


@pytest.mark.parametrize("line", OLD_LINES)
def test_every_line_round_trips_byte_for_byte(line: str) -> None:
    msg = decode(line)
    assert encode(msg) == line
    assert as_dict(msg) == json.loads(line)
    assert decode(encode(msg)) == msg


def test_decoded_messages_are_typed() -> None:
    hello, shared, old, sample, empty, resumed, *_ = (decode(x) for x in OLD_LINES)
    assert isinstance(hello, Hello) and hello.listener == "smi" and hello.interval == 0.1
    assert hello.metrics[0]["key"] == "smi/gpu0/power_w" and hello.pid is None
    assert isinstance(shared, Hello) and shared.pid == 7
    assert isinstance(old, Hello) and old.interval is None and old.extra == {}
    assert sample == Sample(1700000000.125, {"smi/gpu0/power_w": 101.5, "smi/gpu0/util_pct": 3.0})
    assert empty == Sample(1700000000.2, {})
    assert resumed == Sample(1700000000.3, {"smi/gpu0/power_instant_w": 99.0},
                             {"smi/gpu0/power_instant_w": 1700000000300000}, "smi")
    assert decode(OLD_LINES[-2]) == Error("NVMLError: gone", "dcgm")
    assert decode(OLD_LINES[-1]).extra == {"future": [1, 2]}  # type: ignore[union-attr]


def test_messages_encode_as_the_runner_always_wrote_them() -> None:
    values = {"a/b/c_pct": 1.0}
    assert encode(Sample(2.5, values)) == json.dumps({"type": "sample", "t": 2.5, "v": values})
    assert encode(Sample(2.5, values, {}, None)) == json.dumps({"type": "sample", "t": 2.5, "v": values})
    assert encode(Error("boom", "smi")) == json.dumps({"type": "error", "message": "boom", "listener": "smi"})
    assert encode(Hello("smi", [], {"k": "v"}, 0.1, 9)) == json.dumps(
        {"type": "hello", "listener": "smi", "metrics": [], "tags": {"k": "v"}, "interval": 0.1, "pid": 9})
    with pytest.raises(TypeError):
        encode({"type": "sample"})  # type: ignore[arg-type]


@pytest.mark.parametrize("line", [
    '{"type": "sample", "t": 17', "not json", "[1, 2]", "5", '{"type": "progress", "x": 1}',
    '{"type": "sample", "v": {}}', '{"type": "sample", "t": "soon", "v": {}}',
    '{"type": "sample", "t": 1.0, "v": [1]}', '{"no": "type"}', b'\xff\xfe'])
def test_a_line_that_is_no_message_raises_protocol_error(line: str | bytes) -> None:
    with pytest.raises(ProtocolError):
        decode(line)


def test_a_reader_keeps_a_message_line_as_is_and_turns_anything_else_into_an_error_line() -> None:
    assert decode_line(OLD_LINES[3]) == (OLD_LINES[3], decode(OLD_LINES[3]))
    line, msg = decode_line("Traceback (most recent call last):")
    assert msg == Error("unparsable output: Traceback (most recent call last):")
    assert line == json.dumps({"type": "error", "message": msg.message})


def test_old_spools_read_as_before(tmp_path: Path) -> None:
    """A spool written before the protocol module: same trace, same pending samples."""
    from radtrack.store.recovery import read_spool, reopen_streams
    from radtrack.store.spool import SHIPPED_SUFFIX

    run = tmp_path / "run"
    run.mkdir()
    lines = [OLD_LINES[0], OLD_LINES[3], OLD_LINES[4], OLD_LINES[7], OLD_LINES[5]]
    (run / "smi.jsonl").write_text("\n".join(lines) + '\n{"type": "sample", "t": 17')  # torn
    (run / f"smi{SHIPPED_SUFFIX}").write_text("2")
    frame = read_spool(run / "smi.jsonl")
    assert list(frame.columns) == ["time", "step", "smi/gpu0/power_w", "smi/gpu0/util_pct",
                                   "smi/gpu0/power_instant_w"]
    assert frame["step"].tolist() == [0, 1, 2] and frame["time"].iloc[2] == 1700000000.3
    (s,) = reopen_streams(run).values()
    try:
        assert (s.name, s.lines, s.samples, s.shipped) == ("smi", 6, 3, 2)
        assert [(p.line, p.step, p.t) for p in s.pending] == [(2, 1, 1700000000.2), (4, 2, 1700000000.3)]
        assert s.pending_points == 1 and s.hello == decode(OLD_LINES[0])
    finally:
        s.file.close()


# -- listener choices --------------------------------------------------------------------
@pytest.mark.parametrize(("text", "choice", "formatted"), [
    ("smi", ListenerChoice("smi"), "smi"), ("dcgm@1", ListenerChoice("dcgm", 1.0), "dcgm@1"),
    (" Nvidia-SMI@0.5", ListenerChoice("smi", 0.5), "smi@0.5"),
    ("dcgmi@0.25", ListenerChoice("dcgm", 0.25), "dcgm@0.25"),
    ("top@1e-3", ListenerChoice("top", 0.001), "top@0.001")])
def test_a_choice_parses_and_formats(text: str, choice: ListenerChoice, formatted: str) -> None:
    assert ListenerChoice.parse(text) == choice
    assert choice.format() == str(choice) == formatted
    assert ListenerChoice.parse(formatted) == choice
    name, every = choice  # still a (name, interval) pair
    assert (name, every) == (choice.name, choice.interval)


@pytest.mark.parametrize("text", ["dcgm@", "dcgm@0", "dcgm@-1", "dcgm@inf", "dcgm@nan", "dcgm@fast"])
def test_a_bad_interval_names_the_entry(text: str) -> None:
    with pytest.raises(RadtrackError, match="the interval after '@' must be a number of seconds"):
        ListenerChoice.parse(text)


def test_a_choice_takes_the_runs_interval_unless_it_has_its_own() -> None:
    assert ListenerChoice("smi").at(0.1) == ("smi", 0.1)
    assert ListenerChoice("dcgm", 1.0).at(0.1) == ("dcgm", 1.0)


def test_registry_names_are_the_choices_formatted() -> None:
    from radtrack.listeners.registry import parse_names, split

    assert parse_names("smi+Nvidia-SMI@0.50+dcgm@1") == ["smi", "smi@0.5", "dcgm@1"]
    assert parse_names("none") == [] and parse_names("  ") is None
    assert split("dcgm@2") == ("dcgm", 2.0) and split("top") == ("top", None)


# -- the launch command line ---------------------------------------------------------------
def test_a_launch_builds_the_command_line_the_launcher_always_ran(tmp_path: Path) -> None:
    one = ListenerLaunch.one("smi", 0.1, ["0", "1"], 42, tmp_path)
    runner = [sys.executable, "-m", "radtrack.listeners"]
    assert one.argv() == [*runner, "smi", "--interval", "0.1", "--devices", "0+1", "--pid", "42",
                          "--outdir", str(tmp_path)]
    assert one.argv({"smi/gpu0/power_instant_w": 5})[-2:] == [
        "--resume", json.dumps({"smi/gpu0/power_instant_w": 5})]
    assert one.argv({}) == one.argv()
    shared = ListenerLaunch.shared([one, ListenerLaunch.one("dcgm", 1.0, ["7"], 1, None)])
    assert shared.argv() == [*runner, "smi@0.1+dcgm@1", "--interval", "0.1", *one.argv()[6:]]


def test_a_launch_parses_back_from_its_command_line(tmp_path: Path) -> None:
    for launch in (ListenerLaunch.one("smi", 0.1, ["0", "GPU-ab"], 42, tmp_path),
                   ListenerLaunch.one("top", 2.0),
                   ListenerLaunch.shared([ListenerLaunch.one("smi", 0.1, ["0"], 3, tmp_path),
                                          ListenerLaunch.one("dcgm", 0.5, ["0"], 3, tmp_path)])):
        argv = launch.argv({"smi/x": 1})
        assert ListenerLaunch.parse(argv[3:]) == (launch, {"smi/x": 1})
    counted = ListenerLaunch.parse(["dcgm", "--count", "2", "--devices", "0,1"])[0]
    assert counted.count == 2 and counted.devices == ("0", "1") and counted.argv()[-2:] == ["--count", "2"]


def test_a_launch_refuses_a_bad_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["smi", "--interval", "0"], ["smi++top"], ["smi+dcgm@x"]):
        with pytest.raises(SystemExit):
            ListenerLaunch.parse(argv)
    assert "must be a number of seconds" in capsys.readouterr().err


# -- columnar batches and stats (issue 25) -----------------------------------------------
def test_a_batch_line_carries_its_samples_in_order_and_round_trips() -> None:
    from radtrack.listeners.protocol import Samples, Stats, batch, samples_of

    msg = batch([(1.0, {"k/a_w": 10.0}), (1.02, {"k/a_w": 11.0, "k/b_w": 5.0}), (1.04, {})],
                {"k/a_w": 1040000}, "smi")
    line = encode(msg)
    assert json.loads(line) == {"type": "samples", "t": [1.0, 1.02, 1.04],
                                "v": {"k/a_w": [10.0, 11.0, None], "k/b_w": [None, 5.0, None]},
                                "resume": {"k/a_w": 1040000}, "listener": "smi"}
    assert decode(line) == msg and encode(decode(line)) == line
    assert samples_of(decode(line)) == [Sample(1.0, {"k/a_w": 10.0}),
                                        Sample(1.02, {"k/a_w": 11.0, "k/b_w": 5.0}), Sample(1.04, {})]
    assert samples_of(Error("x")) == [] and samples_of(decode(OLD_LINES[3])) == [decode(OLD_LINES[3])]
    stats = Stats("smi", 0.25, 100, 2)
    assert decode(encode(stats)) == stats and isinstance(decode(encode(stats)), Stats)
    for bad in ('{"type": "samples", "t": [1.0], "v": {"k": [1.0, 2.0]}}',
                '{"type": "samples", "t": [1.0], "v": [1.0]}', '{"type": "samples", "v": {}}',
                '{"type": "stats", "cpu_s": 1}'):
        with pytest.raises(ProtocolError):
            decode(bad)
    assert isinstance(msg, Samples)


def test_a_batch_line_is_spooled_once_and_stored_sample_by_sample(tmp_path: Path) -> None:
    """A batch line: one spool line, one pending sample (and step) per sample; ``.shipped``
    passes the line only with its last sample, so a crash mid-line resends, never skips."""
    from radtrack.listeners.protocol import batch
    from radtrack.store.recovery import read_spool, reopen_streams
    from radtrack.store.spool import SHIPPED_SUFFIX, Spool

    spool = Spool(tmp_path / "run")
    spool.dir.mkdir()
    spool.append("smi", OLD_LINES[0])
    spool.append("smi", OLD_LINES[3])
    spool.append("smi", encode(batch([(2.0, {"k/p_w": 1.0}), (2.02, {"k/p_w": 2.0}),
                                      (2.04, {"k/p_w": 3.0})], {"k/p_w": 2040000})))
    s = spool.streams["smi"]
    assert (s.lines, s.samples, s.pending_points) == (3, 4, 5)
    assert [(p.line, p.step, p.t) for p in s.pending] == [(1, 0, 1700000000.125), (1, 1, 2.0),
                                                         (1, 2, 2.02), (2, 3, 2.04)]
    spool.close_files()
    frame = read_spool(spool.path("smi"))
    assert frame["step"].tolist() == [0, 1, 2, 3] and frame["k/p_w"].tolist()[1:] == [1.0, 2.0, 3.0]
    # stored up to the batch's second sample: the marker says 2 lines, the batch is resent
    (spool.dir / f"smi{SHIPPED_SUFFIX}").write_text("2")
    (r,) = reopen_streams(spool.dir).values()
    try:
        assert [(p.step, p.t) for p in r.pending] == [(1, 2.0), (2, 2.02), (3, 2.04)]
    finally:
        r.file.close()
