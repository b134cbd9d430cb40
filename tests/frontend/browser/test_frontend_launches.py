"""The page on a sheet launched twice by the real launcher (issue 52): the picker tells the
launches apart, a shared link opens with its runs, experiment and workload picked, and the
metric list's group headers stay with their metrics at any width."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from synthetic import new_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GD = "document.querySelector('#chart .js-plotly-plot')"
SCRIPT = """
import time
from radtrack.script.benchmark import RADTBenchmark

with RADTBenchmark() as run:
    for epoch in range(3):
        with run.window("epoch"):
            time.sleep(0.3)
        # four script metrics: with them, the metric list's columns put a group header at a
        # column's foot at most widths from 1,300 px on when nothing keeps it with its group
        run.log_metrics({"loss": 1.0 / (epoch + 1), "accuracy": 0.5, "lr": 0.1, "grad_norm": 2.0},
                        epoch=epoch)
"""
SHEET = ("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval\n"
         "twice,1,,,,-,train.py,top+iostat,,0.2\n"
         "twice,2,,,,-,train.py,top+iostat,,0.2\n")
CHECKED = "document.querySelector('#{0} input:checked')?.value ?? null"


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, dict]]:
    """Two launches of one two-workload sheet (two copies of it, as two users make); returns the
    store and, by row run id, its launch, workload number and parent run id."""
    from mlflow import MlflowClient

    root = tmp_path_factory.mktemp("launches")
    uri = new_store(root)
    (root / "train.py").write_text(SCRIPT)
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(root / ".radtrack"),
           "MLFLOW_DISABLE_TELEMETRY": "true"}
    for name in ("first.csv", "second.csv"):  # statuses are written back: a fresh copy each
        (root / name).write_text(SHEET)
        proc = subprocess.run([sys.executable, "-m", "radtrack", name], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("twice")
    rows = {r.info.run_id: {"launch": r.data.tags["radtrack.launch_id"],
                            "workload": r.data.tags["radtrack.workload"],
                            "parent": r.data.tags["mlflow.parentRunId"],
                            "sheet": Path(r.data.tags["radtrack.sheet"]).name,
                            "start": r.info.start_time}
            for r in client.search_runs([exp.experiment_id])
            if r.data.tags.get("radtrack.role") == "row"}
    assert len(rows) == 4 and len({r["launch"] for r in rows.values()}) == 2
    return uri, rows


def _labels(web) -> list[str]:
    return [t.strip() for t in web.locator("#workload label").all_inner_texts()]


def test_the_picker_tells_two_launches_apart(web, serve, launched, tmp_path: Path) -> None:
    uri, rows = launched
    app = serve(uri, tmp_path / "views")
    web.goto(app.url)
    web.locator("#experiment").get_by_text("twice", exact=True).click()
    web.wait_for_function("document.querySelectorAll('#workload label').length === 6")
    labels = _labels(web)
    launches = sorted({(r["start"], r["launch"], r["sheet"]) for r in rows.values()}, reverse=True)
    newest, oldest = launches[0], launches[-1]
    # grouped by launch, newest first: each header names the launch, its start and its sheet
    headers = [labels[0], labels[3]]
    for header, (_, launch, sheet) in zip(headers, (newest, oldest), strict=True):
        assert header.startswith(f"launch {launch} · ") and f" · {sheet}" in header, header
    assert newest[2] == "second.csv" and oldest[2] == "first.csv"
    day = time.strftime("%Y-%m-%d", time.localtime(oldest[0] / 1000))
    assert all(f"· {day} " in h for h in headers), headers
    # the four entries read apart, each naming its launch; headers are no choice
    entries = labels[1:3] + labels[4:]
    assert len(set(entries)) == 4, entries
    assert [e.split(" · ")[0] for e in entries] == ["Workload 2", "Workload 1"] * 2
    assert all(f"launch {newest[1]}" in e for e in entries[:2]), entries
    assert all(f"launch {oldest[1]}" in e for e in entries[2:]), entries
    assert web.locator("#workload input:disabled").count() == 2
    # picking an entry lists its own run only
    web.locator("#workload label", has_text=entries[3]).click()
    row = next(r for r, info in rows.items() if info["launch"] == oldest[1] and info["workload"] == "1")
    web.wait_for_function("document.querySelectorAll('#runs .run-row').length === 1")
    assert web.evaluate(CHECKED.format("workload")) == rows[row]["parent"]


@pytest.mark.parametrize("given", ["runs", "all", "elsewhere", "unknown"])
def test_a_shared_link_opens_with_its_runs_experiment_and_workload(web, serve, launched,
                                                                   tmp_path: Path, given: str) -> None:
    """The link form docs/frontend.md documents: ``runs`` (comma-separated run ids), ``metric``
    (repeated), ``experiment``, ``workload`` (the parent run id); with ``runs`` alone, or
    with a pair the store does not hold, the first run's experiment and workload are picked;
    a pair it holds is kept, as the page's own address names the workload last looked at."""
    uri, rows = launched
    app = serve(uri, tmp_path / "views")
    by_start = sorted(rows, key=lambda r: rows[r]["start"])
    first, other = by_start[0], by_start[3]  # two workloads of two launches
    query = f"?runs={first},{other}&metric=top/cpu_pct&metric=loss"
    pair = {"runs": "", "all": f"experiment=twice&workload={rows[first]['parent']}&",
            "elsewhere": f"experiment=twice&workload={rows[other]['parent']}&",
            "unknown": "experiment=gone&workload=0123&"}[given]
    web.goto(app.url + query.replace("?", "?" + pair))
    web.wait_for_function(f"{GD} && {GD}._fullData && {GD}._fullData.length === 4")
    shown = other if given == "elsewhere" else first
    assert web.evaluate(CHECKED.format("experiment")) == "twice"
    assert web.evaluate(CHECKED.format("workload")) == rows[shown]["parent"]
    # the Runs panel lists the workload's run, ticked; no "Pick an experiment..." hint
    web.wait_for_function("document.querySelectorAll('#runs .run-row').length === 1")
    assert web.locator(f"#runs input[value='{shown}']").is_checked()
    assert "Pick an experiment" not in web.locator("#runs").inner_text()
    assert web.locator("#basket li").count() == 2
    ticked = web.evaluate("[...document.querySelectorAll('#metrics input:checked')].map(i => i.value)")
    assert sorted(ticked) == ["loss", "top/cpu_pct"]
    assert web.locator("#link-msg").inner_text().strip() == ""


