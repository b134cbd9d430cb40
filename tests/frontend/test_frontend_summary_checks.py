"""The Summary tab's answer says what cannot be trusted and why a cell is blank (issue 38):
the ``checks`` column, the hidden ``_tips``/``_flagged`` columns summary_table.js turns into
tooltips and marks, units in the headers, and the run column kept in view (style.css)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient
from synthetic import new_store, seed_workload

sys.path.insert(0, str(Path(__file__).parents[1] / "analysis"))
from test_analysis_seed import Row  # noqa: E402  (the analysis tests' seeding, signals by hand)
from test_analysis_seed import seed_workload as seed_rows  # noqa: E402

from radtrack.frontend.callbacks_chart import summary_answer
from radtrack.frontend.data import DataSource
from radtrack.frontend.summaries import SummaryCache

ASSETS = Path(__file__).parents[2] / "radtrack" / "frontend" / "assets"


@pytest.fixture
def seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("RADTRACK_CACHE_DIR", str(tmp_path / "cache"))
    uri = new_store(tmp_path)
    gpu = seed_workload(uri, "sum", 1, ["A"], metrics=("smi/gpu0/power_w", "smi/gpu0/gpu_util_pct"),
                        points=120, hz=2.0)
    client = MlflowClient(uri)
    # a GPU row (Devices 0) whose GPU did nothing, sampled 5 times
    idle = seed_rows(client, "sum", 2, [Row(duration_s=2, util_pct=0.0, interval_s=0.5, throughput=None)],
                     start=1_700_001_000.0)
    # a CPU-only row (no Devices) with top's readings only
    top = {"top/cpu_pct": [(float(s), s, 40.0) for s in range(31)]}
    cpu = seed_rows(client, "sum", 3, [Row(duration_s=30, devices="-", parquet=False, history=False,
                                           energy_counter=False, throughput=None, extra=top)],
                    start=1_700_002_000.0)
    return {"uri": uri, "gpu": gpu[0].run_id, "idle": idle[0], "cpu": cpu[0]}


def test_summary_answer_flags_and_explains_blank_cells(seeded) -> None:
    source = DataSource(seeded["uri"])
    ids = [seeded["gpu"], seeded["idle"], seeded["cpu"]]
    answer = summary_answer(source, SummaryCache(source), ids)
    names = {c["id"]: c["name"] for c in answer["columns"]}
    rows = dict(zip(ids, answer["rows"], strict=True))
    # units in the headers: the host's CPU is said to be the host's
    assert "(s)" in names["duration_s"] and "(W)" in names["power_w_mean"]
    assert "% of all cores" in names["cpu_pct_mean"]
    assert list(names)[:2] == ["run", "status"] and "checks" in names and "samples" in names
    # a count is a whole number, as the report's files write it (issue 52: not 7.0)
    counts = [r["samples"] for r in answer["rows"]]
    assert all(c is None or type(c) is int for c in counts) and any(type(c) is int for c in counts), counts
    # the idle GPU row: few samples and no GPU activity, its cells marked and explained
    idle = rows[seeded["idle"]]
    assert idle["checks"] == "few-samples,no-gpu-activity"
    assert set(idle["_flagged"]) == {"samples", "run"}
    assert "fell back to the CPU" in idle["_tips"]["run"]
    assert "Do: run it longer" in idle["_tips"]["checks"]
    # the CPU-only run's blank energy says why; the GPU run has nothing to flag
    cpu = rows[seeded["cpu"]]
    assert cpu["energy_j"] is None and cpu["_tips"]["energy_j"].startswith("blank: CPU-only run")
    assert cpu["checks"] == "" and rows[seeded["gpu"]]["checks"] == ""
    assert rows[seeded["gpu"]]["_tips"] == {}


def test_run_column_is_sticky_and_hidden_columns_are_not_drawn() -> None:
    css = (ASSETS / "style.css").read_text()
    rule = re.search(r"#summary th:first-child, #summary td:first-child \{([^}]*)\}", css)
    assert rule and "position: sticky" in rule.group(1) and "left: 0" in rule.group(1)
    js = (ASSETS / "summary_table.js").read_text()
    assert "!String(c.id).startsWith('_')" in js and "row._tips" in js


def test_the_page_says_each_figure_in_the_owner_s_words(seeded) -> None:
    """issue 52: one name, scope and unit per figure. Every Summary header is the column's
    own name and the unit radtrack/vocab/meaning.py gives it (the report's files and
    `radtrack export` carry the same in their columns tables), its tooltip the owner's long
    name and scope; every y axis title is the owner's label of its key."""
    from radtrack.frontend.callbacks_chart import chart_answer
    from radtrack.vocab.meaning import column_meaning, column_row, describe

    source = DataSource(seeded["uri"])
    ids = [seeded["gpu"], seeded["idle"], seeded["cpu"]]
    answer = summary_answer(source, SummaryCache(source), ids)
    checked = 0
    for column in answer["columns"]:
        name = column["id"]
        if name == "run" or name.startswith("_"):  # the page's run label; hidden tooltip data
            continue
        row = column_row(name, "runs")
        assert column["name"] == (f"{name} ({row['unit_text']})" if row["unit_text"] else name), row
        assert column["help"].startswith(row["meaning"]), (name, column["help"], row)
        assert f"scope: {column_meaning(name, 'runs').scope_text}" in column["help"], column["help"]
        checked += 1
    assert checked >= 8, answer["columns"]
    keys = ["smi/gpu0/power_w", "smi/gpu0/gpu_util_pct"]
    figure, _ = chart_answer(source, [seeded["gpu"]], keys, "seconds", 1, [], None)
    # a long title wraps onto a second line (figures.py): the words are the owner's
    titles = [axis["title"]["text"].replace("<br>", " ") for name, axis in figure["layout"].items()
              if name.startswith("yaxis") and isinstance(axis, dict) and axis.get("title")]
    assert sorted(titles) == sorted(describe(k).label for k in keys), titles
