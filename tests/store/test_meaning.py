"""radtrack/vocab/meaning.py: every key a built-in listener can emit, every figure radtrack
derives from them, and every summary column has a scope, a unit and a label that says whose
figure it is; a listener without declarations still gets one from its key's shape."""

from __future__ import annotations

import re

import pytest

from radtrack.listeners.dcgm import DCGM_FIELDS
from radtrack.listeners.dcgm import SERIES as DCGM
from radtrack.listeners.iostat import SERIES as IOSTAT
from radtrack.listeners.smi import QUANTITIES
from radtrack.listeners.smi import SERIES as SMI
from radtrack.listeners.tegrastats import SERIES as TEGRASTATS
from radtrack.listeners.tegrastats import parse_line
from radtrack.listeners.top import SERIES as TOP
from radtrack.vocab import schema
from radtrack.vocab.meaning import SUMMARY_COLUMNS, describe, with_role
from radtrack.vocab.series import ROLES, SCOPES, MetricSpec, Series

BUILT_IN = {"smi": SMI, "dcgm": DCGM, "top": TOP, "iostat": IOSTAT, "tegrastats": TEGRASTATS}
_FILL = {"i": "0", "n": "3", "disk": "nvme0n1", "sensor": "coretemp", "rail": "vdd_gpu_soc"}


def example(pattern: str) -> str:
    """A key of a series' family: its placeholders filled in."""
    return re.sub(r"<([a-z_]+)>", lambda m: _FILL[m[1]], pattern)


ALL_SERIES = [(name, s) for name, series in BUILT_IN.items() for s in series]


@pytest.mark.parametrize(("listener", "series"), ALL_SERIES, ids=[s.pattern for _, s in ALL_SERIES])
def test_every_built_in_key_is_described_by_its_declaration(listener: str, series: Series) -> None:
    key = example(series.pattern)
    meaning = describe(key)
    stored = describe(schema.stored_key(key))
    assert meaning == stored, "the system/ prefix changes nothing"
    assert meaning.declared and meaning.key == key
    assert meaning.role == series.role in ROLES and meaning.scope == series.scope in SCOPES
    assert meaning.unit == series.unit and meaning.unit
    assert meaning.label == f"{meaning.name} ({meaning.unit_text})"
    assert "<" not in meaning.label, "placeholders are filled in"
    summary = describe(schema.summary_key(key, "mean"))
    assert summary.stat == "mean" and summary.label == f"{meaning.name}, mean ({meaning.unit_text})"
    assert summary.scope == meaning.scope and summary.role == meaning.role


def test_every_smi_and_dcgm_quantity_is_declared() -> None:
    assert {s.pattern.rsplit("/", 1)[1] for s in SMI} == set(QUANTITIES)
    assert {s.pattern.rsplit("/", 1)[1] for s in DCGM} == {q for q, _ in DCGM_FIELDS.values()}


def test_top_says_whose_cpu_and_of_what() -> None:
    run, host, core = describe("top/proc/cpu_pct"), describe("top/cpu_pct"), describe("top/cpu5/util_pct")
    assert run.label == "run CPU (% of one core)" and run.scope == "run" and run.role == "proc_cpu"
    assert host.label == "host CPU (% of all cores)" and host.scope == "host" and host.role == "host_cpu"
    assert core.label == "host core 5 CPU (% of one core)"
    assert run.unit == host.unit == "%"
    # the page's and the report's summary columns say the same
    assert describe("proc_cpu_pct_mean").label == "run CPU, mean (% of one core)"
    assert describe("cpu_pct_mean").label == "host CPU, mean (% of all cores)"


def test_power_and_energy_roles() -> None:
    assert describe("smi/gpu1/power_w").role == "device_power"
    assert describe("smi/gpu0/energy_j").role == "energy_counter"
    total = describe("summary/smi/gpu0/energy_j")
    assert total.role == "energy" and total.stat == "total" and total.label == "GPU energy over the run (J)"
    assert describe("smi/gpu0/proc_sm_util_pct").scope == "device_share"
    assert describe("tegrastats/power/vdd_in_mw").role == "device_power"
    assert describe("tegrastats/power/vdd_in_avg_mw").role == "device_power"
    rail = describe("tegrastats/power/vdd_cpu_cv_avg_mw")
    assert rail.role == "power_rail" and rail.label == "rail vdd_cpu_cv power (running average) (mW)"


@pytest.mark.parametrize("board", ["nano", "orin_agx_r35", "orin_nano_r36", "tx1_l4t24", "tx1_l4t28",
                                   "tx2", "xavier_l4t32", "xavier_nx_l4t32_5"])
