"""A launch asks nvidia-smi for the host's GPUs once (radtrack/gpus.py ``prefetch_inventory``):
the query starts before the launcher imports its run machinery, the checks before the script
take its answer, and the runs' ``radtrack.gpu.*`` tags come from the same answer instead of a
second query after the script started. Through the real CLI, the nvidia-smi double and a
SQLite store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mlflow import MlflowClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "doubles"))
from fakehost import H100_UUID, FakeHost  # noqa: E402
from support import radtrack_cli  # noqa: E402

from radtrack import gpus  # noqa: E402


def _queries(host: FakeHost) -> list[list[str]]:
    return [a for a in host.argvs() if any(x.startswith("--query-gpu") for x in a)]


def test_one_inventory_query_serves_the_checks_and_the_host_tags(store, tmp_path, monkeypatch):
    host = FakeHost(tmp_path, monkeypatch)
    (tmp_path / "s.py").write_text("print('ran')\n")
    p = radtrack_cli("-e", "inv", "-d", "0", "-l", "none", str(tmp_path / "s.py"))
    assert p.returncode == 0, p.stderr[-3000:]
    assert len(_queries(host)) == 1, host.argvs()
    client = MlflowClient(store)
    exp = client.get_experiment_by_name("inv")
    row = next(r for r in client.search_runs([exp.experiment_id])
               if r.data.tags.get("radtrack.role") == "row")
    assert row.data.tags["radtrack.gpu.uuids"] == H100_UUID
    assert row.data.tags["radtrack.gpu.names"] == "NVIDIA H100 80GB HBM3"


def test_a_device_the_host_lacks_is_still_refused_from_the_prefetched_answer(store, tmp_path,
                                                                             monkeypatch):
    host = FakeHost(tmp_path, monkeypatch)
    (tmp_path / "s.py").write_text("open('ran', 'w').write('yes')\n")
    p = radtrack_cli("-e", "inv", "-d", "3", "-l", "none", str(tmp_path / "s.py"))
    assert p.returncode == 2, p.stderr[-3000:]
    assert "3" in p.stderr and "GPU" in p.stderr, p.stderr
    assert not (tmp_path / "ran").exists()
    assert len(_queries(host)) == 1, host.argvs()


def test_a_prefetched_answer_nobody_took_is_reaped(tmp_path, monkeypatch):
    # a slow nvidia-smi (30 s) whose answer the launch never needs: not left behind
    slow = tmp_path / "bin"
    slow.mkdir()
    (slow / "nvidia-smi").write_text("#!/bin/sh\nexec sleep 30\n")
    (slow / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}:{Path(sys.executable).parent}:/usr/bin:/bin")
    code = ("from radtrack import gpus; gpus.prefetch_inventory(); "
            "print(gpus._PREFETCHED[0].pid, flush=True)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=20, check=True).stdout
    pid = int(out.split()[0])
    assert not Path(f"/proc/{pid}").exists() or \
        Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z", "nvidia-smi left running"


def test_each_launch_in_one_process_asks_anew(tmp_path, monkeypatch):
    host = FakeHost(tmp_path, monkeypatch)
    gpus.prefetch_inventory()
    assert [g.uuid for g in gpus.inventory()] == [H100_UUID]
    assert [g.uuid for g in gpus.launch_inventory()] == [H100_UUID]  # no second query
    assert len(_queries(host)) == 1
    host.update(gpus=[])
    gpus.prefetch_inventory()  # the next launch: its own answer, not the last one's
    assert gpus.launch_inventory() == []
    assert len(_queries(host)) == 2
    gpus.forget_launch()
    assert gpus.inventory() == [] and len(_queries(host)) == 3
