"""What smi asks NVML, and how often, on several GPUs: counted on the NVML doubles
(tests/gpu_doubles.py ``FakeNvml.count``), per GPU, over simulated seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from gpu_doubles import MIB, FakeGpu, FakeNvml

from radtrack.device_entries import SHARED_GPUS_ENV, shared_entries, shared_hint
from radtrack.listeners import nvml
from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.devices import ALL_GPUS_ENV
from radtrack.listeners.smi import SmiListener

PUTIL = "nvmlDeviceGetProcessUtilization"
CONTEXTS = "nvmlDeviceGetComputeRunningProcesses"
FIELDS = "nvmlDeviceGetFieldValues"
ENERGY = "nvmlDeviceGetTotalEnergyConsumption"


@pytest.fixture(autouse=True)
def _fresh_nvml(monkeypatch):
    monkeypatch.delenv(SHARED_GPUS_ENV, raising=False)
    monkeypatch.delenv(ALL_GPUS_ENV, raising=False)
    monkeypatch.delenv("CUDA_MPS_PIPE_DIRECTORY", raising=False)
    nvml.reset()
    yield
    nvml.reset()


@pytest.fixture
def child():
    """A real process in this test's process tree (stands in for the workload)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _gpu(i: int, **kw) -> FakeGpu:
    return FakeGpu(uuid=f"GPU-{i:08d}-0000-0000-0000-000000000000", **kw)


def _run(smi: SmiListener, seconds: float, interval: float, start: float = 1000.0) -> list[dict]:
    """Samples every ``interval`` for ``seconds`` of a simulated clock (a little jitter)."""
    now = [start]
    smi.clock = lambda: now[0]
    out = []
    for k in range(round(seconds / interval)):
        now[0] = start + k * interval + (0.003 if k % 3 else -0.002)
        out.append(smi.sample())
    return out


def _listener(devices: list[str], interval: float, pid: int | None = None) -> SmiListener:
    smi = SmiListener(ListenerConfig(interval=interval, devices=devices, pid=pid))
    smi.clock = lambda: 999.9  # the probe, just before _run's simulated seconds
    return smi


def test_solo_gpus_read_no_sm_shares_a_shared_one_every_second(monkeypatch, child):
    """Rows the launcher says are alone on GPUs 0 and 2 and co-located on GPU 1: over 10 s
    at 0.1 s, the per-process SM readings (1.9 ms each on an H100) are asked on GPU 1 once a
    second and never on the solo GPUs, whose contexts (the run's memory) are listed every 5 s."""
    gpus = [_gpu(i, procs=[(child, 500 * MIB)],
                 putil=[(child, int(time.time() * 1e6) + 1, 40, 1)]) for i in range(3)]
    fake = FakeNvml(monkeypatch, gpus)
    monkeypatch.setenv(SHARED_GPUS_ENV, "1")
    smi = _listener(["0", "1", "2"], 0.1, pid=os.getpid())
    keys = {s.key for s in smi.probe()}
    tags = smi.tags()
    assert [tags[f"radtrack.listener.smi.gpu{i}.sharing"] for i in range(3)] == ["solo", "shared", "solo"]
    # the shares are declared everywhere: a solo GPU reads them once someone else arrives
    assert {f"smi/gpu{i}/proc_sm_util_pct" for i in range(3)} <= keys
    fake.reset_counts()
    for g in gpus:  # the driver's newer per-process samples
        g.putil.append((child, int(time.time() * 1e6) + 100, 40, 1))
    samples = _run(smi, 10.0, 0.1)
    for solo in (gpus[0], gpus[2]):
        assert fake.count(PUTIL, solo) == 0
        assert fake.count(CONTEXTS, solo) == 2  # at the first reading and 5 s later
        assert fake.count("nvmlDeviceGetMPSComputeRunningProcesses", solo) == 0
    assert fake.count(PUTIL, gpus[1]) == 10
    assert fake.count(CONTEXTS, gpus[1]) == 10
    seen = {k: sum(k in s for s in samples) for k in keys}
    assert seen["smi/gpu0/proc_mem_used_mib"] == 2 and seen["smi/gpu0/proc_sm_util_pct"] == 0
    assert seen["smi/gpu1/all_procs_sm_util_pct"] == 10 and seen["smi/gpu1/proc_mem_used_mib"] == 10
    assert samples[0]["smi/gpu1/proc_sm_util_pct"] == 40
    assert samples[0]["smi/gpu0/proc_mem_used_mib"] == 500
    final = smi.final_sample()  # the final reading lists the contexts again
    assert final["smi/gpu2/proc_mem_used_mib"] == 500 and "smi/gpu2/proc_sm_util_pct" not in final