def test_every_recorded_tegrastats_key_is_declared(board: str) -> None:
    from pathlib import Path
    path = Path(__file__).parents[1] / "data" / "tegrastats" / f"{board}.txt"
    keys = {k for line in path.read_text().splitlines() for k in parse_line(line)}
    assert keys
    undeclared = sorted(k for k in keys if not describe(k).declared)
    assert undeclared == []


@pytest.mark.parametrize(("key", "scope", "role", "label"), [
    ("attribution/gpu0/attributed_power_w", "device_share", "attributed_power", "run's share of GPU power (W)"),
    ("system/attribution/gpu0/sm_share_pct", "device_share", "proc_share",
     "run's share of GPU SM time (% of the whole GPU)"),
    ("attribution/gpu1/idle_power_w", "device", "attributed_power", "GPU idle power, no run's (W)"),
    ("summary/attribution/gpu0/energy_j", "device_share", "energy", "run's GPU energy, attributed (J)"),
    ("summary/workload/gpu0/idle_energy_j", "workload", "energy", "workload GPU 0 idle energy (J)"),
    ("summary/workload/energy_j", "workload", "energy",
     "workload energy (GPUs + host CPU/DRAM where read) (J)"),
    ("summary/workload/energy_per_sample_j", "workload", "energy", "workload energy per sample (J/sample)"),
    ("window/warmup/energy_j", "device_share", "energy", "code window warmup: run's energy (GPUs + host CPU/DRAM where read), attributed (J)"),
    ("window/a/b/power_w", "device", "device_power", "code window a/b: GPU power, mean (W)"),
    ("summary/smi/gpu0/energy_j_ci95_pct", "device", "other",
     "GPU energy over the run: 95 % interval (± % of the figure)"),
    ("summary/duration_s", "run", "other", "run duration (s)"),
    ("summary/co2e_g", "run", "other", "run footprint (g CO2e)"),
    ("summary/monitoring/top/cpu_s", "run", "other", "monitoring: top's CPU time (CPU s)"),
    ("summary/energy_model/gpu0/activity_energy_j", "device", "energy", "GPU energy, activity model (J)"),
    ("energy_j", "device_share", "energy", "run's energy (GPUs + host CPU/DRAM where read), attributed (J)"),
    ("summary/attribution/pkg0/dram/energy_j", "device_share", "energy", "run's host pkg0/dram energy, attributed (J)"),
    ("summary/workload/pkg1/other_energy_j", "workload", "energy",
     "host pkg1 energy of processes outside the workload (J)"),
    ("gpu_energy_j", "device", "energy", "GPU energy over the run's span (J)"),
    ("power_w_mean", "device", "device_power", "GPU power, mean (W)"),
    ("proc_sm_util_pct_p95", "device_share", "proc_share", "run's GPU SM share, 95th percentile (% of the GPU's SM time)"),
    ("loss", "run", "other", "loss"),
    ("summary/loss/mean", "run", "other", "loss, mean"),
])
def test_radtracks_own_figures(key: str, scope: str, role: str, label: str) -> None:
    meaning = describe(key)
    assert (meaning.scope, meaning.role, meaning.label) == (scope, role, label)


def test_a_column_has_one_name_and_its_table_says_whose_it_is() -> None:
    """The report prints no short header of its own: the column's name is the one lookup."""
    from radtrack.vocab.meaning import COLUMN_FIELDS, column_row, is_count

    assert describe("host_cpu_pct").declared is False  # the old short headers are no names
    run = column_row("duration_s", "runs")
    assert tuple(run) == COLUMN_FIELDS
    assert (run["scope"], run["unit"], run["meaning"]) == ("run", "s", "run duration (s)")
    workload = column_row("energy_j", "workloads")
    assert (workload["scope"], workload["unit"]) == ("workload", "J")
    assert column_row("cpu_pct_mean")["meaning"] == "host CPU, mean (% of all cores)"
    assert column_row("proc_cpu_pct_mean")["meaning"] == "run CPU, mean (% of one core)"
    assert column_row("top_cpu_s")["meaning"] == "monitoring: top's CPU time (CPU s)"
    assert column_row("duration_s_cv")["meaning"].startswith("run duration, run-to-run")
    assert is_count("samples") and is_count("n") and not is_count("energy_j")


