"""The stressmark suite (workloads/) and the example sheets (examples/), without radtrack.

Two layers: in-process checks of the numerical kernels and the shared helper (fast, one
torch import), and every script run as a plain program with ``--smoke --device cpu`` (and
with bad arguments; all of them in one interpreter, each as ``python SCRIPT`` runs it:
tests/scripts/plain_batch.py). The scripts through ``python -m radtrack`` are
test_workloads_tracked.py's (a file of its own: its sheet and this file's batch, the two
long module fixtures, run on both xdist workers at once).
"""

from __future__ import annotations

import json
import math
import pickle
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from support import REPO
from workload_scripts import (
    EXAMPLES,
    THROUGHPUT,
    WITH_LOSS,
    WORKLOADS,
    plain_env,
    printed,
    run_script,
    write_cifar_batch,
)

# the batch of plain runs (plain_batch) takes minutes on 2 cores running two test files
pytestmark = pytest.mark.timeout(900)

#: (test key) -> (script, arguments) of every plain-program run that needs no process of its own
BAD_ARGUMENTS = [
    ("sgemm", ["--steps", "0"], "argument --steps: expected a positive integer, got '0'"),
    ("dgemm", ["--dtype", "int8"], "argument --dtype: invalid choice: 'int8'"),
    ("resnet", ["--device", "tpu"], "argument --device: expected cpu, cuda or cuda:<index>"),
    ("bert", ["--smoke", "--size", "100"], "--size 100: longer than the tiny model's 64"),
    ("kmeans", ["--smoke", "--size", "4"], "--clusters 8: more clusters than the 4 points"),
    ("dlrm", ["--bottom", "64-x"], "argument --bottom: expected layer widths joined by '-'"),
    ("spectrogram", ["--smoke", "--seconds", "0.01"], "is shorter than --n-fft 1024"),
]
# ddp starts its ranks through torch's elastic launcher: it keeps a process of its own
OWN_PROCESS = {"ddp"}


@pytest.fixture(scope="module")
def plain_batch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every plain-program run of this file that needs no process of its own, run one after
    the other in ONE interpreter (tests/scripts/plain_batch.py: each as ``python SCRIPT
    ARGS`` runs it, ``__main__``, its own argv, stdout, stderr and exit status): the
    scripts import torch (and transformers) for 2-5 CPU-s each, paid once here instead of
    ~25 times. Keyed by test: ``smoke/<name>``, ``bad/<name>``, ``cifar-data``,
    ``cifar-bad-dir``, ``cuda``, ``custom-metrics``."""
    tmp = tmp_path_factory.mktemp("plain")
    data = tmp / "cifar"
    write_cifar_batch(data / "data_batch_1", 12)
    write_cifar_batch(data / "data_batch_2", 8)
    (tmp / "empty").mkdir()
    jobs: dict[str, tuple[Path, list[str]]] = {
        **{f"smoke/{n}": (WORKLOADS / f"{n}.py", ["--smoke", "--device", "cpu"])
           for n in sorted(set(THROUGHPUT) - OWN_PROCESS)},
        **{f"bad/{n}": (WORKLOADS / f"{n}.py", ["--device", "cpu", *a]) for n, a, _ in BAD_ARGUMENTS},
        "cifar-data": (WORKLOADS / "cifar_cnn.py", ["--data-dir", str(data), "--epochs", "2",
                                                    "--workers", "0", "--device", "cpu"]),
        "cifar-bad-dir": (WORKLOADS / "cifar_cnn.py", ["--data-dir", str(tmp / "empty"),
                                                       "--device", "cpu"]),
        "custom-metrics": (EXAMPLES / "custom_metrics.py", ["--epochs", "2", "--samples", "256"]),
    }
    if not torch.cuda.is_available():
        jobs["cuda"] = (WORKLOADS / "sgemm.py", ["--smoke", "--device", "cuda"])
    spec = [{"script": str(path), "args": args, "out": str(tmp / key.replace("/", "-"))}
            for key, (path, args) in jobs.items()]
    (tmp / "jobs.json").write_text(json.dumps(spec))
    batch = subprocess.run([sys.executable, str(REPO / "tests" / "scripts" / "plain_batch.py"),
                            str(tmp / "jobs.json")], env=plain_env(), capture_output=True,
                           text=True, timeout=600)
    assert batch.returncode == 0, batch.stderr[-3000:]
    out: dict[str, subprocess.CompletedProcess[str]] = {}
    for key, job in zip(jobs, spec, strict=True):
        base = Path(job["out"])
        out[key] = subprocess.CompletedProcess(
            [job["script"], *job["args"]], int(Path(f"{base}.code").read_text()),
            Path(f"{base}.stdout").read_text(), Path(f"{base}.stderr").read_text())
    return out


@pytest.fixture
def workloads_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Import scripts as modules, the way they import each other."""
    monkeypatch.syspath_prepend(str(WORKLOADS))


