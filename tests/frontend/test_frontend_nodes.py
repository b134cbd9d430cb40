"""A multi-node run on the page (radtrack/frontend/nodes.py): a real SQLite store holding a two-node run
stored as radtrack stores one (node 1's series as ``system/node1/<key>``, its trace
``telemetry/node1.<listener>.parquet``, ``radtrack.nodes`` and ``radtrack.node<K>.*`` tags,
``summary/node<K>/...`` figures), read through the Dash app's own routes: the metric list,
the chart callback, the zoom route, the CSV export and the Summary table."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from node_runs import (
    KEYS,
    NODE1_ENERGY_J,
    NODE1_POWER,
    NODES_SPAN_S,
    POINTS,
    add_node,
    seed_nodes_experiment,
)
from synthetic import seed_workload

from radtrack.compute.correlation import correlate
from radtrack.frontend.app import create_app
from radtrack.frontend.callbacks_chart import HEADER_PREFIX, QUERY_KEY
from radtrack.frontend.data import DataSource, long_frame
from radtrack.frontend.figures import decode_array, legend_labels, run_colours
from radtrack.frontend.picker import run_row
from radtrack.frontend.zoom_data import ROUTE, decode


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("nodes-store")
    uri, multi, single = seed_nodes_experiment(root)
    (live,) = seed_workload(uri, "nodes", 3, ["A"], metrics=KEYS, points=POINTS, epochs=0,
                            status="RUNNING", artifact_root=root / "artifacts",
                            start=1_700_002_000.0)
    client = MlflowClient(tracking_uri=uri)
    add_node(client, live.run_id, live.start, 1, live=True)
    # a one-node run's own metric that merely looks node-scoped stays a metric of its own
    client.log_metric(single.run_id, "node1/loss", 0.5, step=0)
    app = create_app(uri, root / "views")
    return {"uri": uri, "multi": multi, "single": single, "live": live,
            "http": app.server.test_client()}


def _dash(http, output: str, inputs: list[tuple[str, str, object]],
          state: list[tuple[str, str, object]], changed: str) -> dict:
    """One callback through Dash's own route, as the browser calls it."""
    def props(items: list[tuple[str, str, object]]) -> list[dict]:
        return [{"id": i, "property": p, "value": v} for i, p, v in items]

    outputs = [{"id": part.rsplit(".", 1)[0], "property": part.rsplit(".", 1)[1]}
               for part in output.strip(".").split("...")]
    body = {"output": output, "outputs": outputs if "..." in output else outputs[0],
            "inputs": props(inputs), "state": props(state), "changedPropIds": [changed]}
    answer = http.post("/_dash-update-component", json=body)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return answer.get_json()["response"]


def _chart(store: dict, runs: list[str], metrics: list[str]) -> dict:
    response = _dash(store["http"], "..chart.figure...chart-key.data..", [
        ("selection", "data", runs), ("metrics", "value", metrics), ("xmode", "value", "seconds"),
        ("smooth", "value", 1), ("logy", "value", []), ("live", "n_intervals", 0),
        ("power", "value", "attributed"), ("overlay", "value", [])],
        [("view-range", "data", None), ("chart-key", "data", None)], "metrics.value")
    return response["chart"]["figure"]


def test_the_picker_lists_a_metric_once_and_says_the_run_has_two_nodes(store) -> None:
    multi, single = store["multi"].run_id, store["single"].run_id
    response = _dash(store["http"], "metrics.options", [
        ("selection", "data", [multi, single]), ("metric-search", "value", ""),
        ("metrics", "value", [])], [], "selection.data")
    options = response["metrics"]["options"]
    values = [o["value"] for o in options]
    assert {"smi/gpu0/power_w", "top/cpu_pct"} <= set(values)
    assert not any(v.startswith("node1/smi") or v.startswith("node1/top") for v in values)
    assert values.count("smi/gpu0/power_w") == 1
    assert "node1/loss" in values  # the one-node run's own metric, as it logged it
    notes = [o["label"] for o in options if o["value"] == HEADER_PREFIX + "nodes"]
    assert notes == ["runs over 2 nodes: each metric is drawn once per node"]
    alone = _dash(store["http"], "metrics.options", [
        ("selection", "data", [single]), ("metric-search", "value", ""),
        ("metrics", "value", [])], [], "selection.data")["metrics"]["options"]
    assert not any(o["value"] == HEADER_PREFIX + "nodes" for o in alone)
    row_multi, row_single = DataSource(store["uri"]).run_rows([multi, single])
    label = run_row(row_multi, False).children[0].options[0]["label"]
    assert label == f"{store['multi'].run_name} · 2 nodes"
    assert run_row(row_single, False).children[0].options[0]["label"] == store["single"].run_name


