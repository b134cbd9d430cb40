"""Screenshot MLflow's own run page for a run radtrack recorded (docs/img/mlflow-*.png).

Runs a small CPU workload with the top and iostat listeners into a fresh SQLite store
(``radtrack`` as a subprocess), serves that store with ``mlflow ui`` on 127.0.0.1, opens the
run's "System metrics" and "Model metrics" tabs in the system Chromium (headless, through
Playwright) and checks that the listener series are on the first and only the script's
metrics on the second. Exit status 0 when both hold.

    .venv/bin/python scripts/mlflow_ui_screenshot.py [--out docs/img] [--store DIR]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
WORKLOAD = [str(REPO / "workloads" / "cifar_cnn.py"), "--smoke", "--device", "cpu",
            "--epochs", "3", "--samples"]


def record_run(store: Path, samples: int = 1500) -> tuple[str, str, str]:
    """A radtrack run into ``store``; returns (tracking URI, experiment id, run id)."""
    from mlflow import MlflowClient

    store.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{store / 'mlflow.db'}"
    subprocess.run([sys.executable, "-m", "radtrack", "--tracking-uri", uri, "-e", "mlflow-ui",
                    "-l", "top+iostat", "--interval", "0.2", *WORKLOAD, str(samples)],
                   cwd=store, check=True, env={**os.environ, "RADTRACK_HOME": str(store / ".rt")})
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("mlflow-ui")
    run = next(r for r in client.search_runs([exp.experiment_id])
               if r.data.tags.get("radtrack.role") == "row")
    return uri, exp.experiment_id, run.info.run_id


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(uri: str, cwd: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
                             "--host", "127.0.0.1", "--port", str(port)], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True,
                            # MLflow's GenAI job runners are not needed to show runs
                            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2).close()
            return proc, url
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("mlflow ui exited during start") from None
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("mlflow ui did not answer /health in 180 s")


def capture(url: str, exp_id: str, run_id: str, out: Path) -> dict[str, str]:
    """Screenshot both tabs; returns each tab's visible text."""
    from playwright.sync_api import sync_playwright

    texts = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        for tab, name in (("system-metrics", "mlflow-system-metrics.png"),
                          ("model-metrics", "mlflow-model-metrics.png")):
            page.goto(f"{url}/#/experiments/{exp_id}/runs/{run_id}/{tab}")
            page.get_by_text("Add chart").first.wait_for(timeout=60_000)
            close = page.locator("button[aria-label='Close']")  # MLflow's assistant panel
            if close.count():
                close.first.click()
            page.wait_for_timeout(3000)  # charts draw after the section headers
            texts[tab] = page.inner_text("body")
            if tab == "model-metrics":
                # the summary/* sections come first; the script's own curves by search
                page.get_by_placeholder("Search metric charts").fill("loss")
                page.wait_for_timeout(3000)
                texts["model-metrics-loss"] = page.inner_text("body")
            page.screenshot(path=str(out / name))
        browser.close()
    return texts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    ap.add_argument("--store", type=Path, default=None, help="folder for the store (default: a temp one)")
    ap.add_argument("--samples", type=int, default=1500, help="training samples of the workload")
    a = ap.parse_args(argv)
    store = a.store or Path(tempfile.mkdtemp(prefix="radtrack-mlflow-ui-"))
    uri, exp_id, run_id = record_run(store, a.samples)
    proc, url = serve(uri, store)
    try:
        texts = capture(url, exp_id, run_id, a.out)
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    system, model = texts["system-metrics"], texts["model-metrics"]
    problems = []
    if "system/top" not in system or "system/iostat" not in system:
        problems.append("the System metrics tab lacks radtrack's system/top and system/iostat series")
    if "system/" in model:
        problems.append("radtrack series are among the Model metrics")
    if "loss" not in texts["model-metrics-loss"]:
        problems.append("the Model metrics tab lacks the script's loss")
    for p in problems:
        print(f"mlflow_ui_screenshot: {p}", file=sys.stderr)
    print(f"screenshots in {a.out}: mlflow-system-metrics.png, mlflow-model-metrics.png")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