def test_every_summary_column_is_described() -> None:
    from radtrack.compute.summary import QUANTITIES as SUMMARY
    for quantity in SUMMARY:
        scope, _, role, _, _ = SUMMARY_COLUMNS[quantity.name]  # by role and scope, no listener's key
        assert role in quantity.roles and scope == quantity.scope, quantity
        assert describe(f"{quantity.name}_mean").declared
        # and a built-in listener's series of it is what the column summarises
        keys = [s.pattern.replace("<i>", "0") for series in BUILT_IN.values() for s in series]
        assert any(quantity.selects(k) for k in keys), quantity


def test_a_key_nobody_declares_is_read_from_its_shape() -> None:
    gpu = describe("newvendor/gpu0/power_w")
    assert not gpu.declared and gpu.scope == "device" and gpu.unit == "W" and gpu.label == "GPU power (W)"
    assert gpu.role == "other", "power is never guessed: readers would count it as a device's"
    host = describe("loadavg/host/load1_count")
    assert host.scope == "host" and host.unit == "count" and host.label == "host load1 (count)"
    assert describe("x/proc/cpu_pct").scope == "run"
    assert describe("x/host/temp_c").role == "temperature"
    # stored under system/, a key is a listener's whatever its shape (the sink puts only
    # listener series there); without the prefix, a key of no installed listener and of no
    # listener's shape is the script's own
    assert describe("system/x/y/temp_c").role == "temperature"
    assert describe("system/x/y/temp_c").scope == "host"
    script = describe("train/loss")
    assert (script.scope, script.role, script.label, script.declared) == ("run", "other", "train/loss", False)
    assert describe("val/acc_pct").label == "val/acc (%)"
    assert describe("summary/train/loss/mean").label == "train/loss, mean"
    mlflow_own = describe("system/cpu_utilization_percentage")
    assert mlflow_own.scope == "host" and mlflow_own.unit == "%" and "MLflow" in mlflow_own.label
    assert describe("odd key: \u00e9").label == "odd key: \u00e9"
    assert describe("radtrack/spool_dropped_samples").declared


def test_mig_slices_are_named_from_the_runs_tags() -> None:
    tags = {f"tag.{schema.gpu_tag('gpu0', 'mig')}": "true"}
    memory = describe("smi/gpu0/mem_used_mib", tags)
    assert memory.scope == "mig" and memory.label.startswith("MIG slice memory used")
    power = describe("smi/gpu0/power_w", tags)
    assert power.scope == "device" and power.label == "GPU power (W)", "a MIG slice's power is its GPU's"
    assert describe("smi/gpu1/mem_used_mib", tags).scope == "device"


def test_metric_spec_stays_compatible_and_checks_what_it_is_told() -> None:
    old = MetricSpec("counting/host/n_count", "count", "a count", "here")
    assert (old.role, old.scope, old.label, old.unit_text) == ("other", "host", "host n", "count")
    with pytest.raises(ValueError, match="role 'power'"):
        MetricSpec("a/gpu0/power_w", "W", role="power")
    with pytest.raises(ValueError, match="scope 'board'"):
        Series("a/<i>/power_w", "W", "device_power", "board", "power")
    spec = Series("a/gpu<i>/x_w", "W", "device_power", "device", "GPU <i> x").spec("a/gpu3/x_w")
    assert spec.label == "GPU 3 x" and spec.unit_text == "W"


def test_readers_pick_series_by_role_never_by_listener_name() -> None:
    keys = ["system/smi/gpu0/power_w", "smi/gpu0/power_avg_w", "smi/gpu0/energy_j", "top/cpu_pct",
            "tegrastats/power/vdd_in_mw", "tegrastats/power/vdd_gpu_soc_mw", "newvendor/gpu0/power_w",
            "attribution/gpu0/attributed_power_w", "top/proc/cpu_pct"]
    assert with_role(keys, "device_power") == ["system/smi/gpu0/power_w", "smi/gpu0/power_avg_w",
                                               "tegrastats/power/vdd_in_mw"]
    assert with_role(keys, "energy_counter") == ["smi/gpu0/energy_j"]
    assert with_role(keys, "power_rail") == ["tegrastats/power/vdd_gpu_soc_mw"]
    assert with_role(keys, "host_cpu", "proc_cpu", scope="run") == ["top/proc/cpu_pct"]
    assert describe("smi/gpu3/power_w").ids == (("i", "3"),)
    assert describe("tegrastats/power/vdd_gpu_soc_avg_mw").ids == (("rail", "vdd_gpu_soc"),)
    with pytest.raises(ValueError, match="unknown role"):
        with_role(keys, "power")
