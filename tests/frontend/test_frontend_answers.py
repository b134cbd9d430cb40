"""The page's answers without a browser: co-location labels, units, attributed power,
overlaid GPUs, the Compare tab's arithmetic, energy shares' totals, launch groups, zoom in
links (issue 27, 28). The browser tests (tests/frontend/browser/test_frontend_answers_browser.py) drive them."""

from __future__ import annotations

import re
import time

import numpy as np
import pandas as pd
import pytest

from radtrack.compute.colocation import COLUMNS as WORKLOAD_COLUMNS
from radtrack.frontend.attributed import substitutions
from radtrack.frontend.colocation import colocation_text, description
from radtrack.frontend.columns import column_title
from radtrack.frontend.compare import _fmt, comparison
from radtrack.frontend.data import Series
from radtrack.frontend.figures import ChartOptions, build_chart, subplots
from radtrack.frontend.picker import Workload, by_launch
from radtrack.frontend.shares import COLUMNS as SHARES_COLUMNS
from radtrack.frontend.shares import TABLE as SHARES_TABLE
from radtrack.frontend.shares import interference_text, share_totals, shares_figure, totals_table
from radtrack.frontend.units import axis_title, gpu_family, unit_of
from radtrack.frontend.views import View, read_link, to_query
from radtrack.vocab.meaning import column_meaning, column_row, describe


def _row(collocation: str | None, others: str = "", **extra: object) -> dict:
    return {"run_id": "r", "collocation": collocation, "tag.radtrack.role": "row",
            "tag.radtrack.colocated_with": others, "param.script": "workloads/train.py --x 1",
            **extra}


@pytest.mark.parametrize(("row", "text"), [
    (_row("-"), "solo"),
    (_row("-", "exp-1 B,exp-1 C"), "CPU only, shared with 2"),  # no GPU seen
    (_row("-", "exp-1 B", **{"tag.radtrack.listener.smi": "ok", "tag.radtrack.devices": "0"}),
     "GPU time-slicing with 1"),  # placed on a GPU, no per-process readings
    (_row("-", "exp-1 B", **{"tag.radtrack.listener.smi": "ok"}), "co-located with 1"),
    (_row("-", "exp-1 B", **{"tag.radtrack.listener.smi": "ok", "tag.radtrack.devices": "0",
                             "metric.summary/smi/gpu0/proc_mem_used_mib/max": 0.0}),
     "CPU only, shared with 1"),  # on a GPU, but its processes never held GPU memory
    (_row("-", "exp-1 B", **{"metric.summary/smi/gpu0/proc_sm_util_pct/max": 40.0}),
     "GPU time-slicing with 1"),
    (_row("mps:50", "exp-1 B"), "MPS 50 % with 1"),
    (_row("MPS"), "MPS"),
    (_row("3g.40gb", "exp-1 B"), "MIG slice 3g.40gb"),
    (_row(None, **{"tag.radtrack.mig_profile": "1g.10gb"}), "MIG slice 1g.10gb"),
    ({"run_id": "r"}, ""),  # a run radtrack did not launch says nothing
])
def test_colocation_is_said_in_words(row: dict, text: str) -> None:
    assert colocation_text(row) == text


def test_description_adds_the_scripts_file_name() -> None:
    assert description(_row("mps:25", "b")) == "MPS 25 % with 1 · train.py"
    assert description({"run_id": "r", "file": "/home/x/sgemm.py"}) == "sgemm.py"


@pytest.mark.parametrize(("key", "unit", "title"), [
    ("smi/gpu0/power_w", "W", "GPU power (W)"),
    ("system/smi/gpu0/power_w", "W", "GPU power (W)"),
    ("dcgm/gpu3/sm_active_pct", "%", "GPU SM active (% of SM cycles)"),
    ("iostat/nvme0n1/read_bytes_per_s", "B/s", "host disk nvme0n1 reads (B/s)"),
    ("smi/gpu0/temp_c", "°C", "GPU temperature (°C)"),
    ("top/proc/threads_count", "count", "run threads (threads)"),
    ("top/proc/cpu_pct", "%", "run CPU (% of one core)"),
    ("top/cpu_pct", "%", "host CPU (% of all cores)"),
    ("newvendor/gpu0/power_w", "W", "GPU power (W)"),  # no declaration: read from the key
    ("loss", "", "loss"),
])
def test_titles_say_whose_figure_and_its_unit(key: str, unit: str, title: str) -> None:
    assert unit_of(key) == unit and axis_title(key) == title


