"""The real-server fixtures themselves: PostgreSQL on 127.0.0.1 and mlflow server over it."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlparse


def test_postgres_is_a_tracking_store_on_loopback_only(postgres_uri: str) -> None:
    from mlflow import MlflowClient

    host, port = urlparse(postgres_uri).hostname, urlparse(postgres_uri).port
    assert host == "127.0.0.1" and port
    c = MlflowClient(postgres_uri)
    rid = c.create_run(c.create_experiment("servers-pg")).info.run_id
    c.log_metric(rid, "m", 1.5, step=3)
    assert c.get_metric_history(rid, "m")[0].value == 1.5
    # listening on 127.0.0.1 only: another local address of this host is refused
    others = {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    for addr in others - {"127.0.0.1"}:
        with socket.socket() as s:
            s.settimeout(2)
            assert s.connect_ex((addr, port)) != 0, f"PostgreSQL answers on {addr}"


def test_mlflow_server_over_postgres_proxies_artifacts(mlflow_server_uri: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    c = MlflowClient(mlflow_server_uri)
    rid = c.create_run(c.create_experiment("servers-http")).info.run_id
    c.log_metric(rid, "m", 2.5, step=1)
    f = tmp_path / "a.txt"
    f.write_text("hello")
    c.log_artifact(rid, str(f), "x")
    assert c.get_run(rid).info.artifact_uri.startswith("mlflow-artifacts:")
    back = c.download_artifacts(rid, "x/a.txt", str(tmp_path / "down"))
    assert Path(back).read_text() == "hello"
    assert c.get_metric_history(rid, "m")[0].value == 2.5


def test_without_postgresql_binaries_the_reason_is_given(monkeypatch) -> None:
    import servers

    monkeypatch.setattr(servers, "postgres_bindir", lambda: None)
    reason = servers.why_no_postgres()
    assert reason is not None and "postgresql" in reason and "ensure-postgres.sh" in reason