def test_a_picked_metric_is_drawn_once_per_node_in_a_legend_group_each(store) -> None:
    multi, single = store["multi"], store["single"]
    figure = _chart(store, [multi.run_id, single.run_id], ["smi/gpu0/power_w"])
    traces = figure["data"]
    names = [t["name"] for t in traces]
    labels = legend_labels(DataSource(store["uri"]).run_rows([multi.run_id, single.run_id]))
    assert labels[multi.run_id].startswith(multi.run_name)
    assert names == [f"{labels[multi.run_id]} · node 0", f"{labels[multi.run_id]} · node 1",
                     labels[single.run_id]]  # the one-node run as it always was
    groups = [t["legendgroup"] for t in traces]
    assert len(set(groups)) == 3 and all(t["showlegend"] for t in traces)
    node1 = traces[1]
    assert node1["meta"][1] == "smi/gpu0/power_w" and node1["meta"][0] != multi.run_id
    y = decode_array(node1["y"])
    assert len(y) == POINTS and np.allclose(y, NODE1_POWER)  # node 1's own trace, every sample
    assert not np.allclose(decode_array(traces[0]["y"]), NODE1_POWER)
    # each run keeps the colour it has everywhere on the page; node 1 has one of its own
    colours = [t["line"]["color"] for t in traces]
    runs = run_colours([multi.run_id, single.run_id])
    assert colours[0] == runs[multi.run_id] and colours[2] == runs[single.run_id]
    assert colours[1] not in (colours[0], colours[2])
    # hover names the trace: the node is in it
    assert all("node" in n for n in names[:2])


def test_a_running_run_draws_each_node_from_its_metric_history(store) -> None:
    live = store["live"]
    figure = _chart(store, [live.run_id], ["top/cpu_pct"])
    traces = figure["data"]
    assert [t["name"].rsplit(" · ", 1)[1] for t in traces] == ["node 0", "node 1"]
    y = decode_array(traces[1]["y"])
    assert len(y) == POINTS and y[0] == pytest.approx(10.0) and y[-1] == pytest.approx(50.0)


def test_a_zoom_answers_every_node_trace_the_chart_drew(store) -> None:
    multi = store["multi"]
    figure = _chart(store, [multi.run_id], ["smi/gpu0/power_w", "top/cpu_pct"])
    assert len(figure["data"]) == 4
    query = {**figure[QUERY_KEY], "x": [5.0, 20.0]}
    answer = store["http"].post(ROUTE, json=query)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    header, arrays = decode(answer.get_data())
    assert [meta for meta, _ in header["traces"]] == [t["meta"] for t in figure["data"]]
    node1_power = [i for i, t in enumerate(figure["data"])
                   if t["name"].endswith("node 1") and t["meta"][1] == "smi/gpu0/power_w"]
    x, y = arrays[node1_power[0]]
    assert len(x) and x.min() >= 4.0 and x.max() <= 21.0 and np.allclose(y, NODE1_POWER)


