"""The physical GPU next to each run in the frontend's legend and in ``radtrack report``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "doubles"))
from fakehost import H100_UUID, SECOND_UUID, FakeHost, gpu  # noqa: E402
from support import radtrack_cli, report_rows, run_cli  # noqa: E402

from radtrack.compute.gpulabel import physical_gpus  # noqa: E402

SCRIPT = Path(__file__).parents[1] / "scripts" / "exit_code.py"


def test_label_from_smi_tags_devices_and_mig() -> None:
    smi = {"radtrack.listener.smi.gpu0.uuid": SECOND_UUID,
           "radtrack.listener.smi.gpu0.nvml_index": "1"}
    assert physical_gpus(smi) == "GPU1 5cef8446"
    pair = {"radtrack.devices": "0+1", "radtrack.gpu.uuids": f"{H100_UUID},{SECOND_UUID}"}
    assert physical_gpus(pair) == "GPU0 558ac94e, GPU1 5cef8446"
    by_uuid = {"radtrack.devices": "GPU-5cef", "radtrack.gpu.uuids": f"{H100_UUID},{SECOND_UUID}"}
    assert physical_gpus(by_uuid) == "GPU1 5cef8446"
    mig = {"radtrack.devices": "1", "radtrack.gpu.uuids": f"{H100_UUID},{SECOND_UUID}",
           "radtrack.mig_uuid": "MIG-0e5f2a3b-aaaa-bbbb-cccc-000000000000"}
    assert physical_gpus(mig) == "GPU1 5cef8446 MIG 0e5f2a3b"
    # an index without a UUID says nothing the metric key does not: no label
    assert physical_gpus({"radtrack.devices": "0"}) == ""
    assert physical_gpus({}) == ""


def test_a_device_is_whichever_listener_described_it() -> None:
    """Identity comes from any listener's device facts (radtrack/vocab/device_identity.py):
    another vendor's listener (its own UUID form, ``index``) reads as smi's tags do."""
    from radtrack.compute.gpu_uses import followed, physical_gpu
    from radtrack.vocab.device_identity import device_fact, device_facts

    amd = {"radtrack.listener.amdsmi.gpu0.uuid": "0cff74a1-0000-1000-80e8-7e7f1ad43cdd",
           "radtrack.listener.amdsmi.gpu0.index": "3", "radtrack.listener.amdsmi.gpu0.name": "MI300X",
           "radtrack.listener.amdsmi.gpu0.power_sensor": "average"}
    assert physical_gpus(amd) == "GPU3 0cff74a1"
    assert physical_gpu(amd, "gpu0") == "0cff74a1-0000-1000-80e8-7e7f1ad43cdd"
    assert device_facts(amd) == {"gpu0": {"uuid": "0cff74a1-0000-1000-80e8-7e7f1ad43cdd",
                                          "index": "3", "name": "MI300X"}}
    # a runs frame's row (tag.-prefixed), a MIG slice's parent, a followed GPU, NaN cells
    row = {"tag.radtrack.listener.smi.gpu1.uuid": "MIG-1f2e", "tag.radtrack.listener.smi.gpu1.mig": "true",
           "tag.radtrack.listener.smi.gpu1.parent_uuid": SECOND_UUID,
           "tag.radtrack.listener.smi.gpu1.followed": "12.5", "tag.radtrack.listener.smi.gpu2.uuid": float("nan")}
    assert physical_gpu(row, "gpu1") == SECOND_UUID and followed(row, "gpu1") == 12.5
    assert device_fact(row, "gpu1", "mig") == "true" and device_fact(row, "gpu2", "uuid") is None
    with pytest.raises(ValueError, match="unknown device fact 'serial'"):
        device_fact(row, "gpu1", "serial")


@pytest.mark.slow
def test_two_runs_on_two_gpus_are_told_apart(store: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # a two-GPU host (the recorded-output doubles), one row on each GPU, side by side
    FakeHost(tmp_path, monkeypatch, gpus=[gpu(0), gpu(1, SECOND_UUID)])
    sheet = tmp_path / "pair.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
                     f"pair,1,,,0,-,{SCRIPT},none,0\n"
                     f"pair,1,,,1,-,{SCRIPT},none,0\n")
    p = radtrack_cli(str(sheet), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    report = run_cli("report", "pair", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    rows = report_rows(report.stdout)
    assert rows["pair-1 A"]["gpu_used"] == "GPU0 558ac94e", report.stdout
    assert rows["pair-1 B"]["gpu_used"] == "GPU1 5cef8446", report.stdout
    # the page's half (plotly, dash: the ui extra) only where the page can be imported, so
    # the `gpu` test of this file runs on a GPU host without the page's packages
    pytest.importorskip("plotly")
    from radtrack.frontend.data import DataSource
    from radtrack.frontend.figures import run_labels

    source = DataSource(store)
    runs = source.experiment_runs("pair")
    rows = runs[runs["letter"].notna()]
    labels = run_labels(rows)
    assert sorted(labels.values()) == ["pair-1 A · GPU0 558ac94e", "pair-1 B · GPU1 5cef8446"]


@pytest.mark.gpu
def test_real_gpu_run_shows_its_gpu_and_stores_system_keys(store: str, tmp_path: Path) -> None:
    busy = Path(__file__).parents[1] / "scripts" / "busy.py"
    p = radtrack_cli("-e", "gpulabel", "-d", "0", "-l", "smi", "--interval", "0.2", str(busy), "3",
                     cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    from mlflow import MlflowClient

    c = MlflowClient(store)
    exp = c.get_experiment_by_name("gpulabel")
    run = next(r for r in c.search_runs([exp.experiment_id])
               if r.data.tags.get("radtrack.role") == "row")
    tags = run.data.tags
    uuid = tags["radtrack.listener.smi.gpu0.uuid"]
    assert "system/smi/gpu0/power_w" in run.data.metrics
    assert "smi/gpu0/power_w" not in run.data.metrics
    expected = f"GPU{tags['radtrack.listener.smi.gpu0.nvml_index']} {uuid[4:12]}"
    assert physical_gpus(tags) == expected
    report = radtrack_cli("report", "gpulabel", cwd=tmp_path)
    assert report.returncode == 0 and expected in report.stdout, report.stdout + report.stderr
