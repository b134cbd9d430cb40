"""Co-located CPU rows share the host's CPU-side energy by their processes' CPU time
(issue 40), through the CLI into a real SQLite store.

Two rows of one workload run on a recorded 2-socket RAPL tree (tests/data/rapl, pointed at
by ``RADTRACK_POWERCAP_ROOT``) with ``-l rapl+top``: row ``feeder`` advances the tree's
counters (tests/listeners/rapl_fake.py: a few ms of CPU every 20 ms), row ``burner`` burns a
core (tests/scripts/busy.py). Post-run accounting splits each RAPL device's energy
(``pkg0``, ``pkg0/dram``, ...) between them by CPU seconds over the host's busy CPU seconds
(radtrack/compute/cpu_energy_share.py); the rest is the parent's ``other``/``idle``. Checked:
each row's share against the rule applied to the series the rows stored, the sum rule
(shares + other + idle = the device's measured energy = the tree's true increments), the
method tags, CO2e of the attributed energy, and the report's per-run energy and footprint.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from mlflow import MlflowClient
from support import radtrack_cli, run_cli, sqlite_locked

from radtrack.compute.attribution import GpuUse, account
from radtrack.compute.cpu_energy_share import HOST_CPU, PROC_CPU, split

TESTS = Path(__file__).resolve().parents[1]
RAPL = TESTS / "data" / "rapl"
INTENSITY = 400.0  # g CO2e / kWh, PUE 1
WATTS = {"intel-rapl:0": 60.0, "intel-rapl:0:0": 8.0, "intel-rapl:1": 75.0, "intel-rapl:1:0": 9.0}
DEVICES = {"intel-rapl:0": "pkg0", "intel-rapl:0:0": "pkg0/dram", "intel-rapl:1": "pkg1",
           "intel-rapl:1:0": "pkg1/dram"}
HEADER = "Experiment,Workload,Devices,Collocation,File,Listeners,Params,Interval,RunName\n"


def _history(c: MlflowClient, run_id: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    h = sorted(c.get_metric_history(run_id, f"system/{key}"), key=lambda m: (m.timestamp, m.step))
    return np.array([m.timestamp / 1000 for m in h]), np.array([m.value for m in h])


def _launch(tmp: Path, experiment: str, env: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """The two-row sheet on a fresh copy of the tree; (the feeder's log, the env used)."""
    root = tmp / f"powercap-{experiment}"
    shutil.copytree(RAPL / "server_2socket", root)
    log = tmp / f"written-{experiment}.json"
    feeder = f"{root} {log} --steps 100 --step-s 0.02 " + " ".join(f"{z}={w}" for z, w in WATTS.items())
    sheet = tmp / f"{experiment}.csv"
    sheet.write_text(HEADER + f"{experiment},1,-,-,{TESTS / 'listeners' / 'rapl_fake.py'},,{feeder},0.1,feeder\n"
                              f"{experiment},1,-,-,{TESTS / 'scripts' / 'busy.py'},,1.2,0.1,burner\n")
    # every listener reads before the scripts start (rapl holds no start by itself)
    env = {**env, "RADTRACK_POWERCAP_ROOT": str(root), "RADTRACK_RAPL_EVERY_S": "0",
           "RADTRACK_TOP_CORE_EVERY_S": "0", "RADTRACK_WAIT_LISTENERS": "1"}
    p = radtrack_cli("-l", "rapl+top", "--carbon-intensity", str(INTENSITY), str(sheet), env=env,
                     cwd=tmp)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return log, env


def _runs(c: MlflowClient, experiment: str) -> dict[str, object]:
    exp = c.get_experiment_by_name(experiment)
    assert exp is not None
    runs = {r.info.run_name if r.data.tags.get("radtrack.role") == "row" else "parent": r
            for r in c.search_runs([exp.experiment_id])}
    assert sorted(runs) == ["burner", "feeder", "parent"], sorted(runs)
    return runs


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cpu_share")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    log, env = _launch(tmp, "cpu", {"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(tmp / ".radtrack")})
    c = MlflowClient(uri)
    return c, _runs(c, "cpu"), env, json.loads(log.read_text()), tmp


