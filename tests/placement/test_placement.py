"""WorkloadPlacement against nvidia-smi / nvidia-cuda-mps-control doubles: exact command
sequences, per-row environments, and teardown after success, exceptions and Ctrl-C."""

from __future__ import annotations

from pathlib import Path

import pytest
from doubles.fakehost import H100_UUID, SECOND_UUID, FakeHost, gpu

from radtrack.errors import PlacementError
from radtrack.placement import WorkloadPlacement
from radtrack.placement.mig import parse_created_instance
from radtrack.spec import RunSpec

MIG_DATA = Path(__file__).parents[1] / "data" / "mig"
OTHERS_INSTANCE = {"gpu": 0, "gi": 1, "profile": "1g.10gb",
                   "uuid": "MIG-00000000-1111-5222-8333-444444444444"}


def spec(letter: str, devices: list[str], collocation: str = "-", **kw) -> RunSpec:
    return RunSpec(experiment="e", workload=1, file=Path("/x.py"), devices=devices,
                   collocation=collocation, letter=letter, **kw)


@pytest.fixture
def host(tmp_path, monkeypatch) -> FakeHost:
    return FakeHost(tmp_path, monkeypatch,
                    gpus=[gpu(0, mig_mode="Enabled"), gpu(1, SECOND_UUID)],
                    mig=[OTHERS_INSTANCE])


def quiet(_: str) -> None:
    pass


# --- plain -----------------------------------------------------------------------------