def test_a_solo_gpu_turns_shared_when_another_process_arrives(monkeypatch, child):
    """Someone outside the run's tree starts on its GPU between two checks: from the next
    check on the GPU is read as shared, and the first SM reading averages the driver's
    samples back to the previous check, the newcomer's since its arrival among them."""
    gpu = _gpu(0, procs=[(child, 500 * MIB)])
    fake = FakeNvml(monkeypatch, [gpu])
    monkeypatch.setenv(SHARED_GPUS_ENV, "")
    smi = _listener(["0"], 0.1, pid=os.getpid())
    smi.probe()
    assert smi.tags()["radtrack.listener.smi.gpu0.sharing"] == "solo"
    fake.reset_counts()
    first = _run(smi, 1.0, 0.1)  # the first check: only the run's own context
    assert fake.count(PUTIL) == 0 and all("smi/gpu0/all_procs_sm_util_pct" not in s for s in first)
    other = os.getppid()  # a live process outside the test's tree
    now_us = int(time.time() * 1e6)
    gpu.procs.append((other, 700 * MIB))
    gpu.putil += [(other, now_us + 10, 60, 2), (child, now_us + 20, 30, 1)]
    later = _run(smi, 8.0, 0.1, start=1001.0)
    arrived = [s for s in later if "smi/gpu0/all_procs_sm_util_pct" in s]
    assert arrived, "the share of the process that arrived was never read"
    assert arrived[0]["smi/gpu0/all_procs_sm_util_pct"] == 90  # its samples since the last check
    assert arrived[0]["smi/gpu0/proc_sm_util_pct"] == 30
    n = fake.count(PUTIL)
    assert 3 <= n <= 5  # once a second from the switch (4 s after the first check) on
    assert not smi._states[0].procs.solo


def test_without_the_launchers_word_every_gpu_is_read_as_shared(monkeypatch, child):
    """A listener started by hand (no RADTRACK_SHARED_GPUS) reads the shares as it always
    did; an MPS client always (NVML books its work to the server it shares)."""
    gpus = [_gpu(i, procs=[(child, MIB)]) for i in range(2)]
    FakeNvml(monkeypatch, gpus)
    smi = _listener(["0", "1"], 0.1, pid=os.getpid())
    smi.probe()
    assert [st.shared for st in smi._states] == [True, True]
    monkeypatch.setenv(SHARED_GPUS_ENV, "")
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", "/tmp/radtrack-mps-pipe")
    smi = _listener(["0", "1"], 0.1, pid=os.getpid())
    smi.probe()
    assert [st.shared for st in smi._states] == [True, True]