def test_tops_two_cpu_series_are_told_apart_on_the_chart() -> None:
    """top's host CPU (100 = all cores) and the run's CPU (100 = one core, reaching 169 %
    with two busy threads) were both titled "cpu (%)"."""
    keys = ["top/cpu_pct", "top/proc/cpu_pct"]
    series = {("a", k): _series("a", k, v) for k, v in zip(keys, (99.9, 169.0), strict=True)}
    fig = build_chart(keys, ["a"], {"a": "exp-1 A"}, series, ChartOptions())
    layout = fig["layout"]
    assert layout["yaxis"]["title"]["text"] == "host CPU (% of all cores)"
    assert layout["yaxis2"]["title"]["text"] == "run CPU (% of one core)"
    assert [t["hovertemplate"] for t in fig["data"]] == ["%{y:.4g} % of all cores", "%{y:.4g} % of one core"]
    assert layout["margin"]["l"] == 70  # one-line titles


def test_a_long_title_breaks_before_its_unit() -> None:
    key = "dcgm/gpu0/sm_occupancy_pct"
    fig = build_chart([key], ["a"], {"a": "A"}, {("a", key): _series("a", key, 5.0)}, ChartOptions())
    assert fig["layout"]["yaxis"]["title"]["text"] == "GPU SM occupancy<br>(% of the maximum resident warps)"
    assert fig["layout"]["margin"]["l"] > 70


def test_gpus_overlay_in_one_subplot_per_quantity() -> None:
    keys = ["smi/gpu0/power_w", "smi/gpu1/power_w", "top/cpu_pct", "smi/gpu7/power_w"]
    assert gpu_family("smi/gpu12/power_w") == "smi/gpu*/power_w"
    assert subplots(keys, overlay=False) == [(k, [k]) for k in keys]
    assert subplots(keys, overlay=True) == [
        ("smi/gpu*/power_w", ["smi/gpu0/power_w", "smi/gpu1/power_w", "smi/gpu7/power_w"]),
        ("top/cpu_pct", ["top/cpu_pct"])]


def _series(run: str, key: str, value: float) -> Series:
    return Series(run, key, 0.0, np.arange(10.0), np.arange(10), np.full(10, value))


def test_chart_has_units_unified_hover_x_only_zoom_and_overlaid_gpu_names() -> None:
    keys = ["smi/gpu0/power_w", "smi/gpu1/power_w"]
    series = {("a", k): _series("a", k, 1.0) for k in keys}
    fig = build_chart(keys, ["a"], {"a": "exp-1 A"}, series, ChartOptions(overlay=True),
                      attributed={("a", "smi/gpu0/power_w")})
    layout = fig["layout"]
    assert layout["hovermode"] == "x unified" and layout["yaxis"]["fixedrange"] is True
    # gpu0 shows the run's share, gpu1 the GPU's: the axis says both
    assert layout["yaxis"]["title"]["text"] == "GPU power, or the run's share<br>(W)"
    assert "yaxis2" not in layout
    assert [t["name"] for t in fig["data"]] == ["exp-1 A · gpu0 (attributed)", "exp-1 A · gpu1"]
    assert fig["data"][0]["hovertemplate"] == "%{y:.4g} W"
    assert layout["legend"]["y"] > 1.05  # above the first subplot's title, not over it


def test_attributed_power_stands_in_only_where_accounting_exists() -> None:
    rows = [{"run_id": "a", "metric.attribution/gpu1/attributed_power_w": 120.0},
            {"run_id": "b", "metric.attribution/gpu1/attributed_power_w": float("nan")}]
    keys = ["smi/gpu1/power_w", "top/cpu_pct"]
    assert substitutions(rows, keys, "attributed") == {
        ("a", "smi/gpu1/power_w"): "attribution/gpu1/attributed_power_w"}
    assert substitutions(rows, keys, "gpu") == {}


