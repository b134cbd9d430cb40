"""A multi-node run in a test store, stored as radtrack stores one (radtrack/nodes/): node 0's
part is an ordinary row run (tests/synthetic.py), node K's series are ``system/node<K>/<key>``
with its trace ``telemetry/node<K>.<listener>.parquet``, and the run carries the
``radtrack.nodes`` and ``radtrack.node<K>.*`` tags and ``summary/node<K>/...`` figures that
outcome.py writes. The values are synthetic shapes, never presented as measurements."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Metric

from radtrack.compute import stats
from radtrack.vocab import schema

KEYS = ("smi/gpu0/power_w", "top/cpu_pct")
POINTS = 40
NODE1_POWER = 321.0  # node 1's power: a constant no synthetic node-0 trace holds
NODE1_ENERGY_J = NODE1_POWER * (POINTS - 1)  # its GPU energy over its 39 s of samples
NODES_SPAN_S = POINTS + 0.5  # the run's span over both nodes (node 1's part started 0.5 s early)


def add_node(client: MlflowClient, run_id: str, start: float, node: int,
             live: bool = False) -> None:
    """Node ``node``'s part of a two-node run, as the node's sink, the end of the run and
    outcome.py store it: its series node-scoped (history holds only the last sample, so a
    reader must read the node's trace to get all of them), a trace per listener, its figures
    and tags. ``live``: a run still RUNNING: every sample in history, no trace, no figures."""
    times = start + np.arange(POINTS, dtype=np.float64)
    values = {"smi/gpu0/power_w": np.full(POINTS, NODE1_POWER),
              "top/cpu_pct": np.linspace(10.0, 50.0, POINTS)}
    end_ms = int(times[-1] * 1000)
    kept = range(POINTS) if live else [POINTS - 1]
    logged = [Metric(schema.stored_key(schema.node_scoped(k, node)), float(v[i]),
                     int(times[i] * 1000), i) for k, v in values.items() for i in kept]
    if not live:
        # each node's GPU energy as outcome.py stores it, here its power integrated: node 0's
        # from the trace seed_workload logged, node 1's from its constant
        history = client.get_metric_history(run_id, schema.stored_key(KEYS[0]))
        node0_j = stats.integrate(np.array([m.timestamp / 1000 for m in history]),
                                  np.array([m.value for m in history]))
        logged += [Metric(schema.node_summary_key(0, "duration_s"), float(POINTS), end_ms, 0),
                   Metric(schema.node_summary_key(node, "duration_s"), float(POINTS - 1), end_ms, 0),
                   Metric(schema.node_summary_key(0, "gpu_energy_j"), node0_j, end_ms, 0),
                   Metric(schema.node_summary_key(node, "gpu_energy_j"), NODE1_ENERGY_J, end_ms, 0),
                   Metric(schema.nodes_total_key("gpu_energy_j"), node0_j + NODE1_ENERGY_J, end_ms, 0),
                   Metric(schema.nodes_total_key("duration_s"), NODES_SPAN_S, end_ms, 0)]
    client.log_batch(run_id, metrics=logged, synchronous=True)
    with tempfile.TemporaryDirectory() as tmp:
        for key, column in values.items() if not live else ():
            listener = key.split("/", 1)[0]
            path = Path(tmp) / f"{schema.node_stream(listener, node)}{schema.TRACE_SUFFIX}"
            pd.DataFrame({"time": times, "step": np.arange(POINTS),
                          schema.node_scoped(key, node): column}).to_parquet(path, index=False)
            client.log_artifact(run_id, str(path), schema.TELEMETRY_DIR)
    tags = {schema.NODES: "2", schema.node_tag(0, "host"): "gpu-a",
            schema.node_tag(node, "host"): "gpu-b",
            schema.node_tag(node, "clock_offset_ms"): "+1.250"}
    if not live:
        tags.update({schema.node_tag(0, "status"): "FINISHED",
                     schema.node_tag(node, "status"): "FINISHED"})
    for name, value in tags.items():
        client.set_tag(run_id, name, value)


def seed_nodes_experiment(root: Path) -> tuple[str, object, object]:
    """A store in ``root`` with experiment ``nodes``: workload 1 a two-node run (node 1 added
    by :func:`add_node`), workload 2 a one-node run.
    Returns the store's URI and the two seeded runs."""
    from synthetic import new_store, seed_workload

    uri = new_store(root)
    (multi,) = seed_workload(uri, "nodes", 1, ["A"], metrics=KEYS, points=POINTS, epochs=0,
                             artifact_root=root / "artifacts")
    (one,) = seed_workload(uri, "nodes", 2, ["A"], metrics=KEYS, points=POINTS, epochs=0,
                           artifact_root=root / "artifacts", start=1_700_001_000.0)
    add_node(MlflowClient(tracking_uri=uri), multi.run_id, multi.start, 1)
    return uri, multi, one
