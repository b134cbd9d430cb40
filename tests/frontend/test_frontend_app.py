"""The app entry points: argument checks, offline page, layout served from the store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from synthetic import new_store, seed_workload

from radtrack.frontend.app import build_parser, check_store, create_app, main


def test_missing_sqlite_store_is_refused_instead_of_created(tmp_path: Path, capsys) -> None:
    uri = f"sqlite:///{tmp_path / 'nope.db'}"
    assert main(["--tracking-uri", uri]) == 2
    err = capsys.readouterr().err
    assert "nope.db does not exist" in err and "--tracking-uri" in err
    assert not (tmp_path / "nope.db").exists()


def test_bad_port_is_named(tmp_path: Path, capsys) -> None:
    assert main(["--tracking-uri", new_store(tmp_path), "--port", "70000"]) == 2
    assert "--port 70000 is not a TCP port" in capsys.readouterr().err


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    args = build_parser().parse_args([])
    assert (args.host, args.port, args.tracking_uri) == ("127.0.0.1", 8050, None)
    assert check_store("http://tracking.example:5000") is None


def test_page_and_layout_are_served_without_external_resources(tmp_path: Path) -> None:
    uri = new_store(tmp_path)
    seed_workload(uri, "exp", 1, ["A"], metrics=["top/cpu_pct"], points=10,
                  artifact_root=tmp_path / "artifacts")
    app = create_app(uri, tmp_path / "views")
    client = app.server.test_client()
    index = client.get("/").get_data(as_text=True)
    assert not re.search(r"(src|href)=\"(https?:)?//", index), "no CDN links in the page"
    assert "/assets/style.css" in index
    layout = json.dumps(client.get("/_dash-layout").get_json())
    assert '"value": "exp"' in layout  # the experiment is listed
    css = client.get("/assets/style.css")
    assert css.status_code == 200 and b"--accent" in css.get_data()


def test_a_port_in_use_is_refused_before_any_address_is_printed(tmp_path: Path, capsys) -> None:
    import os
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert main(["--tracking-uri", new_store(tmp_path), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is already in use by pid {os.getpid()} (" in err, err
    assert "another --port" in err and "http://" not in err


def test_help_names_the_command_a_user_types(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    assert capsys.readouterr().out.startswith("usage: radtrack ui")


def test_read_only_commands_never_create_a_store(tmp_path: Path, monkeypatch, capsys) -> None:
    from radtrack.analysis.report import main as report
    from radtrack.export import main as export

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert report(["typo"]) == 2
    assert export(["typo", "--out", "x.csv"]) == 2
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.count(f"{tmp_path / 'mlflow.db'} does not exist") == 3, err
    assert list(tmp_path.iterdir()) == []
