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
