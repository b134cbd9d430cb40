"""nsys / ncu: availability from PATH and the command lines they wrap around a workload."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from radtrack.errors import RadtrackError
from radtrack.listeners import registry
from radtrack.listeners.base import Listener, ListenerConfig
from radtrack.listeners.profilers import NcuListener, NsysListener
from radtrack.listeners.wrappers import CommandWrapper

WORKLOAD = ["/usr/bin/python3", "-m", "radtrack.script.bootstrap", "train.py", "--batch-size", "128"]


@pytest.fixture
def tools(tmp_path, monkeypatch):
    for name in ("nsys", "ncu"):
        exe = tmp_path / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    for var in ("RADTRACK_PROFILE_NVTX_RANGE", "RADTRACK_NSYS_ARGS", "RADTRACK_NCU_ARGS"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_unavailable_without_the_tool(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    for cls, tool in ((NsysListener, "nsys"), (NcuListener, "ncu")):
        why = cls.available()
        assert not why and f"no {tool} on PATH" in why.reason


def test_nsys_wraps_the_whole_run(tools, tmp_path):
    out = tmp_path / "profiles"
    nsys = NsysListener(ListenerConfig(outdir=out))
    assert NsysListener.available() and NsysListener.wraps_command
    assert isinstance(nsys, CommandWrapper) and not isinstance(nsys, Listener)  # samples nothing
    cmd = nsys.wrap(WORKLOAD)
    assert cmd[0] == str(tools / "nsys") and cmd[1] == "profile"
    assert cmd[cmd.index("--output") + 1] == str(out / "radtrack")
    assert cmd[-len(WORKLOAD):] == WORKLOAD
    assert not any(a.startswith("--capture-range") for a in cmd)
    assert nsys.outputs() == [out / "radtrack.nsys-rep"]
    assert nsys.tags() == {"radtrack.listener.nsys.report": "radtrack.nsys-rep"}


def test_nsys_limited_to_the_profile_nvtx_range(tools, tmp_path, monkeypatch):
    monkeypatch.setenv("RADTRACK_PROFILE_NVTX_RANGE", "profile")
    monkeypatch.setenv("RADTRACK_NSYS_ARGS", "--sample none --stats 'true'")
    cmd = NsysListener(ListenerConfig(outdir=tmp_path)).wrap(WORKLOAD)
    assert "--capture-range=nvtx" in cmd and "--nvtx-capture=profile" in cmd
    tail = cmd[-len(WORKLOAD) - 4:]
    assert tail[:4] == ["--sample", "none", "--stats", "true"]


def test_ncu_wraps_with_nvtx_include(tools, tmp_path):
    ncu = NcuListener(ListenerConfig(outdir=tmp_path), nvtx_range="profile")
    cmd = ncu.wrap(WORKLOAD)
    assert cmd[0] == str(tools / "ncu")
    assert cmd[cmd.index("--export") + 1] == str(tmp_path / "radtrack")
    i = cmd.index("--nvtx")
    assert cmd[i + 1:i + 3] == ["--nvtx-include", "profile/"]
    assert cmd[-len(WORKLOAD):] == WORKLOAD
    assert ncu.outputs() == [tmp_path / "radtrack.ncu-rep"]
    assert ncu.tags()["radtrack.listener.ncu.nvtx_range"] == "profile"


def test_without_outdir_the_message_says_what_is_missing(tools):
    with pytest.raises(RadtrackError, match="no output folder"):
        NcuListener(ListenerConfig()).wrap(WORKLOAD)


def test_unsplittable_extra_args_are_named(tools, tmp_path, monkeypatch):
    monkeypatch.setenv("RADTRACK_NCU_ARGS", "--set 'full")
    with pytest.raises(RadtrackError, match="RADTRACK_NCU_ARGS"):
        NcuListener(ListenerConfig(outdir=tmp_path)).wrap(WORKLOAD)


def test_wrapped_command_is_an_argument_list(tools, tmp_path):
    # a hostile script argument stays one argument: nothing goes through a shell
    argv = [*WORKLOAD, "; rm -rf $HOME"]
    cmd = NsysListener(ListenerConfig(outdir=Path(tmp_path))).wrap(argv)
    assert cmd[-1] == "; rm -rf $HOME" and all(isinstance(a, str) for a in cmd)
    assert os.path.basename(cmd[0]) == "nsys"


def test_wrappers_are_named_through_the_listener_registry(tools):
    """``-l ncu`` finds the wrapper where listeners are registered; it is never a default."""
    assert registry.get("nsys") is NsysListener and registry.get("ncu") is NcuListener
    assert registry.get("ncu").available()  # the tools fixture put ncu on PATH
    assert not {"nsys", "ncu"} & set(registry.default_names())
