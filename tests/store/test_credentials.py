"""What radtrack/store/credentials.py sends a tracking server before the launch: the header
MLflow's client would send, or None where only MLflow's client can say. The end-to-end
checks against real servers are in test_team_identity.py and test_store_faults_team.py."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from radtrack.store import credentials

URI = "http://tracking.example:5000"


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
                "MLFLOW_TRACKING_AUTH", "MLFLOW_TRACKING_AWS_SIGV4", "NETRC"):
        monkeypatch.delenv(var, raising=False)


def _basic(header: dict[str, str] | None) -> str:
    assert header is not None
    kind, value = header["Authorization"].split(" ", 1)
    assert kind == "Basic"
    return base64.standard_b64decode(value).decode()


def test_no_credentials_send_no_header() -> None:
    assert credentials.plain(URI) == {}


def test_precedence_as_in_mlflows_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok")
    assert credentials.plain(URI) == {"Authorization": "Bearer tok"}
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "ann")
    assert credentials.plain(URI) == {"Authorization": "Bearer tok"}  # a user without a password
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "pw:1")
    assert _basic(credentials.plain(URI)) == "ann:pw:1"  # user and password over the token
    assert _basic(credentials.plain("http://bo:secret@tracking.example:5000")) == "bo:secret"


@pytest.mark.parametrize("var", ["MLFLOW_TRACKING_AUTH", "MLFLOW_TRACKING_AWS_SIGV4"])
def test_schemes_only_mlflow_can_send(monkeypatch: pytest.MonkeyPatch, var: str) -> None:
    monkeypatch.setenv(var, "true")
    assert credentials.plain(URI) is None


def test_files_mlflow_or_requests_would_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine other.example login a password b\n")
    netrc.chmod(0o600)
    assert credentials.plain(URI) == {}  # an entry for another host: not ours
    netrc.write_text("machine tracking.example login a password b\n")
    assert credentials.plain(URI) is None  # requests would send it
    netrc.unlink()
    assert credentials.plain(URI) == {}


def test_mlflows_credentials_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".mlflow").mkdir()
    (tmp_path / ".mlflow" / "credentials").write_text(
        "[mlflow]\nmlflow_tracking_username = ann\nmlflow_tracking_password = from-file\n")
    assert _basic(credentials.plain(URI)) == "ann:from-file"
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "from-env")  # each variable over its line
    assert _basic(credentials.plain(URI)) == "ann:from-env"


def test_the_request_leaves_the_users_info_out_of_the_url() -> None:
    req = credentials.request("https://bo:secret@tracking.example/prefix/", "/health", {"X": "1"})
    assert req.full_url == "https://tracking.example/prefix/health"
    assert req.get_header("X") == "1"


def _server(search_status: int):
    """A real HTTP server on 127.0.0.1 answering /health 200 and the credentials read
    ``search_status``; returns (uri, the requests' paths, stop)."""
    import http.server
    import threading

    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            seen.append(self.path)
            code = 200 if self.path == "/health" else search_status
            self.send_response(code)
            self.end_headers()
            self.wfile.write(b"{}" if code == 200 else b'{"error_code": "UNAUTHENTICATED"}')

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", seen, server.shutdown


def test_installed_plugins_are_asked_about_only_when_the_server_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin scan (importlib.metadata over every installed distribution, 20-50 ms) is
    left out of a launch the server accepts; a refused one with a request-header plugin
    installed is asked again through MLflow's client, which sends the plugin's headers."""
    from radtrack.store import tracking

    asked = []
    monkeypatch.setattr(credentials, "header_plugins", lambda: asked.append("scan") or True)
    assert credentials.plain(URI) is None and credentials.plain(URI, plugins=False) == {}
    asked.clear()
    uri, seen, stop = _server(200)
    try:
        tracking.check_reachable(uri)
        # one round trip before the scripts start: the authenticated read says it answers too
        assert seen == [credentials.SEARCH + "?max_results=1"] and asked == []
    finally:
        stop()

    class Client:  # MLflow's client, as far as check_credentials uses it
        def search_experiments(self, max_results: int) -> list:
            asked.append("mlflow client")
            return []

    from radtrack.store import mlflow_client

    monkeypatch.setattr(mlflow_client, "mlflow_client", lambda uri: Client())
    uri, seen, stop = _server(401)
    try:
        tracking.check_reachable(uri)  # the plugin's headers (MLflow's client) are accepted
        assert asked == ["scan", "mlflow client"]
    finally:
        stop()
    monkeypatch.setattr(credentials, "header_plugins", lambda: False)
    uri, seen, stop = _server(401)
    try:
        with pytest.raises(Exception, match="requires authentication"):
            tracking.check_reachable(uri)
    finally:
        stop()


def test_an_accepted_answer_is_never_read_as_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 200 answer whose body holds "401" or "403" (experiment timestamps in ms do, now and
    then) is an accepted one: only the status says refused."""
    import http.server
    import threading

    from radtrack.store import tracking

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"experiments": [{"experiment_id": "401", "creation_time": 1795575192403}]}')

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "carol")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "pw")
    try:
        tracking.check_reachable(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