def test_one_field_call_per_gpu_per_tick_with_every_field_due(monkeypatch):
    """Power, average power, memory temperature, the PCIe counters, the ECC counts and the
    energy counter are fields: each GPU's due ones in one nvmlDeviceGetFieldValues a tick,
    none read by its own function."""
    gpus = []
    for i in range(4):
        g = _gpu(i, energy_field=True)
        g.fields.update({197: 10_000, 198: 20_000, 3: 0, 4: 0})
        gpus.append(g)
    fake = FakeNvml(monkeypatch, gpus)
    smi = _listener([], 1.0)  # no CUDA_VISIBLE_DEVICES here: every GPU
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    smi.probe()
    assert all(st.energy_field for st in smi._states)
    assert smi.tags()["radtrack.listener.smi.gpu2.energy_source"] == "NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
    fake.reset_counts()
    samples = _run(smi, 30.0, 1.0)
    for g in gpus:
        assert fake.count(FIELDS, g) == 30  # one a tick, not one per reading
        assert fake.count(ENERGY, g) == 0
        assert fake.count("nvmlDeviceGetTotalEccErrors", g) == 0
        assert fake.count("nvmlDeviceGetPowerUsage", g) == 0
    assert sum("smi/gpu3/ecc_corrected_volatile_count" in s for s in samples) == 3  # every 10 s
    # every 5 s, a rate over the 5 s since the last read (none at the first: 0.1 s after the probe's)
    assert sum("smi/gpu3/pcie_tx_bytes_per_s" in s for s in samples) == 5
    assert sum("smi/gpu3/energy_j" in s for s in samples) == 6  # every 5 s: no power samples here
    assert sum("smi/gpu3/temp_c" in s for s in samples) == 30


def test_energy_every_30_s_where_the_driver_power_samples_fill_between(monkeypatch):
    """With the driver's 50-Hz power samples read, the energy counter (4-10 ms a read) is
    read every 30 s and at the final reading; the samples place the energy in between."""
    with_ring, without = _gpu(0), _gpu(1)
    with_ring.take_power_samples(30, 1_795_323_300_000_000)
    with_ring.ring_tick = 50
    FakeNvml(monkeypatch, [with_ring, without])
    smi = _listener(["0", "1"], 0.1)
    smi.probe()
    samples = _run(smi, 60.0, 0.1)
    assert sum("smi/gpu0/energy_j" in s for s in samples) == 2  # at 0 and 30 s
    assert sum("smi/gpu1/energy_j" in s for s in samples) == 12  # every 5 s
    assert sum(len(t.values) for t in smi.timed_samples()) > 0
    assert "smi/gpu0/energy_j" in smi.final_sample()


def test_energy_field_not_used_where_it_disagrees_with_the_counter(monkeypatch):
    gpu = _gpu(0)
    gpu.fields[83] = 5  # a field that is not the counter nvmlDeviceGetTotalEnergyConsumption reads
    fake = FakeNvml(monkeypatch, [gpu])
    smi = _listener(["0"], 1.0)
    smi.probe()
    assert not smi._states[0].energy_field
    assert smi.tags()["radtrack.listener.smi.gpu0.energy_source"] == "nvmlDeviceGetTotalEnergyConsumption"
    fake.reset_counts()
    assert "smi/gpu0/energy_j" in smi.sample()
    assert fake.count(ENERGY, gpu) == 1


def test_only_the_rows_gpus_are_opened_unless_the_host_view_is_asked(monkeypatch):
    gpus = [_gpu(i) for i in range(4)]
    fake = FakeNvml(monkeypatch, gpus)
    smi = _listener(["1", "3"], 0.1)
    keys = {s.key for s in smi.probe()}
    _run(smi, 2.0, 0.1)
    assert {c.args[0] for c in fake.calls["nvmlDeviceGetHandleByIndex"].call_args_list} == {1, 3}
    assert not fake.counts(gpus[0]) and not fake.counts(gpus[2])
    assert {k.split("/")[1] for k in keys} == {"gpu0", "gpu1"}
    assert smi.tags()["radtrack.listener.smi.gpu1.nvml_index"] == "3"
    monkeypatch.setenv(ALL_GPUS_ENV, "1")  # the host-wide view: every GPU, by NVML index
    smi = _listener(["1", "3"], 0.1)
    keys = {s.key for s in smi.probe()}
    assert {k.split("/")[1] for k in keys} == {"gpu0", "gpu1", "gpu2", "gpu3"}
    assert smi.tags()["radtrack.listener.smi.gpu1.uuid"] == gpus[1].uuid