def test_the_csv_export_has_a_node_column(store) -> None:
    multi, single = store["multi"], store["single"]
    exports = ("png", "jpg", "svg", "pdf", "csv", "json", "view")
    response = _dash(store["http"], "..download.data...export-msg.children..",
                     [(f"export-{k}", "n_clicks", 1 if k == "csv" else None) for k in exports], [
        ("selection", "data", [multi.run_id, single.run_id]),
        ("metrics", "value", ["top/cpu_pct"]), ("xmode", "value", "seconds"),
        ("smooth", "value", 1), ("logy", "value", []), ("view-range", "data", None),
        ("experiment", "value", "nodes"), ("workload", "value", None),
        ("power", "value", "attributed"), ("overlay", "value", [])], "export-csv.n_clicks")
    csv = pd.read_csv(io.StringIO(response["download"]["data"]["content"]))
    assert list(csv.columns[:4]) == ["run", "run_id", "node", "metric"]
    counts = csv.groupby(["run_id", "node"]).size().to_dict()
    assert counts == {(multi.run_id, 0): POINTS, (multi.run_id, 1): POINTS,
                      (single.run_id, 0): POINTS}
    mine = csv[(csv["run_id"] == multi.run_id) & (csv["node"] == 1)]
    assert set(mine["run"]) == {multi.run_name} and set(mine["metric"]) == {"top/cpu_pct"}
    assert mine["value"].iloc[-1] == pytest.approx(50.0)
    assert response["export-msg"]["children"] == f"{3 * POINTS} samples exported as CSV."


def test_the_summary_table_has_the_whole_run_and_a_row_per_node(store) -> None:
    multi, single = store["multi"], store["single"]
    response = _dash(store["http"], "summary-data.data", [
        ("tabs", "value", "summary"), ("selection", "data", [multi.run_id, single.run_id]),
        ("live", "n_intervals", 0)], [], "selection.data")
    rows = response["summary-data"]["data"]["rows"]
    runs = [r["run"] for r in rows]
    assert runs == [f"{multi.run_name} · all 2 nodes", f"{multi.run_name} · node 0 (gpu-a)",
                    f"{multi.run_name} · node 1 (gpu-b)", single.run_name]
    whole, node0, node1 = rows[:3]
    stored = MlflowClient(tracking_uri=store["uri"]).get_run(multi.run_id).data.metrics
    # each node's own figures (node 1's constant power from its own trace), 4 digits shown
    assert node1["status"] == "FINISHED" and node1["duration_s"] == POINTS - 1
    assert node1["power_w_mean"] == pytest.approx(NODE1_POWER)
    assert node0["power_w_mean"] != pytest.approx(NODE1_POWER, rel=1e-3)
    assert node1["gpu_energy_j"] == pytest.approx(NODE1_ENERGY_J, rel=1e-3)
    assert node0["gpu_energy_j"] == pytest.approx(stored["summary/node0/gpu_energy_j"], rel=1e-3)
    # the run's row: the whole run (stored total span and energy); power per node only
    assert whole["gpu_energy_j"] == pytest.approx(stored["summary/nodes/gpu_energy_j"], rel=1e-3)
    assert whole["energy_j"] == pytest.approx(node0["energy_j"] + node1["energy_j"], rel=1e-3)
    assert whole["duration_s"] == pytest.approx(NODES_SPAN_S) and whole["power_w_mean"] is None
    assert "host gpu-b" in node1["_tips"]["run"] and "clock offset ms +1.250" in node1["_tips"]["run"]
    assert "a run over 2 nodes: this row is the whole run" in whole["_tips"]["run"]
    assert "nodes" not in rows[3]["_tips"].get("run", "")
    assert rows[3]["power_w_mean"] is not None  # a one-node run as it always was
    assert "_nodes" not in whole and all(c["id"] != "_nodes" for c in
                                         response["summary-data"]["data"]["columns"])
    json.dumps(response)  # what the page receives is plain JSON


def _z(figure: dict) -> np.ndarray:
    z = figure["data"][0]["z"]  # plotly's typed array carries its shape
    if isinstance(z, dict):
        return decode_array(z).reshape(tuple(int(n) for n in str(z.get("shape", "2, 2")).split(",")))
    return np.array(z, dtype=float)