def test_plain_rows_get_their_devices_and_nothing_is_run(host, tmp_path):
    a, b, c = spec("A", ["0"]), spec("B", ["0", "1"]), spec("C", [])
    with WorkloadPlacement([a, b, c], tmp_path / "run", log=quiet) as p:
        assert p.env_for(a) == {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
        assert p.env_for(b)["CUDA_VISIBLE_DEVICES"] == "0,1"
        assert p.env_for(c) == {}
        assert p.tags_for(a) == {} and p.artifacts() == []
    assert host.calls() == []
    assert any("rows A, B time-share" in s for s in p.describe())


# --- MPS -------------------------------------------------------------------------------


def test_mps_daemon_lifecycle_and_client_env(host, tmp_path):
    run_dir = tmp_path / "run"
    a, b = spec("A", ["1"], "mps"), spec("B", ["1"], "mps:50")
    pipe, logs = run_dir / "mps" / "gpu1" / "pipe", run_dir / "mps" / "gpu1" / "log"
    daemon_env = {"CUDA_VISIBLE_DEVICES": SECOND_UUID, "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                  "CUDA_MPS_PIPE_DIRECTORY": str(pipe), "CUDA_MPS_LOG_DIRECTORY": str(logs)}
    with WorkloadPlacement([a, b], run_dir, log=quiet) as p:
        calls = host.calls("nvidia-cuda-mps-control")
        assert [(c["argv"], c["env"], c["stdin"]) for c in calls] == [(["-d"], daemon_env, None)]
        assert (pipe / "control").exists()
        assert p.env_for(a) == daemon_env
        assert p.env_for(b) == {**daemon_env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50"}
        assert p.artifacts() == [logs / "control.log"]
    calls = host.calls("nvidia-cuda-mps-control")
    assert [(c["argv"], c["env"], c["stdin"]) for c in calls] == [
        (["-d"], daemon_env, None), ([], daemon_env, "quit\n")]
    assert not (pipe / "control").exists()
    assert "Cmd:quit" in (logs / "control.log").read_text()
    assert host.argvs(changing_only=True) == []


def test_mps_daemon_per_device_set(host, tmp_path):
    rows = [spec("A", ["0"], "mps"), spec("B", ["1"], "mps"), spec("C", ["0"], "mps")]
    with WorkloadPlacement(rows, tmp_path / "run", log=quiet) as p:
        visible = [c["env"]["CUDA_VISIBLE_DEVICES"] for c in host.calls("nvidia-cuda-mps-control")]
        assert visible == [H100_UUID, SECOND_UUID]
        assert p.env_for(rows[0])["CUDA_MPS_PIPE_DIRECTORY"] == \
            p.env_for(rows[2])["CUDA_MPS_PIPE_DIRECTORY"] != \
            p.env_for(rows[1])["CUDA_MPS_PIPE_DIRECTORY"]
    quits = [c for c in host.calls("nvidia-cuda-mps-control") if c["stdin"] == "quit\n"]
    assert [c["env"]["CUDA_VISIBLE_DEVICES"] for c in quits] == [SECOND_UUID, H100_UUID]


@pytest.mark.parametrize("error", [RuntimeError("script crashed"), KeyboardInterrupt()])
def test_mps_daemon_quits_after_exception_and_ctrl_c(host, tmp_path, error):
    with pytest.raises(type(error)), WorkloadPlacement([spec("A", ["0"], "mps")],
                                                       tmp_path / "run", log=quiet):
        raise error
    stdins = [c["stdin"] for c in host.calls("nvidia-cuda-mps-control")]
    assert stdins == [None, "quit\n"]


def test_long_run_dir_puts_mps_pipes_in_a_short_folder(host, tmp_path):
    run_dir = tmp_path / ("x" * 120)
    with WorkloadPlacement([spec("A", ["0"], "mps")], run_dir, log=quiet) as p:
        pipe = Path(p.env_for(spec("A", ["0"], "mps"))["CUDA_MPS_PIPE_DIRECTORY"])
        assert len(str(pipe / "control")) < 107 and (pipe / "control").exists()
        assert p.artifacts()[0].is_relative_to(run_dir)
    assert not pipe.exists()


def test_mps_start_failure_undoes_earlier_steps(host, tmp_path):
    host.update(fail={"mps_start": {"rc": 1, "stdout": "cannot start daemon\n"}})
    rows = [spec("A", ["0"], "mps", clocks="1410")]
    with pytest.raises(PlacementError, match="starting the MPS control daemon.*cannot start"):
        with WorkloadPlacement(rows, tmp_path / "run", log=quiet):
            pytest.fail("the block must not run")
    assert host.argvs(changing_only=True) == [["-i", "0", "-lgc", "1410,1410"], ["-i", "0", "-rgc"]]
    assert "locked_clocks" not in host.state["gpus"][0]
    assert [c["stdin"] for c in host.calls("nvidia-cuda-mps-control")] == [None]


def test_mps_daemon_that_ignores_quit_is_reported(host, tmp_path, monkeypatch):
    monkeypatch.setattr("radtrack.placement.mps.READY_TIMEOUT_S", 0.2)
    monkeypatch.setattr("radtrack.placement.mps.QUIT_TIMEOUT_S", 0.2)
    host.update(mps_quit_ignored=True)
    with pytest.raises(PlacementError, match="still listens.*quit it by hand: echo quit"):
        with WorkloadPlacement([spec("A", ["0"], "mps")], tmp_path / "run", log=quiet):
            pass


# --- MIG -------------------------------------------------------------------------------


def test_parse_created_instance_from_composed_recording():
    text = (MIG_DATA / "cgi_C.txt").read_text().replace("{gi}", " 5").replace("{gpu}", " 0")
    assert parse_created_instance(text) == 5
    assert parse_created_instance("Unable to create a GPU instance: Insufficient Resources") is None


def test_mig_instances_created_used_and_destroyed(host, tmp_path):
    a, b = spec("A", ["0"], "1g.10gb"), spec("B", [H100_UUID], "3g.40gb")
    with WorkloadPlacement([a, b], tmp_path / "run", log=quiet) as p:
        assert host.argvs(changing_only=True) == [
            ["mig", "-i", "0", "-cgi", "1g.10gb", "-C"], ["mig", "-i", "0", "-cgi", "3g.40gb", "-C"]]
        mine = {i["profile"]: i for i in host.state["mig"] if i != OTHERS_INSTANCE}
        assert p.env_for(a) == {"CUDA_VISIBLE_DEVICES": mine["1g.10gb"]["uuid"]}
        assert p.env_for(b) == {"CUDA_VISIBLE_DEVICES": mine["3g.40gb"]["uuid"]}
        assert p.tags_for(a) == {"radtrack.mig_profile": "1g.10gb",
                                 "radtrack.mig_uuid": mine["1g.10gb"]["uuid"],
                                 "radtrack.mig_gpu_instance": str(mine["1g.10gb"]["gi"])}
        gis = (mine["1g.10gb"]["gi"], mine["3g.40gb"]["gi"])
        assert OTHERS_INSTANCE["gi"] not in gis
        host.clear_log()
    b_gi, a_gi = str(gis[1]), str(gis[0])
    assert host.argvs(changing_only=True) == [
        ["mig", "-i", "0", "-gi", b_gi, "-dci"], ["mig", "-i", "0", "-gi", b_gi, "-dgi"],
        ["mig", "-i", "0", "-gi", a_gi, "-dci"], ["mig", "-i", "0", "-gi", a_gi, "-dgi"]]
    assert host.state["mig"] == [OTHERS_INSTANCE]
    with pytest.raises(PlacementError, match="does not exist"):
        p.env_for(a)
    assert p.tags_for(a)["radtrack.mig_uuid"] == mine["1g.10gb"]["uuid"]  # kept for the run


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_mig_instances_destroyed_after_exception_and_ctrl_c(host, tmp_path, error):
    rows = [spec("A", ["0"], "1g.10gb"), spec("B", ["0"], "1g.10gb")]
    with pytest.raises(type(error)), WorkloadPlacement(rows, tmp_path / "run", log=quiet):
        assert len(host.state["mig"]) == 3
        raise error
    assert host.state["mig"] == [OTHERS_INSTANCE]


def test_mig_creation_failure_destroys_what_was_created(host, tmp_path):
    host.update(cgi_limit=1)
    rows = [spec("A", ["0"], "1g.10gb"), spec("B", ["0"], "7g.80gb")]
    with pytest.raises(PlacementError, match="creating MIG instance 7g.80gb on GPU 0 failed.*"
                                              "Insufficient Resources"):
        with WorkloadPlacement(rows, tmp_path / "run", log=quiet):
            pytest.fail("the block must not run")
    changing = host.argvs(changing_only=True)
    assert changing[:2] == [["mig", "-i", "0", "-cgi", "1g.10gb", "-C"],
                            ["mig", "-i", "0", "-cgi", "7g.80gb", "-C"]]
    assert [a[-1] for a in changing[2:]] == ["-dci", "-dgi"]
    assert host.state["mig"] == [OTHERS_INSTANCE]


def test_mig_refused_without_root(host, tmp_path):
    host.update(root=False)
    with pytest.raises(PlacementError, match="refused: insufficient permissions"):
        with WorkloadPlacement([spec("A", ["0"], "1g.10gb")], tmp_path / "run", log=quiet):
            pass
    assert host.state["mig"] == [OTHERS_INSTANCE]
    assert host.argvs(changing_only=True) == [["mig", "-i", "0", "-cgi", "1g.10gb", "-C"]]


def test_failed_destroy_is_reported_and_retried(host, tmp_path):
    p = WorkloadPlacement([spec("A", ["0"], "1g.10gb")], tmp_path / "run", log=quiet)
    host.update(fail={"dgi": {"rc": 15, "stdout": "In use by another client\n"}})
    with pytest.raises(PlacementError, match=r"GPU cleanup failed.*destroy it by hand: sudo "
                                             r"nvidia-smi mig -i 0 -gi \d+ -dci"):
        with p:
            pass
    assert len(host.state["mig"]) == 2
    host.update(fail={})
    assert p.close() == []
    assert host.state["mig"] == [OTHERS_INSTANCE]
    host.clear_log()
    assert p.close() == [] and host.calls() == []  # idempotent


# --- clocks and power ------------------------------------------------------------------


def test_clocks_and_power_set_and_restored(host, tmp_path):
    rows = [spec("A", ["1"], clocks="1200,1980", power_limit=300.0),
            spec("B", [SECOND_UUID], clocks="1200,1980")]
    with WorkloadPlacement(rows, tmp_path / "run", log=quiet):
        assert host.state["gpus"][1]["locked_clocks"] == [1200, 1980]
        assert host.state["gpus"][1]["power_limit"] == 300.0
    assert host.argvs() == [
        ["--query-gpu=index,uuid,name,mig.mode.current,driver_version,power.limit,"
         "power.min_limit,power.max_limit,clocks.max.sm", "--format=csv,noheader,nounits"],
        ["-i", "1", "--query-gpu=power.limit", "--format=csv,noheader,nounits"],
        ["-i", "1", "-pl", "300"], ["-i", "1", "-lgc", "1200,1980"],
        ["-i", "1", "-rgc"], ["-i", "1", "-pl", "700.00"]]
    assert host.state["gpus"][1]["power_limit"] == 700.0
    assert "locked_clocks" not in host.state["gpus"][1]


def test_clocks_restored_after_ctrl_c(host, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with WorkloadPlacement([spec("A", ["0"], clocks="1410")], tmp_path / "run", log=quiet):
            raise KeyboardInterrupt
    assert host.argvs(changing_only=True) == [["-i", "0", "-lgc", "1410,1410"], ["-i", "0", "-rgc"]]


def test_power_limit_refused_without_root_changes_nothing(host, tmp_path):
    host.update(root=False)
    rows = [spec("A", ["0"], clocks="1410", power_limit=250.0)]
    with pytest.raises(PlacementError, match="power limit of GPU 0 to 250 W was refused: "
                                              "insufficient permissions"):
        with WorkloadPlacement(rows, tmp_path / "run", log=quiet):
            pass
    assert host.argvs(changing_only=True) == [["-i", "0", "-pl", "250"]]
    assert host.state["gpus"][0]["power_limit"] == 700.0


def test_clocks_not_supported_is_a_clear_error(host, tmp_path):
    host.update(fail={"lgc": {"rc": 3, "stdout": "Setting locked GPU clocks is not supported "
                                                  "for GPU 00000000:16:06.0.\n"}})
    with pytest.raises(PlacementError, match="locking the SM clocks of GPU 1 .* is not supported"):
        with WorkloadPlacement([spec("A", ["1"], clocks="1410")], tmp_path / "run", log=quiet):
            pass
    assert host.argvs(changing_only=True) == [["-i", "1", "-lgc", "1410,1410"]]


def test_conflicting_settings_on_one_gpu_are_refused(host, tmp_path):
    rows = [spec("A", ["0"], power_limit=300.0), spec("B", [H100_UUID], power_limit=400.0)]
    with pytest.raises(PlacementError, match="different PowerLimit on GPU 0"):
        WorkloadPlacement(rows, tmp_path / "run", log=quiet)


# --- describe --------------------------------------------------------------------------


def test_describe_runs_nothing_that_changes_the_gpu(host, tmp_path):
    rows = [spec("A", ["0"], "1g.10gb", clocks="1410"), spec("B", ["1"], "mps:30",
                                                            power_limit=300.0)]
    p = WorkloadPlacement(rows, tmp_path / "run", log=quiet)
    steps = p.describe()
    assert host.argvs(changing_only=True) == [] and host.calls("nvidia-cuda-mps-control") == []
    text = "\n".join(steps)
    for expected in ("nvidia-smi -i 0 -lgc 1410,1410", "nvidia-smi -i 1 -pl 300",
                     "nvidia-smi mig -i 0 -cgi 1g.10gb -C", "nvidia-cuda-mps-control -d",
                     "-dci, then -dgi", "echo quit"):
        assert expected in text
    assert p.planned_env(rows[0]) == {"CUDA_VISIBLE_DEVICES": "MIG-<created at run time>"}
    assert p.planned_env(rows[1])["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "30"
    assert not (tmp_path / "run").exists()


@pytest.mark.gpu
def test_real_gpu_plain_placement_runs_nothing(tmp_path):
    """On a real GPU: a plain workload needs no nvidia-smi call and no privileges."""
    with WorkloadPlacement([spec("A", ["0"])], tmp_path / "run", log=quiet) as p:
        assert p.env_for(spec("A", ["0"]))["CUDA_VISIBLE_DEVICES"] == "0"