def test_each_device_is_split_by_cpu_time_and_the_parts_add_up(workload):
    c, runs, _, written, _ = workload
    parent = runs["parent"].data.metrics
    rows = {name: runs[name] for name in ("feeder", "burner")}
    for zone, device in DEVICES.items():
        measured = parent[f"summary/workload/{device}/energy_j"]
        # the rows' listeners read the counters from before the scripts to after them:
        # the workload's measured energy is what the feeder wrote
        assert measured == pytest.approx(written["true_uj"][zone][-1] / 1e6, rel=0.02), device
        shares = {n: r.data.metrics[f"summary/attribution/{device}/energy_j"] for n, r in rows.items()}
        other = parent[f"summary/workload/{device}/other_energy_j"]
        idle = parent[f"summary/workload/{device}/idle_energy_j"]
        assert min(shares.values()) > 0 and other >= 0 and idle >= 0
        assert sum(shares.values()) + other + idle == pytest.approx(measured, rel=1e-6), device
        for r in rows.values():
            assert r.data.tags[f"radtrack.attribution.{device}"] == "process-cpu-time"
        assert runs["parent"].data.tags[f"radtrack.attribution.{device}"] == "process-cpu-time"
        assert f"summary/attribution/{device}/sm_share_pct" not in rows["burner"].data.metrics

        # against the rule applied to what the rows stored, over the counter's own readings
        # (accounting splits 1-s windows: close, not equal): each run's CPU (% of one core)
        # and the host's busy CPU (all cores x its cores); holding time would give the
        # feeder, alone on the host for most of the span, several times its CPU share
        ids = {n: r.info.run_id for n, r in rows.items()}
        energy = _history(c, ids["feeder"], f"rapl/{device}/energy_j")
        proc = {n: _history(c, i, "top/proc/cpu_pct") for n, i in ids.items()}
        cores = sum(1 for k in rows["feeder"].data.metrics if k.startswith("summary/top/cpu")
                    and k.endswith("/util_pct/mean"))
        assert cores >= 1
        t, host = _history(c, ids["feeder"], "top/cpu_pct")
        want = split(energy, proc, (t, host * cores))
        # 25 %: the 1-s windows against the counter's own readings drift apart when samples
        # bunch on a loaded host (16 % seen in a full -n 2 suite on 2 cores); holding time
        # would be off several-fold, so the rule is still told apart
        for name in rows:
            assert shares[name] == pytest.approx(want[name], rel=0.25), (device, name, shares, want)


def test_the_runs_footprint_and_the_workloads_include_the_cpu_side(workload):
    _, runs, _, written, _ = workload
    total_true = sum(written["true_uj"][z][-1] for z in DEVICES) / 1e6
    parent = runs["parent"].data.metrics
    assert parent["summary/workload/energy_j"] == pytest.approx(total_true, rel=0.02)
    assert parent["summary/workload/co2e_g"] == pytest.approx(
        parent["summary/workload/energy_j"] / 3.6e6 * INTENSITY, rel=1e-6)
    for name in ("feeder", "burner"):
        m = runs[name].data.metrics
        attributed = sum(m[f"summary/attribution/{d}/energy_j"] for d in DEVICES.values())
        assert m["summary/co2e_g"] == pytest.approx(attributed / 3.6e6 * INTENSITY, rel=1e-6)


def test_the_report_shows_each_runs_attributed_cpu_energy(workload):
    _, runs, env, _, tmp = workload
    p = run_cli("report", "cpu", "--format", "csv", env=env, cwd=tmp, check=True)
    table = {r["run_name"] if "run_name" in r else r.get("run", ""): r
             for r in csv.DictReader(io.StringIO(p.stdout))}
    for name in ("feeder", "burner"):
        row = next(r for r in table.values() if name in r.values())
        m = runs[name].data.metrics
        attributed = sum(m[f"summary/attribution/{d}/energy_j"] for d in DEVICES.values())
        assert float(row["energy_j"]) == pytest.approx(attributed, rel=1e-3), row
        assert float(row["co2e_g"]) == pytest.approx(attributed / 3.6e6 * INTENSITY, rel=1e-3)
        assert row["attribution"] == "process-cpu-time"