def test_the_correlation_tab_takes_each_node_as_its_own_series(store) -> None:
    multi, single = store["multi"], store["single"]
    metrics = ["smi/gpu0/power_w", "top/cpu_pct"]

    def correlation(scope: str) -> dict:
        return _dash(store["http"], "..corr.figure...corr-scope.options..", [
            ("tabs", "value", "correlation"), ("selection", "data", [multi.run_id, single.run_id]),
            ("metrics", "value", metrics), ("corr-scope", "value", scope)], [], "corr-scope.value")

    answer = correlation(f"node1/{multi.run_id}")
    options = {o["value"]: o["label"] for o in answer["corr-scope"]["options"]}
    assert options[multi.run_id] == f"{multi.run_name} · all 2 nodes"
    assert options[f"node0/{multi.run_id}"] == f"{multi.run_name} · node 0 (gpu-a)"
    assert options[f"node1/{multi.run_id}"] == f"{multi.run_name} · node 1 (gpu-b)"
    assert options[single.run_id] == single.run_name and len(options) == 5
    # node 1 alone: its power is a constant, so it correlates with nothing (node 0's would)
    figure = answer["corr"]["figure"]
    assert "node 1 (gpu-b)" in figure["layout"]["title"]["text"]
    assert np.isnan(_z(figure)[0, 1])
    node0 = correlation(f"node0/{multi.run_id}")["corr"]["figure"]
    assert np.isfinite(_z(node0)[0, 1])
    # the run: its nodes pooled as separate series, as radtrack.analysis.correlate pools runs
    whole = correlation(multi.run_id)["corr"]["figure"]
    assert "its 2 nodes pooled" in whole["layout"]["title"]["text"]
    source = DataSource(store["uri"])
    parts = [long_frame(source.series([multi.run_id], metrics)),
             long_frame(source.series([multi.run_id], [f"node1/{m}" for m in metrics]))
             .assign(run_id="node1", metric=lambda f: f["metric"].str.removeprefix("node1/"))]
    expected = correlate(pd.concat(parts, ignore_index=True), metrics)
    assert _z(whole)[0, 1] == pytest.approx(expected.iloc[0, 1])
    assert _z(whole)[0, 1] != pytest.approx(_z(node0)[0, 1])


def test_the_compare_tab_compares_a_multi_node_run_as_a_whole(store) -> None:
    multi, single = store["multi"], store["single"]
    response = _dash(store["http"], "..compare-column.options...compare-column.value..."
                     "compare-baseline.options...compare-baseline.value...compare-view.children..",
                     [("compare-selection", "data", {"runs": [multi.run_id, single.run_id], "at": 1}),
                      ("compare-column", "value", "gpu_energy_j"),
                      ("compare-baseline", "value", single.run_id)], [], "compare-selection.data")
    baselines = {o["value"]: o["label"] for o in response["compare-baseline"]["options"]}
    assert baselines[multi.run_id] == f"{multi.run_name} · all 2 nodes"
    assert baselines[single.run_id] == single.run_name
    text = json.dumps(response["compare-view"]["children"], ensure_ascii=False)
    stored = MlflowClient(tracking_uri=store["uri"]).get_run(multi.run_id).data.metrics
    assert f'"{stored["summary/nodes/gpu_energy_j"]:,.0f}"' in text  # the run's total, as stored
    assert "compared as a whole" in text and "each node's are in the Summary tab" in text


def test_a_shared_link_to_a_two_node_chart_comes_with_every_node_and_the_note(store) -> None:
    multi = store["multi"]
    page = store["http"].get(f"/?runs={multi.run_id}&metric=smi%2Fgpu0%2Fpower_w")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "runs over 2 nodes: each metric is drawn once per node" in text
    text = text.replace("\\u00b7", "·")  # the layout's JSON, in the page
    names = re.findall(r'"name":"(nodes-1 A[^"]*)"', text)  # the chart's traces
    assert [n.rsplit(" · ", 1)[1] for n in names] == ["node 0", "node 1"]
    assert '"run":"nodes-1 A · node 1 (gpu-b)"' in text  # the Summary table's node row
