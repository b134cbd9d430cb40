"""Fault: a tracking URI that answers HTTP but is no MLflow server (docs/architecture.md
"Faults"): radtrack ui's own port, a proxy answering 404 or 502. Every command says so in one
line with exit 2, before it runs a script or opens anything: a launch, ``copy --to``,
``report``, ``export``, ``sync`` and ``ui``. The commands run in this process
(support.cli_here) against small servers on loopback; a launch runs through its process."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import cli_here, radtrack_cli

PAGE = b"<!DOCTYPE html>\n<html><head><title>radtrack</title></head>\n<body>page</body></html>\n"


def _serve(status: int) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://user:secret@127.0.0.1:{server.server_address[1]}"


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[int, str]]:
    """A web page (radtrack ui's port answers 200 with HTML), a proxy's 404 and its 502."""
    started = {code: _serve(code) for code in (200, 404, 502)}
    yield {code: uri for code, (_, uri) in started.items()}
    for server, _ in started.values():
        server.shutdown()
        server.server_close()


def _one_line(proc, uri: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if "is not an MLflow tracking server" in ln]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "<html" not in proc.stderr + proc.stdout
    assert "secret" not in proc.stderr and "127.0.0.1" in lines[0]  # the password hidden
    return lines[0]


def test_every_command_names_a_server_that_is_not_mlflow(
        servers: dict[int, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RADTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    from mlflow import MlflowClient

    source = f"sqlite:///{tmp_path / 'src.db'}"
    MlflowClient(source).create_experiment("e")  # copy reads its source first
    for code, uri in servers.items():
        said = []
        for args in (("copy", "e", "--from", source, "--to", uri),
                     ("report", "e", "--tracking-uri", uri),
                     ("export", "e", "--out", str(tmp_path / "o.csv"), "--tracking-uri", uri),
                     ("sync", "--tracking-uri", uri),
                     ("ui", "--tracking-uri", uri, "--port", "1")):
            said.append(_one_line(cli_here(monkeypatch, capsys, *args), uri))
        assert all(f"HTTP {code}, an HTML page" in line for line in said), said
    assert not (tmp_path / "o.csv").exists()


def test_a_launch_refuses_it_before_its_script_runs(servers: dict[int, str], tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    proc = radtrack_cli("--tracking-uri", servers[404], "-l", "none", str(script), cwd=tmp_path,
                        env={"RADTRACK_HOME": str(tmp_path / "home")})
    line = _one_line(proc, servers[404])
    assert "GET /api/2.0/mlflow/experiments/search: HTTP 404" in line and "mlflow server" in line
    assert not (tmp_path / "ran").exists()  # refused before the script started