# Chromium lays the metric list out in columns: every group header must share its column
# with the metric under it, at every width from the narrowest supported to a wide screen
HEADER_ALONE = """() => {
    const labels = [...document.querySelectorAll('#metrics label')];
    return labels.flatMap((label, i) => {
        if (!label.querySelector('input:disabled')) { return []; }
        const next = labels[i + 1];
        const a = label.getBoundingClientRect(), b = next && next.getBoundingClientRect();
        return b && Math.abs(b.left - a.left) > 2 ? [label.innerText.trim()] : [];
    });
}"""


def test_metric_group_headers_stay_with_their_metrics(chromium, serve, launched,
                                                      tmp_path: Path) -> None:
    uri, rows = launched
    app = serve(uri, tmp_path / "views")
    context = chromium.new_context(viewport={"width": 1900, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    tab.goto(app.url + "?runs=" + ",".join(rows))
    tab.wait_for_function("document.querySelectorAll('#metrics input:disabled').length >= 3")
    groups = tab.evaluate("[...document.querySelectorAll('#metrics label')].filter("
                          "l => l.querySelector('input:disabled')).map(l => l.innerText.trim())")
    assert {"TOP", "IOSTAT", "WINDOW", "SCRIPT"} <= set(groups), groups
    alone: dict[int, list[str]] = {}
    for width in range(900, 1901, 50):
        tab.set_viewport_size({"width": width, "height": 900})
        tab.wait_for_timeout(50)
        found = tab.evaluate(HEADER_ALONE)
        if found:
            alone[width] = found
    context.close()
    assert not alone, alone


def test_the_basket_keeps_two_launches_of_one_workload_apart(web, serve, launched,
                                                             tmp_path: Path) -> None:
    uri, rows = launched
    app = serve(uri, tmp_path / "views")
    ones = sorted((r for r in rows if rows[r]["workload"] == "1"), key=lambda r: rows[r]["start"])
    web.goto(app.url + "?runs=" + ",".join(ones))
    web.wait_for_function("document.querySelectorAll('#basket li').length === 2")
    groups = [t.strip() for t in web.locator("#basket h3").all_inner_texts()]
    assert groups == [f"twice · Workload 1 · launch {rows[r]['launch']}" for r in ones], groups