def test_every_script_is_covered() -> None:
    scripts = {p.stem for p in WORKLOADS.glob("*.py") if not p.stem.startswith("_")}
    assert scripts == set(THROUGHPUT)


# --- the shared helper ----------------------------------------------------------------------


def test_timed_blocks_split_steps_and_average_loss(workloads_on_path: None) -> None:
    from _common import timed_blocks

    calls: list[str] = []
    losses = iter([1.0, 3.0, 5.0, 7.0, 9.0])

    def step() -> torch.Tensor:
        calls.append("step")
        return torch.tensor(next(losses))

    def warm() -> None:
        calls.append("warm")

    blocks = list(timed_blocks(step, steps=5, log_every=2, warmup=2, device=torch.device("cpu"),
                               warmup_step=warm))
    assert calls == ["warm", "warm"] + ["step"] * 5
    assert [(b.index, b.steps) for b in blocks] == [(1, 2), (2, 2), (3, 1)]
    assert [b.loss for b in blocks] == [2.0, 6.0, 9.0]
    assert all(b.seconds > 0 for b in blocks)


def test_log_block_names_and_rates(workloads_on_path: None, capsys: pytest.CaptureFixture[str],
                                   ) -> None:
    from _common import Block, log_block

    logged: list[tuple[dict[str, float], int]] = []

    class Recorder:
        def log_metrics(self, metrics: dict[str, float], epoch: int) -> None:
            logged.append((metrics, epoch))

    log_block(Recorder(), Block(index=3, steps=4, seconds=2.0, loss=0.5),  # type: ignore[arg-type]
              {"tflops": 1.5, "samples_per_s": 10}, extra={"parity_error": 0.0}, total_blocks=5)
    metrics, epoch = logged[0]
    assert epoch == 3
    assert metrics == {"throughput_tflops": 3.0, "throughput_samples_per_s": 20.0,
                       "step_time_s": 0.5, "loss": 0.5, "parity_error": 0.0}
    assert "block 3/5: throughput_tflops=3" in capsys.readouterr().out


def test_smoke_presets_yield_to_explicit_values(workloads_on_path: None) -> None:
    from _common import Sizes, Workload, positive_int

    w = Workload("t", dtypes=("fp32", "bf16"), steps=Sizes(1000, 2))
    w.sized("--size", positive_int, Sizes(8192, 64), "n")
    full = w.parse(["--device", "cpu"])
    assert (full.steps, full.size, full.dtype) == (1000, 8192, "fp32")
    smoke = w.parse(["--device", "cpu", "--smoke", "--size", "99"])
    assert (smoke.steps, smoke.size) == (2, 99)
    assert smoke.device == torch.device("cpu")


# --- numerical kernels -----------------------------------------------------------------------


def test_black_scholes_matches_reference_prices(workloads_on_path: None) -> None:
    from blackscholes import black_scholes

    one = torch.tensor([1.0], dtype=torch.float64)
    call, put = black_scholes(100 * one, 100 * one, one, 0.05 * one, 0.2 * one)
    # Hull, Options, Futures and Other Derivatives: S=K=100, T=1, r=5 %, sigma=20 %.
    assert float(call) == pytest.approx(10.4506, abs=1e-4)
    assert float(put) == pytest.approx(5.5735, abs=1e-4)


def test_monte_carlo_converges_to_closed_form(workloads_on_path: None) -> None:
    from blackscholes import black_scholes
    from montecarlo_options import simulate

    torch.manual_seed(1)
    opts = {k: torch.tensor([v], dtype=torch.float64) for k, v in
            {"spot": 100.0, "strike": 105.0, "expiry": 1.0, "rate": 0.03, "vol": 0.25}.items()}
    european, asian = simulate(opts, paths=200_000, time_steps=8)
    exact, _ = black_scholes(**opts)
    assert float(european) == pytest.approx(float(exact), rel=0.02)
    # An average is less volatile than the end price, so the Asian call is cheaper.
    assert 0 < float(asian) < float(european)


