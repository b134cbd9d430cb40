"""An AMD GPU gets everything an NVIDIA GPU gets, through the amdsmi listener alone (issue 48).

One launch through the CLI into a real SQLite store, with the doubles of ROCm's ``amdsmi``
bindings (tests/doubles/amdsmi_site): two rows of one workload time-share AMD GPU 0 (their
scripts at 75 % and 25 % of its GFX engine), GPU 1 idles beside them. Each run gets the
counter's energy with its 95 % interval, co-location attribution by the per-process GFX
shares, code-window energy (a window shorter than the 1-s default sensor period flagged),
the GPU label from the listener's UUID and index, ``radtrack report``'s summary and the
page's Summary tab (its Dash callback, in this process). A third row, of a second workload,
names AMD GPU 1 in Devices: the launcher's inventory holds the AMD GPUs amdsmi declares, so
the row is placed as on an NVIDIA GPU (its script sees ROCR_VISIBLE_DEVICES=1, its amdsmi
reads GPU 1 alone); a row asking for MPS on an AMD GPU is refused, naming the row. On a host
without ROCm, ``radtrack listeners`` says why amdsmi is unavailable.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient
from support import radtrack_cli, run_cli

sys.path.insert(0, str(Path(__file__).parents[1] / "doubles"))
import amdsmi_scenario  # noqa: E402

SCRIPTS = Path(__file__).parents[1] / "scripts"
BUSY_UUID, IDLE_UUID = "0cff74a1-0000-1000-80e8-7e7f1ad43cdd", "1dff74a1-0000-1000-80e8-7e7f1ad43cde"
BUSY_W, IDLE_W = 400.0, 150.0
EPOCH_S = 2.0  # window_epochs.py: 3 epochs of 2 s (each with a 0.6-s eval), a 0.3-s warmup


@pytest.fixture(scope="module")
def amd(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("amd")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    env = amdsmi_scenario.write(tmp / "amd.json", [
        {"uuid": BUSY_UUID, "name": "AMD Instinct MI300X", "serial": "0x5A1B2C3D4E5F6071",
         "watts": BUSY_W, "gfx_pct": 100, "temps": {"hotspot": 71, "edge": 55, "vram": 60},
         "procs": [{"match": "--tag a", "gfx_pct": 75, "mem_mib": 1200},
                   {"match": "--tag b", "gfx_pct": 25, "mem_mib": 300}]},
        {"uuid": IDLE_UUID, "name": "AMD Instinct MI300X", "watts": IDLE_W,
         "unsupported": ["current_socket_power", "edge_temp"]}])
    env |= {"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(tmp / ".radtrack")}
    sheet = tmp / "amd.csv"
    show = tmp / "show_gpu_env.py"
    show.write_text(SHOW_GPU_ENV)
    sheet.write_text("Experiment,Workload,Devices,Collocation,File,Listeners,Params,Interval,RunName\n" + "".join(
        f"amd,1,-,-,{SCRIPTS / 'window_epochs.py'},amdsmi,--tag {t} --seconds {EPOCH_S:g},0.1,{t}\n"
        for t in "ab") + f"amd,2,1,-,{show},amdsmi,--out {tmp / 'placed.json'},0.1,placed\n")
    p = radtrack_cli(str(sheet), env=env, cwd=tmp, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("amd")
    runs = {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}
    report = run_cli("report", "amd", "--format", "csv", env=env, cwd=tmp, check=True)
    rows = {r["run_name"]: r for r in csv.DictReader(io.StringIO(report.stdout))}
    return {"uri": uri, "env": env, "tmp": tmp, "client": client, "runs": runs, "report": rows,
            "placed": json.loads((tmp / "placed.json").read_text())}


#: a row's script: the GPU variables it was given, then 1.5 s for its listener to read
SHOW_GPU_ENV = """import json, os, sys, time
names = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "RADTRACK_DEVICES")
with open(sys.argv[sys.argv.index("--out") + 1], "w") as f:
    json.dump({n: os.environ.get(n) for n in names}, f)