def test_comparison_gives_difference_and_ratio_to_the_baseline() -> None:
    table = pd.DataFrame({"run_id": ["a", "b", "c"], "energy_j": [36_000.0, 14_400.0, np.nan]})
    out = {r["run_id"]: r for r in comparison(table, "energy_j", "b")}
    assert out["a"]["difference"] == 21_600.0 and out["a"]["ratio"] == 2.5
    assert out["b"]["ratio"] == 1.0 and out["c"]["ratio"] is None
    assert _fmt(36_000.0) == "36,000" and _fmt(12.3456) == "12.35" and _fmt(None) == "–"
    # one name per figure: the column's own, its unit from radtrack/vocab/meaning.py
    assert column_title("energy_j") == "energy_j (J)"
    assert column_title("gpu_energy_j") == "gpu_energy_j (J)"


def test_share_totals_are_per_gpu_energy_with_percentages() -> None:
    t = np.arange(10.0)
    table = pd.concat([pd.DataFrame({"time": t, "end": t + 1, "gpu": "gpu0", "party": party,
                                     "power_w": w, "energy_j": w})
                       for party, w in (("A", 300.0), ("B", 80.0), ("other", 20.0), ("idle", 0.0))])
    rows = share_totals(table)
    assert [(r["party"], r["energy_j"], round(r["share_of_device_pct"], 1)) for r in rows] == [
        ("A", 3000.0, 75.0), ("B", 800.0, 20.0), ("other", 200.0, 5.0), ("idle", 0.0, 0.0),
        ("total", 4000.0, 100.0)]


def test_the_shares_panel_says_each_figure_in_the_owners_words() -> None:
    """Issue 52: the Energy shares tab's headers, axis titles, hover units and workload
    figures are the vocabulary's (radtrack/vocab/meaning.py), not words of its own: each
    header is a column the owner knows for the ``shares`` table, with the owner's unit; each
    axis says the stacked series' label; the figures go by the report's column names."""
    t = np.arange(4.0)
    table = pd.concat([pd.DataFrame({"time": t, "end": t + 1, "gpu": gpu, "party": party, "run_id": run,
                                     "power_w": 100.0, "energy_j": 100.0})
                       for gpu in ("gpu0", "gpu1")
                       for party, run in (("w-1 A", "r1"), ("other", ""), ("idle", ""))])
    head = totals_table(share_totals(table)).children[0].children.children
    for th in head:
        name, _, unit = th.children.partition(" (")
        owner = column_row(name, SHARES_TABLE)
        assert column_meaning(name, SHARES_TABLE).declared, f"{name!r}: a header the owner has no word for"
        assert unit.removesuffix(")") == owner["unit_text"], name
        assert th.title.startswith(owner["meaning"]), name
    assert [th.children.partition(" (")[0] for th in head] == list(SHARES_COLUMNS)
    assert set(share_totals(table)[0]) == set(SHARES_COLUMNS)  # the rows hold what the head says
    figure = shares_figure(table)
    for gpu, axis in (("gpu0", figure.layout.yaxis), ("gpu1", figure.layout.yaxis2)):
        said = describe(f"attribution/{gpu}/attributed_power_w")
        assert axis.title.text == f"{gpu}: {said.label}"
    assert all(f" {describe('attribution/gpu0/attributed_power_w').unit}<extra>" in trace.hovertemplate
               for trace in figure.data)
    line = interference_text({"summary/workload/stp": 1.5, "summary/workload/antt": 1.2,
                              "summary/workload/energy_vs_serial_pct": -8.0})
    named = re.findall(r"(?:^|, )([a-z_]+) ", line)
    assert named == ["stp", "antt", "energy_vs_serial_pct"]
    assert all(n in WORKLOAD_COLUMNS and column_meaning(n, "workloads").declared for n in named)


