"""Views: URL query round trip, saved JSON files, and the messages for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from radtrack.frontend.views import View, ViewError, ViewStore, from_query, to_query


def _view() -> View:
    return View(runs=["a1", "b2"], metrics=["smi/gpu0/power_w", "top/proc/rss_mib"], xmode="wall",
                smooth=5, logy=True, experiment="my exp", workload="parent9")


def test_query_round_trip_reproduces_the_view() -> None:
    view = _view()
    query = to_query(view)
    assert query.startswith("?") and "metric=smi%2Fgpu0%2Fpower_w" in query
    assert from_query(query) == view


def test_defaults_are_left_out_of_the_url() -> None:
    assert to_query(View()) == ""
    assert to_query(View(runs=["x"])) == "?runs=x"
    assert from_query("") == View()
    assert from_query(None) == View()


@pytest.mark.parametrize(("query", "message"), [
    ("?x=epoch", "URL: view: x axis 'epoch' is not one of seconds, wall, step"),
    ("?smooth=abc", "URL parameter smooth='abc' is not a whole number"),
    ("?smooth=0", "smoothing must be a whole number of samples in 1..10000"),
])
def test_bad_url_parameters_are_named(query: str, message: str) -> None:
    with pytest.raises(ViewError, match=message.replace("(", r"\(").replace(".", r"\.")):
        from_query(query)


def test_saved_views_round_trip_and_list(tmp_path: Path) -> None:
    store = ViewStore(tmp_path / "views")
    assert store.names() == []
    path = store.save("  power overlay ", _view())
    assert path == tmp_path / "views" / "power overlay.json"
    assert store.names() == ["power overlay"]
    loaded = store.load("power overlay")
    assert loaded.runs == ["a1", "b2"] and loaded.name == "power overlay"
    assert json.loads(path.read_text())["xmode"] == "wall"


@pytest.mark.parametrize("name", ["", "../escape", "a/b", "x" * 81, ".hidden"])
def test_view_names_that_could_escape_or_hide_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ViewError, match="view name"):
        ViewStore(tmp_path).save(name, _view())


def test_broken_view_files_say_which_file_and_what(tmp_path: Path) -> None:
    store = ViewStore(tmp_path)
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ViewError, match=r"broken\.json: not valid JSON \(line 1"):
        store.load("broken")
    (tmp_path / "odd.json").write_text(json.dumps({"runs": "a1", "metrics": []}))
    with pytest.raises(ViewError, match=r"odd\.json: 'runs' must be a list of strings"):
        store.load("odd")
    (tmp_path / "extra.json").write_text(json.dumps({"runs": [], "colour": "red"}))
    with pytest.raises(ViewError, match="unknown field 'colour'"):
        store.load("extra")
    with pytest.raises(ViewError, match="no saved view 'missing'"):
        store.load("missing")


def test_a_link_is_restored_as_far_as_it_can_be() -> None:
    from radtrack.frontend.views import read_link

    view, problems = read_link("?runs=a,b&metric=system/top/proc/cpu_pct&metric=loss"
                               "&metric=top/proc/cpu_pct&smooth=abc&x=sideways&logy=1")
    assert view.runs == ["a", "b"] and view.logy
    # MLflow's stored form and the page's name are one metric
    assert view.metrics == ["top/proc/cpu_pct", "loss"]
    assert (view.smooth, view.xmode) == (1, "seconds")
    assert problems == ["smooth='abc' is not a whole number in 1..10000: smoothing left at 1",
                        "x='sideways' is not one of seconds, wall, step: x axis left at seconds"]
    assert read_link("?runs=a&smooth=5&x=wall") == (View(runs=["a"], smooth=5, xmode="wall"), [])


def test_the_link_parameters_docs_frontend_md_lists_are_the_page_s() -> None:
    """docs/frontend.md's link table names every parameter a link carries, and no other."""
    import re
    from urllib.parse import parse_qs

    doc = (Path(__file__).resolve().parents[2] / "docs" / "frontend.md").read_text()
    section = doc.split("**Links**", 1)[1].split("**Views**", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)` \|", section, flags=re.M))
    full = View(runs=["a", "b"], metrics=["top/cpu_pct", "loss"], xmode="wall", smooth=3,
                logy=True, experiment="e", workload="w", xrange=[1.0, 2.0], power="gpu",
                overlay=True)
    carried = set(parse_qs(to_query(full).lstrip("?"))) | {"view"}
    assert documented == carried
