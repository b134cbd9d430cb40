"""Third-party listeners register like built-ins: install tests/plugin into a temporary
folder, run it through ``python -m radtrack.listeners``, and check that a plugin whose
import fails is a warning, not a crash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).parents[1] / "plugin"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/plugin installed (from a copy, so no build files land in the repository)."""
    root = tmp_path_factory.mktemp("plugin")
    src = root / "src"
    shutil.copytree(PLUGIN, src)
    target = root / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(target), str(src)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    # an installed plugin whose module is gone: its entry point cannot be loaded
    broken = target / "radtrack_broken_listener-0.1.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: radtrack-broken-listener\nVersion: 0.1\n")
    (broken / "entry_points.txt").write_text("[radtrack.listeners]\nbroken = radtrack_gone_module:Listener\n")
    return target


def _listeners(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "MLFLOW_DISABLE_TELEMETRY": "true"}
    return subprocess.run([sys.executable, "-m", "radtrack.listeners", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_installed_plugin_samples(site):
    proc = _listeners(site, "loadavg", "--count", "2", "--interval", "0.05")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    hello, *samples = (json.loads(line) for line in proc.stdout.splitlines())
    assert hello["type"] == "hello" and hello["listener"] == "loadavg"
    assert {m["key"] for m in hello["metrics"]} == {
        "loadavg/host/load1_count", "loadavg/host/load5_count", "loadavg/host/load15_count"}
    assert len(samples) == 2
    for s in samples:
        assert s["type"] == "sample" and s["v"]["loadavg/host/load1_count"] >= 0
    # the broken neighbour did not stop the working plugin, and is not even imported: only
    # the listeners asked for are loaded (it is reported where listeners are listed, below)
    assert "broken" not in proc.stderr


def test_installed_plugin_says_what_its_series_are(site):
    """The plugin's declaration reaches its hello line and radtrack's readers alike
    (radtrack/vocab/meaning.py describe), with no change outside the plugin's own files."""
    proc = _listeners(site, "loadavg", "--count", "1", "--interval", "0.05")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    hello = json.loads(proc.stdout.splitlines()[0])
    spec = next(m for m in hello["metrics"] if m["key"] == "loadavg/host/load5_count")
    assert (spec["role"], spec["scope"], spec["label"], spec["unit_text"]) == (
        "other", "host", "host load average, 5 min", "runnable processes")
    code = ("import json\n"
            "from radtrack.vocab.meaning import describe\n"
            "m = describe('system/loadavg/host/load15_count')\n"
            "print(json.dumps([m.label, m.scope, m.declared]))\n")
    env = {**os.environ, "PYTHONPATH": str(site), "MLFLOW_DISABLE_TELEMETRY": "true"}
    got = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) == ["host load average, 15 min (runnable processes)", "host", True]


def test_broken_plugin_is_one_clear_error(site):
    proc = _listeners(site, "broken", "--count", "1")
    assert proc.returncode == 1
    (line,) = [json.loads(x) for x in proc.stdout.splitlines()]
    assert line["type"] == "error" and "radtrack_gone_module" in line["message"]


def test_registry_lists_plugin_and_broken_one(site):
    code = ("import warnings, json\n"
            "from radtrack.listeners.registry import installed\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    found = installed()\n"
            "print(json.dumps({'names': sorted(found), 'broken': repr(found['broken']),\n"
            "                  'warnings': [str(x.message) for x in w]}))\n")
    env = {**os.environ, "PYTHONPATH": str(site), "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert {"loadavg", "broken", "smi", "dcgm", "top"} <= set(got["names"])
    assert "ModuleNotFoundError" in got["broken"]
    assert any("broken" in w for w in got["warnings"])


def test_a_built_in_name_reads_radtracks_metadata_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run naming radtrack's own listeners does not read every installed package's metadata
    (15 ms on the H100 host before the scripts start); a name radtrack does not register
    does, and a built-in name stays radtrack's whatever else registers it."""
    from importlib.metadata import EntryPoint

    from radtrack.listeners import registry
    from radtrack.listeners.smi import SmiListener
    from radtrack.vocab import declared

    scans = []
    other = EntryPoint("smi", "tests_plugin_nowhere:Impostor", registry.GROUP)
    extra = EntryPoint("extra", "tests_plugin_nowhere:Extra", registry.GROUP)

    def entry_points(group: str):
        scans.append(group)
        return [other, extra]

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points)
    for fn in (declared.own, declared.registered, declared.load, registry._load):
        fn.cache_clear()
    monkeypatch.setattr(registry, "_load", registry._load.__wrapped__)  # no cached classes
    try:
        assert registry.get("smi") is SmiListener and registry.unknown(["smi", "top"]) == []
        assert scans == []
        assert registry.unknown(["top", "nosuch"]) == ["nosuch"] and scans == [registry.GROUP]
        assert declared.registered()["smi"].value.startswith("radtrack.listeners.smi")
        assert "extra" in declared.registered()
    finally:
        for fn in (declared.own, declared.registered, declared.load):
            fn.cache_clear()