@pytest.mark.parametrize(("rows", "expected"), [
    ([["0"], ["1"]], ["", ""]),  # each alone on its GPU
    ([["0", "1"], ["1"]], ["1", "1"]),  # GPU 1 time-shared
    ([["0"]], [""]),  # a workload of one row
    ([None, ["1"]], ["*", "1"]),  # a row that sees every GPU shares them all
    ([None], [""]),
    ([["GPU-558ac94e"], ["GPU-558ac94e-f540-acd2-43d4-5a86d3074202"]], ["GPU-558ac94e",
                                                                       "GPU-558ac94e-f540-acd2-43d4-5a86d3074202"]),
    ([["GPU-558ac94e"], ["GPU-11111111"]], ["", ""]),
    ([["0"], ["GPU-11111111"]], ["0", "GPU-11111111"]),  # index against UUID: cannot tell
    ([["MIG-aaaa"], ["MIG-bbbb"]], ["MIG-aaaa", "MIG-bbbb"]),  # instances of one GPU, perhaps
    ([["0"], []], ["", ""]),  # a row with no GPU shares none
])
def test_the_launcher_says_which_entries_another_row_may_share(rows, expected):
    assert shared_entries(rows) == expected


def test_the_listener_reads_the_launchers_word():
    assert shared_hint(None) is None and shared_hint("*") is None
    assert shared_hint("") == set()
    assert shared_hint("1, GPU-abc") == {"1", "GPU-abc"}


# -- through the launcher -----------------------------------------------------------------