def _accounting(run) -> tuple[set[str], dict[str, str]]:
    """What accounting stored on a run: its keys and its attribution tags."""
    keys = {k for k in run.data.metrics if k.startswith(("summary/attribution/", "summary/workload/"))
            or k == "summary/co2e_g"}
    return keys, {k: v for k, v in run.data.tags.items() if k.startswith("radtrack.attribution.")
                  and not k.endswith((".gpu", ".uuid"))}


@pytest.mark.slow
def test_sync_stores_the_cpu_split_as_the_live_launch(workload):
    """The same sheet with its store away throughout: ``radtrack sync``'s end step stores the
    CPU-side split as the live launch did (radtrack/postrun/synced.py)."""
    c, live, env, _, tmp = workload
    with sqlite_locked(tmp / "mlflow.db"):
        log, _ = _launch(tmp, "away", {**env, "RADTRACK_STORE_WAIT_S": "2"})
    s = run_cli("sync", env=env, cwd=tmp)
    assert s.returncode == 0 and "end step" in s.stdout, s.stdout + s.stderr
    away = _runs(c, "away")
    for who in live:
        assert _accounting(away[who]) == _accounting(live[who]), who
    parent = away["parent"].data.metrics
    written = json.loads(log.read_text())
    for zone, device in DEVICES.items():
        measured = parent[f"summary/workload/{device}/energy_j"]
        assert measured == pytest.approx(written["true_uj"][zone][-1] / 1e6, rel=0.02)
        parts = sum(away[n].data.metrics[f"summary/attribution/{device}/energy_j"] for n in ("feeder", "burner"))
        parts += parent[f"summary/workload/{device}/other_energy_j"] + parent[f"summary/workload/{device}/idle_energy_j"]
        assert parts == pytest.approx(measured, rel=1e-6)


@pytest.mark.slow
def test_a_workload_stored_without_accounting_is_split_from_its_traces(workload):
    """A co-located workload whose end step could not account it (here: a bad
    ``RADTRACK_MPS_ATTRIBUTION`` stops accounting) has no ``summary/attribution/...``; the
    report accounts it from the stored traces (radtrack/analysis/stored_accounting.py), the
    CPU side by CPU time too, reading the traces of whichever listeners declare the roles."""
    c, _, env, _, tmp = workload
    _launch(tmp, "unaccounted", {**env, "RADTRACK_MPS_ATTRIBUTION": "bogus"})
    runs = _runs(c, "unaccounted")
    assert not any(k.startswith("summary/attribution/") for r in runs.values() for k in r.data.metrics)
    p = run_cli("report", "unaccounted", "--format", "csv", env=env, cwd=tmp, check=True)
    table = list(csv.DictReader(io.StringIO(p.stdout)))
    ids = {n: runs[n].info.run_id for n in ("feeder", "burner")}
    cores = sum(1 for k in runs["feeder"].data.metrics if k.startswith("summary/top/cpu")
                and k.endswith("/util_pct/mean"))
    # the reference: co-location accounting (radtrack/compute/attribution.py, the live end
    # step's arithmetic, whose agreement with the CPU-time rule the first test checks) over
    # the series as the store holds them (metric histories, each run over its recorded
    # span): the report's from-traces path must read the same traces, spans and CPU times
    # (an energy or a span read wrong moves a run's joules far beyond 2 %)
    uses = []
    for name, run_id in ids.items():
        info = runs[name].info
        t, host = _history(c, run_id, "top/cpu_pct")
        cpu = {PROC_CPU: _history(c, run_id, "top/proc/cpu_pct"), HOST_CPU: (t, host * cores)}
        for device in DEVICES.values():
            uses.append(GpuUse(run_id, device, "plain", info.start_time / 1000, info.end_time / 1000,
                               {"energy_j": _history(c, run_id, f"rapl/{device}/energy_j"), **cpu},
                               host=True))
    accounts = account(uses, min(u.start for u in uses), max(u.end for u in uses))
    want = {n: sum(acc.energy_j(i) for acc in accounts.values()) for n, i in ids.items()}
    assert {acc.method for acc in accounts.values()} == {"process-cpu-time"}
    for name in ids:
        row = next(r for r in table if name in r.values())
        assert row["attribution"] == "process-cpu-time (from traces)", row
        assert float(row["energy_j"]) == pytest.approx(want[name], rel=0.02), (name, row["energy_j"], want)
