"""Test helpers shared by test modules (import as ``from support import ...``).

Not in conftest.py: tests/frontend/browser has its own conftest, and ``from conftest import``
would pick whichever conftest module was imported first.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

REPO = Path(__file__).resolve().parent.parent

# A steady bf16 matmul load for the gpu tests: prints "ready" once warm, then loops.
MATMUL = """\
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    a @ b
torch.cuda.synchronize()
print("ready", flush=True)
while True:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
"""
DATA = Path(__file__).resolve().parent / "data"
H100 = DATA / "h100"


def _has_nvidia_gpu() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
        return n > 0
    except Exception:
        return False


HAS_GPU = _has_nvidia_gpu()


def radtrack_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                 timeout: float = 240, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``python -m radtrack ARGS`` as a user would; returns the completed process."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "radtrack", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"radtrack {args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


class HelloSink:
    """Stands in for a run's sink beside a ListenerProc: decodes each line and keeps the
    hellos its processes sent (a fake listener reports its own argv in a hello tag)."""

    def __init__(self) -> None:
        self.hellos: list = []

    def feed(self, name: str, line: str):  # -> Message | None
        from radtrack.listeners.protocol import Hello, decode

        msg = decode(line) if line.strip() else None
        if isinstance(msg, Hello):
            self.hellos.append(msg)
        return msg


def listener_lines(text: str) -> list[dict]:
    """A listener's stdout as JSON objects, a columnar batch line (protocol ``samples``) as
    the ``sample`` objects it carries (its ``resume`` on the last), as one line per sample
    used to read."""
    from radtrack.listeners.protocol import Samples, decode

    out: list[dict] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        msg = decode(line)
        if not isinstance(msg, Samples):
            out.append(json.loads(line))
            continue
        for i, s in enumerate(msg.expand()):
            d = {"type": "sample", "t": s.t, "v": s.values}
            if msg.listener is not None:
                d["listener"] = msg.listener
            if msg.resume and i == len(msg.t) - 1:
                d["resume"] = msg.resume
            out.append(d)
    return out


def spooled_samples(spool: Path, listener: str) -> int:
    """Samples of ``listener`` a launcher has spooled so far under ``spool`` (its
    ``$RADTRACK_HOME/spool``), over every run folder, a line being written left out: what a
    test waits for instead of sleeping (a loaded host reads late)."""
    n = 0
    for f in spool.glob(f"*/{listener}.jsonl"):
        text = f.read_text(encoding="utf-8")
        n += sum(d.get("type") == "sample" for d in listener_lines(text[:text.rfind("\n") + 1]))
    return n


def made_store(uri: str) -> str:
    """``uri`` with its SQLite store made now from radtrack's template (radtrack/store/newstore.py),
    for a test whose own process opens the store first: MLflow would make its tables itself,
    1.3-2.2 CPU-s a store (docs/testing.md). The ``store`` fixture leaves the file unmade:
    tests check that a refused launch touches no store."""
    from radtrack.store import newstore

    newstore.prepare(uri)
    return uri


@contextlib.contextmanager
def sqlite_locked(db: Path) -> Iterator[None]:
    """Another writer holds ``db`` (an SQLite file) with an exclusive lock while inside."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         f"con = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
         "con.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def launch_importing(args: list[str], tmp_path: Path, env: dict[str, str]) -> tuple[
        subprocess.CompletedProcess[str], bool]:
    """``python -X importtime -m radtrack ARGS SCRIPT`` with a script that prints one line to
    stderr first thing; returns the process and whether that line came before the launcher
    finished importing MLflow (importtime writes a module's line when its import ends), or
    the launcher never imported it (its light store clients: radtrack/store/handle.py)."""
    import re

    script = tmp_path / "first.py"
    script.write_text("import sys\nprint('SCRIPT-FIRST-LINE', file=sys.stderr, flush=True)\n")
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "radtrack", *args, str(script)],
                       capture_output=True, text=True, timeout=240, cwd=tmp_path,
                       env={**os.environ, **env})
    lines = p.stderr.splitlines()
    first = next((i for i, line in enumerate(lines) if "SCRIPT-FIRST-LINE" in line), None)
    mlflow = next((i for i, line in enumerate(lines) if re.search(r"\|\s+mlflow$", line)), None)
    return p, first is not None and (mlflow is None or first < mlflow)


