"""One status and one set of figures for a multi-node run, from every node's end.

The run is FINISHED only when every node's part finished (each decided as on one node:
radtrack/run/row_status.py ``decide_status``); else KILLED when a node was killed, stopped or
lost, else FAILED. ``radtrack.nodes.failed`` says which node(s) and why; each node's facts
go in ``radtrack.node<K>.*`` tags; its duration and GPU energy in ``summary/node<K>/...`` and
the run's totals in ``summary/nodes/...`` (radtrack/vocab/schema.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from radtrack.nodes.clock import Clock
from radtrack.nodes.rendezvous import NodeEnd
from radtrack.vocab import schema

if TYPE_CHECKING:
    import pandas as pd


STOP_SLACK_S = 1.0  # node 0 notices its own stop a poll late, under load later: ends this
# much before it still count as after it (the part's own end is said too)


def why_not_finished(end: NodeEnd) -> str:
    """A node part's end in a few words ("" when it finished)."""
    if end.status == "FINISHED":
        return ""
    code = end.exit_code
    if end.stopped_by == "signal":
        return "stopped (a signal to its launcher, or the master's stop)"
    if end.stopped_by:
        return f"stopped by {end.stopped_by}"
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    if code is None:
        return end.tags.get(schema.node_tag(end.node, schema.ERROR), "") or "did not run"
    return f"exit {code}"


def decide(ends: Mapping[int, NodeEnd | str],
           stopped_at: float | None = None) -> tuple[str, dict[str, str]]:
    """The run's status and its node tags, from each node's end (or why it has none: lost).
    ``stopped_at``: when node 0's launcher was stopped (its clock); a part that ended unfinished
    after that, on its own account (a distributed script's rank dies of its peer's end before
    the stop reaches its node), is said to have stopped with node 0, its own end in brackets."""
    tags: dict[str, str] = {schema.NODES: str(len(ends))}
    failed: list[str] = []
    statuses: list[str] = []
    for node in sorted(ends):
        end = ends[node]
        if isinstance(end, str):
            status, why, host = "KILLED", end, ""
        else:
            status, why, host = end.status or "FAILED", why_not_finished(end), end.host
            if (why and node and not end.stopped_by and stopped_at is not None
                    and end.ended >= stopped_at - STOP_SLACK_S):
                why = f"stopped with node 0 (its script: {why})"
            tags.update(end.tags)
            if end.exit_code is not None:
                tags[schema.node_tag(node, schema.EXIT_CODE)] = str(end.exit_code)
            if host:
                tags[schema.node_tag(node, "host")] = host
            if not end.stored:
                tags[schema.node_tag(node, "spool")] = (
                    f"{end.spool} on {host}: run `radtrack sync` there to store the rest")
        statuses.append(status)
        tags[schema.node_tag(node, "status")] = status
        if why:
            tags[schema.node_tag(node, "why")] = why
            failed.append(f"node{node}{f' ({host})' if host else ''}: {why}")
    if failed:
        tags[schema.NODES_FAILED] = "; ".join(failed)
    status = ("FINISHED" if all(s == "FINISHED" for s in statuses) else
              "KILLED" if "KILLED" in statuses else "FAILED")
    return status, tags


def clock_tags(clocks: Mapping[int, Clock]) -> dict[str, str]:
    """Each node's measured clock offset to node 0 and its error, in ms."""
    out = {}
    for node, clock in clocks.items():
        out[schema.node_tag(node, "clock_offset_ms")] = f"{clock.offset_s * 1000:+.3f}"
        out[schema.node_tag(node, "clock_error_ms")] = f"{clock.error_s * 1000:.3f}"
    return out


def energy_of(frames: Mapping[str, pd.DataFrame]) -> float | None:
    """A node's device energy over its part: the sum of its energy counters' deltas (every
    ``.../energy_j`` column of its traces); None without a counter."""
    from radtrack.compute.stats import counter_delta
    from radtrack.vocab.energy_sources import bridging_power_key

    total, found = 0.0, False
    for frame in frames.values():
        for col in frame.columns[2:]:
            if str(col).endswith("/energy_j"):
                t = frame["time"].to_numpy(dtype=float)
                power = bridging_power_key(str(col))
                delta = counter_delta(frame[col].to_numpy(dtype=float), t,
                                      (t, frame[power].to_numpy(dtype=float))
                                      if power in frame.columns else None)
                if delta == delta:
                    total, found = total + delta, True
    return total if found else None


def figures(ends: Mapping[int, NodeEnd | str], co2e_g_per_j: float | None = None) -> dict[str, float]:
    """``summary/node<K>/duration_s|gpu_energy_j`` of every node that reported an end, and
    the run's ``summary/nodes/duration_s`` (first start to last end, node 0's clock),
    ``gpu_energy_j`` and ``co2e_g`` (only when every node reported its energy: a partial
    sum is no total)."""
    out: dict[str, float] = {}
    spans, energies = [], []
    for node, end in sorted(ends.items()):
        if isinstance(end, str):
            energies.append(None)
            continue
        if end.started and end.ended >= end.started:
            out[schema.node_summary_key(node, "duration_s")] = end.ended - end.started
            spans.append((end.started, end.ended))
        if end.energy_j is not None:
            out[schema.node_summary_key(node, "gpu_energy_j")] = end.energy_j
        energies.append(end.energy_j)
    if spans:
        out[schema.nodes_total_key("duration_s")] = max(e for _, e in spans) - min(s for s, _ in spans)
    if energies and all(e is not None for e in energies):
        total = float(sum(e for e in energies if e is not None))
        out[schema.nodes_total_key("gpu_energy_j")] = total
        if co2e_g_per_j is not None:
            out[schema.nodes_total_key("co2e_g")] = total * co2e_g_per_j
    return out