def test_workloads_are_grouped_by_launch_only_where_it_tells_something() -> None:
    sheet = [Workload("p1", "Workload 1", start=10.0, user="alice", launch="aaaa1111",
                      sheet="grid.csv"),
             Workload("p2", "Workload 2", start=11.0, user="alice", launch="aaaa1111",
                      sheet="grid.csv"),
             Workload("p3", "Workload 1", start=20.0, user="bob", launch="bbbb2222",
                      sheet="grid.last.csv")]
    groups = by_launch(sheet)
    assert [(launch, [w.key for w in ws]) for launch, _, ws in groups] == [
        ("aaaa1111", ["p1", "p2"]), ("bbbb2222", ["p3"])]
    # each header: the launch id, its start to the second, its sheet and who launched it
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(10.0))
    assert groups[0][1] == f"launch aaaa1111 · {when} · grid.csv · alice"
    assert groups[1][1].endswith(" · grid.last.csv · bob")
    single = [Workload("p1", "Workload 1", launch="a"), Workload("p2", "Workload 2", launch="b")]
    assert by_launch(single) == [("", "", single)]  # one-run CLI launches: a plain list


def test_zoom_power_and_overlay_travel_in_the_link() -> None:
    view = View(runs=["a"], metrics=["smi/gpu0/power_w"], xrange=[20.0, 50.5], power="gpu",
                overlay=True)
    query = to_query(view)
    assert "range=20%2C50.5" in query and "power=gpu" in query and "overlay=1" in query
    back, problems = read_link(query)
    assert (back.xrange, back.power, back.overlay, problems) == ([20.0, 50.5], "gpu", True, [])
    bad, problems = read_link("?runs=a&range=50,20&power=watts")
    assert bad.xrange is None and bad.power == "attributed" and len(problems) == 2


def test_summary_headers_give_the_unit_and_tooltips_whose_figure() -> None:
    from radtrack.frontend.columns import column_help
    assert column_title("cpu_pct_mean") == "cpu_pct_mean (% of all cores)"
    assert column_title("proc_cpu_pct_mean") == "proc_cpu_pct_mean (% of one core)"
    assert column_help("cpu_pct_mean") == "host CPU, mean (% of all cores); scope: host"
    assert column_help("proc_cpu_pct_mean") == "run CPU, mean (% of one core); scope: run"
    assert "scope: GPU" in column_help("power_w_max")
    assert "Blank where" in column_help("energy_j") and "scope: run's share of GPU" in column_help("energy_j")
    assert column_help("loss_mean").startswith("loss, mean; scope: run; the script's own")
    for column in ("run", "status", "collocation", "cpu_pct_mean", "energy_j", "duration_s", "loss"):
        assert column_help(column) != column, "a tooltip says more than the header's name"


@pytest.mark.parametrize(("collocation", "others", "uses_gpu", "text"), [
    ("-", 0, True, "solo"),
    ("", 2, True, "GPU time-slicing with 2"),
    ("-", 1, False, "CPU only, shared with 1"),
    ("-", 1, None, "co-located with 1"),
    ("mps:50", 1, None, "MPS 50 % with 1"),
    ("MPS", 0, None, "MPS"),
    ("1g.10gb", 3, True, "MIG slice 1g.10gb"),
])
def test_the_words_for_what_a_row_shared(collocation: str, others: int, uses_gpu: bool | None,
                                         text: str) -> None:
    from radtrack.spec import sharing_text
    assert sharing_text(collocation, others, uses_gpu) == text


def test_a_power_subplot_of_attributed_shares_says_so_on_its_axis() -> None:
    key = "smi/gpu0/power_w"
    series = {(r, key): _series(r, key, w) for r, w in (("a", 300.0), ("b", 120.0))}
    both = build_chart([key], ["a", "b"], {}, series, ChartOptions(),
                       attributed={("a", key), ("b", key)})
    assert both["layout"]["yaxis"]["title"]["text"] == "run's share of GPU power (W)"
    one = build_chart([key], ["a", "b"], {}, series, ChartOptions(), attributed={("a", key)})
    assert one["layout"]["yaxis"]["title"]["text"].replace("<br>", " ") == "GPU power, or the run's share (W)"
    none = build_chart([key], ["a", "b"], {}, series, ChartOptions(), attributed=set())
    assert none["layout"]["yaxis"]["title"]["text"] == "GPU power (W)"
