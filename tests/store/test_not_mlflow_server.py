"""Fault: a tracking URI that answers HTTP but is no MLflow server (docs/architecture.md
"Faults"): radtrack ui's own port, a proxy answering 404 or 502, another service's JSON API.
Every command says so in one line with exit 2, before it runs a script or opens anything: a
launch, ``copy --to``, ``report``, ``export``, ``sync`` and ``ui``. A server whose experiment
search looks like MLflow's but whose other answers do not is named where they are read, and
nothing is bound to what it says: the spool is kept. The commands run in this process
(support.cli_here) against small servers on loopback; a launch runs through its process."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import cli_here, radtrack_cli

PAGE = b"<!DOCTYPE html>\n<html><head><title>radtrack</title></head>\n<body>page</body></html>\n"
OTHER_API = b'{"status": "ok", "items": []}'  # another service's JSON API on that port
# an experiment search's answer, given to every request: it passes for MLflow at first sight
LOOKALIKE = b'{"experiments": [{"experiment_id": "1", "name": "Default"}]}'


def _serve(status: int, body: bytes = PAGE) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            self.send_header("Content-Type", "text/html" if body == PAGE else "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://user:secret@127.0.0.1:{server.server_address[1]}"


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[int, str]]:
    """A web page (radtrack ui's port answers 200 with HTML), a proxy's 404 and its 502,
    another service's JSON (keyed 0) and a look-alike of MLflow's experiment search (-1)."""
    started = {code: _serve(code) for code in (200, 404, 502)}
    started[0], started[-1] = _serve(200, OTHER_API), _serve(200, LOOKALIKE)
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
        if code < 0:
            continue
        said = []
        for args in (("copy", "e", "--from", source, "--to", uri),
                     ("report", "e", "--tracking-uri", uri),
                     ("export", "e", "--out", str(tmp_path / "o.csv"), "--tracking-uri", uri),
                     ("sync", "--tracking-uri", uri),
                     ("ui", "--tracking-uri", uri, "--port", "1")):
            said.append(_one_line(cli_here(monkeypatch, capsys, *args), uri))
        what = "HTTP 200, a JSON answer without MLflow's fields" if code == 0 else f"HTTP {code}, an HTML page"
        assert all(what in line for line in said), said
    assert not (tmp_path / "o.csv").exists()


def test_a_launch_refuses_it_before_its_script_runs(servers: dict[int, str], tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    proc = radtrack_cli("--tracking-uri", servers[404], "-l", "none", str(script), cwd=tmp_path,
                        env={"RADTRACK_HOME": str(tmp_path / "home")})
    line = _one_line(proc, servers[404])
    assert "GET /api/2.0/mlflow/experiments/search: HTTP 404" in line and "mlflow server" in line
    assert not (tmp_path / "ran").exists()  # refused before the script started


def test_a_lookalike_is_named_where_its_answers_are_read_and_the_spool_is_kept(
        servers: dict[int, str], tmp_path: Path) -> None:
    """Its experiment search passes the launch's check; creating the runs reads answers
    without a run or an experiment: the script's status stands, the server is named in one
    line, and ``radtrack sync`` binds nothing to it (a run without an id) and keeps the spool."""
    home = tmp_path / "home"
    script = tmp_path / "s.py"
    script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    proc = radtrack_cli("--tracking-uri", servers[-1], "-l", "none", str(script), cwd=tmp_path,
                        env={"RADTRACK_HOME": str(home)})
    assert (tmp_path / "ran").exists() and proc.returncode == 1, (proc.stdout, proc.stderr)
    named = [ln for ln in proc.stderr.splitlines() if "is not an MLflow tracking server" in ln]
    assert len(named) == 1 and "no 'experiment' in its answer" in named[0], proc.stderr
    assert "FINISHED (exit 0" in proc.stderr and "Traceback" not in proc.stderr
    assert "secret" not in proc.stderr
    spooled = sorted(p.name for p in (home / "spool").iterdir())
    assert len(spooled) == 1
    proc = radtrack_cli("sync", "--tracking-uri", servers[-1], cwd=tmp_path, env={"RADTRACK_HOME": str(home)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "created run" not in out, out
    assert "no run id in its answer" in out and "1 left in" in out and "Traceback" not in out, out
    assert sorted(p.name for p in (home / "spool").iterdir()) == spooled  # nothing lost