time.sleep(1.5)
"""


def test_an_amd_gpu_gets_energy_attribution_windows_and_a_label(amd: dict) -> None:
    runs, report = amd["runs"], amd["report"]
    a, b = runs["a"], runs["b"]
    parent = amd["client"].get_run(a.data.tags["mlflow.parentRunId"])  # workload 1's
    for run in (a, b):
        m, tags = run.data.metrics, run.data.tags
        assert tags["radtrack.listener.amdsmi.gpu0.uuid"] == BUSY_UUID
        assert tags["radtrack.listener.amdsmi.gpu0.index"] == "0"
        assert tags["radtrack.listener.amdsmi.gpu1.power_source"] == "average_socket_power"
        assert tags["radtrack.listener.amdsmi.unsupported"] == "gpu1/edge_temp_c"
        # the counter's energy over the run's span, with its interval
        duration = m["summary/duration_s"]
        assert m["summary/amdsmi/gpu0/energy_j"] == pytest.approx(BUSY_W * duration, rel=0.1)
        assert m["summary/amdsmi/gpu1/energy_j"] == pytest.approx(IDLE_W * duration, rel=0.1)
        assert m["summary/amdsmi/gpu0/energy_j_ci95_pct"] > 0
        # code windows: each 2-s epoch its GPUs' energy; a 0.6-s eval under the 1-s default period
        assert m["window/epoch/gpu_energy_j"] == pytest.approx(
            (BUSY_W + IDLE_W) * m["window/epoch/duration_s"], rel=0.15)
        assert m["window/eval/below_resolution_flag"] == 1.0 and "window/eval/gpu_energy_j" not in m
        # the GPU label from the listener's index and UUID, in the report
        assert report[run.info.run_name]["gpu_used"] == "GPU0 0cff74a1, GPU1 1dff74a1"
        row = report[run.info.run_name]
        assert float(row["power_w_mean"]) == pytest.approx(BUSY_W + IDLE_W, rel=0.02)
    # attribution on the shared GPU by the GFX shares (75 % vs 25 %), energy conserved
    assert a.data.tags["radtrack.attribution.gpu0"] != "held-time"
    a_j = a.data.metrics["summary/attribution/gpu0/energy_j"]
    b_j = b.data.metrics["summary/attribution/gpu0/energy_j"]
    assert a_j > 2 * b_j > 0
    pm = parent.data.metrics
    assert a_j + b_j + pm["summary/workload/gpu0/other_energy_j"] + pm["summary/workload/gpu0/idle_energy_j"] \
        == pytest.approx(pm["summary/workload/gpu0/energy_j"], rel=0.01)
    assert float(amd["report"]["a"]["energy_j"]) > float(amd["report"]["b"]["energy_j"])


def test_the_page_summarises_an_amd_run(amd: dict) -> None:
    pytest.importorskip("dash")
    from radtrack.frontend.app import create_app

    http = create_app(amd["uri"], amd["tmp"] / "views").server.test_client()
    ids = [amd["runs"][n].info.run_id for n in ("a", "b")]
    body = {"output": "summary-data.data", "outputs": {"id": "summary-data", "property": "data"},
            "inputs": [{"id": "tabs", "property": "value", "value": "summary"},
                       {"id": "selection", "property": "data", "value": ids},
                       {"id": "live", "property": "n_intervals", "value": 0}],
            "state": [], "changedPropIds": ["selection.data"]}
    answer = http.post("/_dash-update-component", json=body)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    rows = {r["run"]: r for r in answer.get_json()["response"]["summary-data"]["data"]["rows"]}
    label = "GPU0 0cff74a1, GPU1 1dff74a1"  # each run beside the physical GPUs it used
    assert set(rows) == {f"a · {label}", f"b · {label}"}, list(rows)
    a, b = rows[f"a · {label}"], rows[f"b · {label}"]
    assert a["power_w_mean"] == pytest.approx(BUSY_W + IDLE_W, rel=0.02)
    assert a["energy_j"] > b["energy_j"] > 0
    assert a["temp_c_mean"] == pytest.approx((71 + 40) / 2, rel=0.02)  # hotspot of each GPU, averaged


def test_listeners_says_why_amdsmi_is_unavailable(tmp_path: Path) -> None:
    p = run_cli("listeners")  # this process: no amdsmi bindings
    line = next(x for x in p.stdout.splitlines() if x.startswith("amdsmi"))
    assert "unavailable" in line and "amdsmi Python bindings" in line and "ROCm" in line
    env = amdsmi_scenario.write(tmp_path / "nodriver.json", [], init_fails="amdgpu driver not loaded")
    p = radtrack_cli("listeners", env=env, cwd=tmp_path, timeout=120)
    line = next(x for x in p.stdout.splitlines() if x.startswith("amdsmi"))
    assert "amdsmi_init failed" in line and "amdgpu driver" in line, p.stdout


def test_devices_place_a_row_on_an_amd_gpu(amd: dict) -> None:
    """Devices 1 on an AMD host: ROCR_VISIBLE_DEVICES (the variable amdsmi declares), not
    CUDA's; the row's amdsmi reads that GPU alone, with its energy and label."""
    assert amd["placed"] == {"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": None,
                             "CUDA_VISIBLE_DEVICES": None, "RADTRACK_DEVICES": "1"}
    run = amd["runs"]["placed"]
    m, tags = run.data.metrics, run.data.tags
    assert tags["radtrack.listener.amdsmi.gpu0.uuid"] == IDLE_UUID
    assert tags["radtrack.listener.amdsmi.gpu0.index"] == "1"
    assert not any(k.startswith("radtrack.listener.amdsmi.gpu1.") for k in tags)
    assert m["summary/amdsmi/gpu0/energy_j"] == pytest.approx(IDLE_W * m["summary/duration_s"], rel=0.1)
    assert amd["report"]["placed"]["gpu_used"] == "GPU1 1dff74a1"
    assert IDLE_UUID in tags["radtrack.gpu.uuids"]  # the host's GPUs, from the neutral inventory


def test_nvidia_only_features_on_an_amd_gpu_are_refused(amd: dict) -> None:
    sheet = amd["tmp"] / "mps.csv"
    sheet.write_text("Experiment,Devices,Collocation,Clocks,File,Env\n"
                     f"amd-mps,0,mps,,{SCRIPTS / 'sleeper.py'},\n"
                     f"amd-clocks,1,,1200,{SCRIPTS / 'sleeper.py'},\n"
                     f"amd-env,0,,,{SCRIPTS / 'sleeper.py'},HIP_VISIBLE_DEVICES=1\n")
    p = radtrack_cli(str(sheet), env=amd["env"], cwd=amd["tmp"], timeout=120)
    assert p.returncode != 0
    said = p.stdout + p.stderr
    gpu = "an AMD Instinct MI300X (read by amdsmi)"
    assert f"{sheet}:2: column Collocation: MPS is NVIDIA's: GPU 0 is {gpu}" in said, said
    assert f"{sheet}:3: column Clocks: Clocks is NVIDIA's: GPU 1 is {gpu}" in said, said
    assert (f"{sheet}:4: column Env: HIP_VISIBLE_DEVICES=1 conflicts with Devices 0, from which "
            "radtrack sets ROCR_VISIBLE_DEVICES") in said, said
    assert "no GPU listener reports" not in said, said