@pytest.mark.slow
def test_the_launcher_tells_each_rows_smi_whether_its_gpu_is_shared(store, tmp_path, monkeypatch):
    """A workload of three rows through the real CLI and a real SQLite store, NVML doubles in
    every process: A alone on GPU 0, B and C time-sharing GPU 1. A's smi never asks for the
    per-process SM readings after its probe; B's and C's ask every second, and their GPU's
    energy still adds up (attributed + other + idle = measured, < 1 %)."""
    import json
    from pathlib import Path

    from mlflow import MlflowClient

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
    import nvml_scenario
    from fakehost import H100_UUID, SECOND_UUID, FakeHost, gpu
    from support import radtrack_cli

    FakeHost(tmp_path, monkeypatch, gpus=[gpu(0), gpu(1, SECOND_UUID)])
    calls = tmp_path / "nvml-calls.jsonl"
    env = nvml_scenario.write(tmp_path / "scenario.json", [
        {"uuid": H100_UUID, "watts": 300.0, "procs": [{"match": "--tag a", "sm": 80, "mem_mib": 900}]},
        {"uuid": SECOND_UUID, "watts": 400.0, "procs": [{"match": "--tag b", "sm": 60, "mem_mib": 500},
                                                        {"match": "--tag c", "sm": 20, "mem_mib": 300}]}],
        call_log=str(calls))
    job = Path(__file__).resolve().parents[1] / "scripts" / "shared_gpu_job.py"
    sheet = tmp_path / "paces.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval\n"
                     + "".join(f"paces,1,,,{dev},-,{job},smi,--tag {tag} --seconds 4,0.1\n"
                               for tag, dev in (("a", 0), ("b", 1), ("c", 1))))
    p = radtrack_cli(str(sheet), env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    exp = MlflowClient(store).get_experiment_by_name("paces")
    runs = {r.info.run_name: r for r in MlflowClient(store).search_runs([exp.experiment_id])}
    a, b, c, parent = runs["paces-1 A"], runs["paces-1 B"], runs["paces-1 C"], runs["paces-1"]
    assert a.data.tags["radtrack.listener.smi.gpu0.sharing"] == "solo"
    assert b.data.tags["radtrack.listener.smi.gpu0.sharing"] == "shared"
    assert c.data.tags["radtrack.listener.smi.gpu0.sharing"] == "shared"
    assert a.data.tags["radtrack.attribution.gpu0"] == "solo"
    assert b.data.tags["radtrack.attribution.gpu0"] == "process-sm-util"
    assert "system/smi/gpu0/proc_mem_used_mib" in a.data.metrics  # the run's memory, still
    assert "system/smi/gpu0/proc_sm_util_pct" not in a.data.metrics
    assert "system/smi/gpu0/proc_sm_util_pct" in b.data.metrics
    listeners = [json.loads(line) for line in calls.read_text().splitlines()]
    listeners = [x for x in listeners if "listeners" in Path(x["argv"][0]).parts]
    by_gpu: dict[str, list[dict[str, int]]] = {}
    for x in listeners:
        for uuid, counts in x["by_gpu"].items():
            by_gpu.setdefault(uuid, []).append(counts)
    # A's smi watches GPU 0 (a restart would add a process); B's and C's only look at it
    # for their trees every 5 s (radtrack/listeners/gpu_follow.py): its contexts, nothing else
    watching = [x for x in by_gpu[H100_UUID] if "nvmlDeviceGetFieldValues" in x]
    assert watching
    for solo in watching:
        assert solo.get("nvmlDeviceGetProcessUtilization", 0) <= 1  # the probe's, no more
        assert solo["nvmlDeviceGetComputeRunningProcesses"] >= 2  # the first and the final reading
    for look in (x for x in by_gpu[H100_UUID] if x not in watching):
        assert set(look) <= {"nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetMaxMigDeviceCount"}
        assert look["nvmlDeviceGetComputeRunningProcesses"] <= 2, look  # at the probe, 5 s on
    shared = [x for x in by_gpu[SECOND_UUID] if "nvmlDeviceGetFieldValues" in x]
    assert len(shared) >= 2  # B's and C's (A's smi only looks at GPU 1, as above)
    # the probe's, the first and the final reading, and once a second between
    assert all(x["nvmlDeviceGetProcessUtilization"] >= 3 for x in shared), by_gpu
    m = parent.data.metrics
    parts = (b.data.metrics["summary/attribution/gpu0/energy_j"]
             + c.data.metrics["summary/attribution/gpu0/energy_j"]
             + m["summary/workload/gpu1/other_energy_j"] + m["summary/workload/gpu1/idle_energy_j"])
    assert parts == pytest.approx(m["summary/workload/gpu1/energy_j"], rel=0.01)


def test_the_host_wide_view_through_the_listener_command(tmp_path):
    """``python -m radtrack.listeners smi`` in a process that sees GPU 1 of two (NVML doubles
    in the child, tests/doubles/nvml_scenario.py): GPU 1 only, as gpu0; with
    RADTRACK_ALL_GPUS=1 both, by NVML index."""
    import json
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
    import nvml_scenario

    uuids = [f"GPU-{i:08d}-0000-0000-0000-000000000000" for i in range(2)]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "1", **nvml_scenario.write(
        tmp_path / "two.json", [{"uuid": u, "watts": 100.0, "procs": []} for u in uuids])}
    env.pop(ALL_GPUS_ENV, None)

    def hello(extra: dict[str, str]) -> dict:
        p = subprocess.run([sys.executable, "-m", "radtrack.listeners", "smi", "--count", "1"],
                           capture_output=True, text=True, timeout=120, env={**env, **extra})
        assert p.returncode == 0, p.stdout + p.stderr
        return json.loads(p.stdout.splitlines()[0])

    own = hello({})
    assert {m["key"].split("/")[1] for m in own["metrics"]} == {"gpu0"}
    assert own["tags"]["radtrack.listener.smi.gpu0.uuid"] == uuids[1]
    host = hello({ALL_GPUS_ENV: "1"})
    assert {m["key"].split("/")[1] for m in host["metrics"]} == {"gpu0", "gpu1"}
    assert [host["tags"][f"radtrack.listener.smi.gpu{i}.uuid"] for i in range(2)] == uuids
