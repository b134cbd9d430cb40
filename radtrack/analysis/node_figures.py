"""A multi-node run's figures per node and in all (radtrack/nodes/: ``summary/node<K>/...``,
``summary/nodes/...`` and the ``radtrack.node<K>.*`` tags), one row per node and one for
all of them, for ``radtrack report``."""

from __future__ import annotations

import pandas as pd

from radtrack.vocab import schema

COLUMNS = ("run_name", "node", "host", "status", "exit_code", "duration_s", "gpu_energy_j",
           "co2e_g", "clock_offset_ms", "clock_error_ms", "why")


def node_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per multi-node run of ``runs`` (a :func:`radtrack.analysis.data.load_runs` frame):
    a row per node (``node`` 0..N-1) and a row ``all`` with the run's totals and status.
    Empty when no run spans nodes."""
    column = f"tag.{schema.NODES}"
    if runs.empty or column not in runs:
        return pd.DataFrame(columns=list(COLUMNS))
    out: list[dict[str, object]] = []
    for run in runs[runs[column].notna()].to_dict("records"):
        try:
            count = int(run[column])
        except (TypeError, ValueError):
            continue

        def tag(node: int, name: str, run: dict = run) -> object:
            return run.get(f"tag.{schema.node_tag(node, name)}") or ""

        def metric(key: str, run: dict = run) -> float:
            value = run.get(f"metric.{key}")
            return float(value) if value is not None and value == value else float("nan")

        name = run.get("run_name") or run.get("run_id")
        for node in range(count):
            out.append({"run_name": name, "node": str(node), "host": tag(node, "host"),
                        "status": tag(node, "status"), "exit_code": tag(node, schema.EXIT_CODE),
                        "duration_s": metric(schema.node_summary_key(node, "duration_s")),
                        "gpu_energy_j": metric(schema.node_summary_key(node, "gpu_energy_j")),
                        "co2e_g": float("nan"),
                        "clock_offset_ms": tag(node, "clock_offset_ms") or ("0" if not node else ""),
                        "clock_error_ms": tag(node, "clock_error_ms") or ("0" if not node else ""),
                        "why": tag(node, "why")})
        out.append({"run_name": name, "node": "all", "host": "", "status": run.get("status", ""),
                    "exit_code": "",
                    "duration_s": metric(schema.nodes_total_key("duration_s")),
                    "gpu_energy_j": metric(schema.nodes_total_key("gpu_energy_j")),
                    "co2e_g": metric(schema.nodes_total_key("co2e_g")),
                    "clock_offset_ms": "", "clock_error_ms": "",
                    "why": run.get(f"tag.{schema.NODES_FAILED}") or ""})
    return pd.DataFrame(out, columns=list(COLUMNS))