def test_kmeans_finds_separated_clusters(workloads_on_path: None) -> None:
    from kmeans import assign, update

    points = torch.tensor([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    centroids = torch.tensor([[1.0, 1.0], [9.0, 9.0], [50.0, 50.0]])
    labels, dists = assign(points, centroids, chunk=3)  # chunk smaller than the data
    assert labels.tolist() == [0, 0, 1, 1]
    assert dists.tolist() == pytest.approx([2.0, 1.0, 2.0, 5.0])
    new = update(points, labels, centroids)
    assert new.tolist() == [[0.0, 0.5], [10.0, 10.5], [50.0, 50.0]]  # empty cluster kept


def test_sepia_tone_of_known_pixels(workloads_on_path: None) -> None:
    from sepia import SEPIA, sepia

    image = torch.tensor([[0, 255, 100]], dtype=torch.uint8).T.reshape(1, 3, 1, 1)  # R, G, B
    image = torch.cat([image, torch.full_like(image, 255)])
    out = sepia(image, torch.tensor(SEPIA))
    expected = [min(255, int(0.0 * r + 255 * g + 100 * b)) for r, g, b in SEPIA]
    assert out[0, :, 0, 0].tolist() == expected
    assert out[1, :, 0, 0].tolist() == [255, 255, 238]  # white saturates except blue
    assert out.dtype == torch.uint8


def test_model_sizes_match_the_published_architectures(workloads_on_path: None) -> None:
    from bert import CONFIGS, Encoder
    from distilbert_qa import DISTIL_CONFIGS
    from resnet import ResNet

    with torch.device("meta"):
        resnet50 = sum(p.numel() for p in ResNet().parameters())
        bert_base = sum(p.numel() for p in Encoder(CONFIGS["base"]).parameters())
        distil = sum(p.numel() for p in Encoder(DISTIL_CONFIGS["base"]).parameters())
    assert resnet50 == 25_557_032  # torchvision resnet50
    assert bert_base == 108_891_648  # bert-base-uncased without the pooler
    assert distil == 66_362_880  # distilbert-base-uncased


def test_dlrm_interaction_shapes(workloads_on_path: None) -> None:
    from dlrm import DLRM

    model = DLRM(dense=13, tables=3, rows=50, dim=8, bottom=[16], top=[16])
    indices = torch.randint(0, 50, (3, 5, 2))
    logits = model(torch.randn(5, 13), indices)
    assert logits.shape == (5,)
    # 4 feature vectors -> 6 pairwise dots, plus the 8-wide bottom output.
    assert model.top[0].in_features == 8 + 6


# --- CIFAR-10 pickle batches ------------------------------------------------------------------


def test_cifar_loader_reads_python_batches(workloads_on_path: None, tmp_path: Path) -> None:
    from cifar_cnn import load_cifar_batches

    folder = tmp_path / "cifar-10-batches-py"
    first = write_cifar_batch(folder / "data_batch_1", 6)
    write_cifar_batch(folder / "data_batch_2", 4, bytes_keys=False)
    (folder / "test_batch").write_bytes(b"not used for training")
    data = load_cifar_batches(tmp_path)  # the folder that holds cifar-10-batches-py
    assert len(data) == 10
    image, label = data[1]
    assert label == 1 and image.shape == (3, 32, 32)
    # pixel (row 0, col 0) of the green plane is byte 1024 of the row
    assert float(image[1, 0, 0]) == pytest.approx((first[1, 1024] / 255 - 0.5) / 0.5)
    assert float(image.min()) >= -1 and float(image.max()) <= 1


@pytest.mark.parametrize(("content", "message"), [
    ({"data": np.zeros((2, 100), np.uint8)}, "'data' must be N x 3072 uint8"),
    ({"labels": [1]}, "1 labels for 3 images"),
    ({"labels": [0, 1, 10]}, "labels must lie in 0..9"),
    ({"data": None}, "missing the 'data' or 'labels' entry"),
])
def test_cifar_loader_names_the_bad_file(workloads_on_path: None, tmp_path: Path,
                                         content: dict[str, Any], message: str) -> None:
    from cifar_cnn import DataError, load_cifar_batches

    batch = tmp_path / "data_batch_3"
    write_cifar_batch(batch, 3, **content)
    if content.get("data", ...) is None:
        raw = pickle.loads(batch.read_bytes())
        del raw[b"data"]
        batch.write_bytes(pickle.dumps(raw))
    with pytest.raises(DataError, match=re.escape(message)) as info:
        load_cifar_batches(tmp_path)
    assert str(batch) in str(info.value)


def test_cifar_loader_rejects_missing_data(workloads_on_path: None, tmp_path: Path) -> None:
    from cifar_cnn import DataError, load_cifar_batches

    with pytest.raises(DataError, match="not a directory"):
        load_cifar_batches(tmp_path / "absent")
    with pytest.raises(DataError, match="no data_batch_"):
        load_cifar_batches(tmp_path)
    (tmp_path / "data_batch_1").write_bytes(b"\x00garbage")
    with pytest.raises(DataError, match="not a readable CIFAR-10 pickle"):
        load_cifar_batches(tmp_path)


def test_cifar_script_trains_on_data_dir(plain_batch: dict[str, Any]) -> None:
    p = plain_batch["cifar-data"]
    assert p.returncode == 0, p.stderr
    assert f"data={p.args[2]} (20 images)" in p.stdout
    assert len(printed("throughput_samples_per_s", p.stdout)) == 2  # one block per epoch


def test_cifar_script_reports_bad_data_dir(plain_batch: dict[str, Any]) -> None:
    p = plain_batch["cifar-bad-dir"]
    assert p.returncode != 0
    assert f"--data-dir {p.args[2]}: no data_batch_* files" in p.stderr


# --- scripts run as plain programs ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(THROUGHPUT))
def test_smoke_run_as_plain_script(name: str, plain_batch: dict[str, Any]) -> None:
    p = (run_script(WORKLOADS / f"{name}.py", "--smoke", "--device", "cpu") if name in OWN_PROCESS
         else plain_batch[f"smoke/{name}"])
    assert p.returncode == 0, f"{name} exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    values = printed(THROUGHPUT[name], p.stdout)
    assert values and all(v > 0 and math.isfinite(v) for v in values), p.stdout
    assert printed("step_time_s", p.stdout)
    if name in WITH_LOSS:
        assert all(math.isfinite(v) for v in printed("loss", p.stdout)) and \
            printed("loss", p.stdout), p.stdout


@pytest.mark.parametrize(("name", "args", "message"), BAD_ARGUMENTS)
def test_bad_arguments_exit_with_a_message(name: str, args: list[str], message: str,
                                           plain_batch: dict[str, Any]) -> None:
    p = plain_batch[f"bad/{name}"]
    assert p.args[1:] == ["--device", "cpu", *args]
    assert p.returncode == 2, p.stdout + p.stderr
    assert message in p.stderr
    assert "Traceback" not in p.stderr


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_sigint_stops_with_one_line_and_status_130() -> None:
    """What Ctrl-C and radtrack's MaxTime stop (SIGINT) look like to a workload."""
    # A shell starts a script with SIGINT at its default; whatever this test process has
    # (a worker of the parallel run) is not passed on.
    inherited = signal.getsignal(signal.SIGINT)
    proc = subprocess.Popen([sys.executable, str(WORKLOADS / "sgemm.py"), "--smoke", "--device",
                             "cpu", "--steps", "100000000", "--log-every", "200"],
                            env=plain_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_default_sigint)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # wait until it is inside the timed loop
            if line.startswith("block 1/"):
                break
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"still running 30 s after SIGINT (this process' SIGINT: "
                                 f"{inherited!r}); stdout tail {out[-500:]!r}, "
                                 f"stderr tail {err[-2000:]!r}") from None
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted (SIGINT)" in out
    assert "Traceback" not in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this host has CUDA")
def test_cuda_requested_without_cuda(plain_batch: dict[str, Any]) -> None:
    p = plain_batch["cuda"]
    assert p.returncode == 2
    assert "--device cuda: no CUDA device is available" in p.stderr


# --- example sheets ------------------------------------------------------------------------


@pytest.mark.parametrize("sheet", sorted(p.name for p in EXAMPLES.glob("*.csv")))
def test_example_sheet_is_valid(sheet: str) -> None:
    from radtrack.sheet import read_sheet

    specs = read_sheet(EXAMPLES / sheet, check_host=False)
    assert specs
    for spec in specs:
        assert spec.file.is_file() and spec.file.parent == WORKLOADS


def test_suite_sheet_covers_every_workload() -> None:
    from radtrack.sheet import read_sheet

    specs = read_sheet(EXAMPLES / "suite.csv", check_host=False)
    assert sorted(s.file.stem for s in specs) == sorted(THROUGHPUT)
    assert len({s.workload for s in specs}) == len(specs)  # each one solo
    assert all(s.max_time is not None and s.max_time <= 1 for s in specs)
    assert all(s.devices == ["0"] and s.listeners == ["smi", "dcgm", "top"] for s in specs)


def test_custom_metrics_example_runs_plain(plain_batch: dict[str, Any]) -> None:
    p = plain_batch["custom-metrics"]
    assert p.returncode == 0, p.stderr
    assert "epoch 2:" in p.stdout and "report: 2 epoch(s)" in p.stdout