def report_rows(text: str, section: str = "Per-run summary") -> dict[str, dict[str, str]]:
    """The rows of one of ``radtrack report``'s tables, keyed by their first cell (the run's
    name), every block of the fitted view merged (text_table.fit splits a wide table into
    blocks of at most 120 columns, each led by the run's name; cells are 2 spaces apart)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == section) + 1
    rows: dict[str, dict[str, str]] = {}
    header: list[str] | None = None
    for line in lines[start:]:
        if line.startswith(("Columns:", "'-':", "Co-location", "Checks")):
            break
        if not line.strip():
            header = None
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if header is None:
            header = cells
            continue
        rows.setdefault(cells[0], {}).update(zip(header, cells, strict=False))
    return rows


def _main_here(args: tuple[str, ...], env: dict[str, str] | None, cwd: Path | None) -> int:
    """radtrack.cli.main(ARGS) in this process, ``env`` and ``cwd`` for the call only; what
    the CLI sets process-wide (argparse's error hook, the BLAS thread, MLflow and browser
    variables it sets for itself) is undone when it returns; argparse's own exits become
    their code."""
    import pytest

    from radtrack import own_threads
    from radtrack.cli import main

    with pytest.MonkeyPatch.context() as call:
        # set to what they are, so that leaving the context restores them
        for var in (*own_threads.VARS, "MLFLOW_DISABLE_TELEMETRY",
                    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                    "MLFLOW_HTTP_REQUEST_TIMEOUT", "BROWSER_PATH"):  # store/mlflow_client.py, plotting.py
            if var in os.environ:
                call.setenv(var, os.environ[var])
            else:
                call.delenv(var, raising=False)
        call.setattr(argparse.ArgumentParser, "error", argparse.ArgumentParser.error)
        call.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        call.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        for name, value in (env or {}).items():
            call.setenv(name, value)
        if cwd is not None:
            call.chdir(cwd)
        try:
            return main(list(args))
        except SystemExit as exc:  # argparse's own errors
            return exc.code if isinstance(exc.code, int) else 1


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
    """``radtrack ARGS`` through the CLI's entry point (radtrack.cli.main, what ``python -m
    radtrack`` runs) in this process: no interpreter start and MLflow import per call (a
    subprocess costs 2-4 CPU-s, most of it MLflow's import; docs/testing.md). For commands
    whose process boundary is not what a test checks (report, sync, status, export, copy);
    usable from module fixtures. ``env`` and ``cwd`` hold for this call only, as
    :func:`radtrack_cli`'s do. Its stdout and stderr are what it writes to ``sys.stdout`` /
    ``sys.stderr`` while it runs (:func:`cli_here` takes capsys's whole capture instead)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = _main_here(args, env, cwd)
    if check and code != 0:
        raise AssertionError(f"radtrack {args} exited {code}\n{out.getvalue()}\n{err.getvalue()}")
    return subprocess.CompletedProcess(["radtrack", *args], code, out.getvalue(), err.getvalue())


def cli_here(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str,
             env: dict[str, str] | None = None, cwd: Path | None = None,
             ) -> subprocess.CompletedProcess[str]:
    """:func:`run_cli` in a test, its output taken from ``capsys`` (everything the test's
    process wrote meanwhile, a logging handler's lines included)."""
    capsys.readouterr()
    code = _main_here(args, env, cwd)
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["radtrack", *args], code, out.out, out.err)


def report_here(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                *args: str) -> subprocess.CompletedProcess[str]:
    """``radtrack report ARGS`` in this process (:func:`cli_here`)."""
    return cli_here(monkeypatch, capsys, "report", *args)


def plugin_site(root: Path, module: str, source: str, listeners: dict[str, str]) -> Path:
    """A site folder (for PYTHONPATH) holding ``module``.py with ``source`` and an installed
    distribution whose ``radtrack.listeners`` entry points name ``listeners`` (name ->
    class in that module), registered the way any plugin is."""
    site = root / "site"
    dist = site / f"radtrack_test_{module}-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / f"{module}.py").write_text(source)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: radtrack-test-{module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[radtrack.listeners]\n" + "".join(f"{n} = {module}:{c}\n" for n, c in listeners.items()))
    return site
