"""Turning a ``load_runs`` frame into the picker's workloads and run rows.

radtrack stores a workload as a parent run (tag ``radtrack.role=workload``) with one child
run per co-located row; a run that radtrack did not launch (no role tag, no parent) is
shown as a one-run workload so that every run of the store can be picked.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import pandas as pd
from dash import dcc, html

from radtrack.frontend.data import workload_number
from radtrack.store import schema

ROLE = f"tag.{schema.ROLE}"
WORKLOAD_TAG = f"tag.{schema.WORKLOAD}"
_HIDDEN_TAG_PREFIXES = ("mlflow.",)


@dataclass
class Workload:
    key: str  # the parent run id, or "run:<id>" for a run shown on its own
    label: str
    run_ids: list[str] = field(default_factory=list)
    start: float = 0.0


def _start_s(value: object) -> float:
    return pd.Timestamp(value).timestamp() if value is not None and not pd.isna(value) else 0.0


def workloads(frame: pd.DataFrame | list[dict]) -> list[Workload]:
    """The workloads of one experiment's runs (parents included), newest first; ``frame``
    may be the listing's rows already as dicts (``DataSource.experiment_rows``)."""
    records = frame.to_dict("records") if isinstance(frame, pd.DataFrame) else frame
    if not records:
        return []
    parents = [r for r in records if r.get(ROLE) == schema.ROLE_WORKLOAD]
    rows = [r for r in records if r.get(ROLE) != schema.ROLE_WORKLOAD]
    parent_ids = {p["run_id"] for p in parents}
    found: dict[str, Workload] = {}
    for parent in parents:
        number = parent.get(WORKLOAD_TAG) or parent.get("workload")
        found[parent["run_id"]] = Workload(parent["run_id"], f"Workload {number}",
                                           start=_start_s(parent.get("start_time")))
    for row in rows:
        parent_id = row.get("parent_run_id")
        if isinstance(parent_id, str) and parent_id in parent_ids:
            found[parent_id].run_ids.append(row["run_id"])
        elif isinstance(parent_id, str) and workload_number(row.get("workload")) is not None:
            # The parent was deleted: keep its rows together under their workload number.
            key = f"orphan:{parent_id}"
            entry = found.setdefault(key, Workload(key, f"Workload {workload_number(row['workload'])}",
                                                   start=_start_s(row.get("start_time"))))
            entry.run_ids.append(row["run_id"])
        else:
            key = f"run:{row['run_id']}"
            found[key] = Workload(key, str(row.get("run_name") or row["run_id"][:8]), [row["run_id"]],
                                  start=_start_s(row.get("start_time")))
    letters = {r["run_id"]: (str(r.get("letter") or ""), str(r.get("run_name") or ""))
               for r in rows}
    for w in found.values():
        w.run_ids.sort(key=lambda run_id: letters[run_id])
    result = [w for w in found.values() if w.run_ids]
    result.sort(key=lambda w: w.start, reverse=True)
    labels = pd.Series([w.label for w in result]).value_counts()
    for w in result:
        count = f"{len(w.run_ids)} run{'s' if len(w.run_ids) != 1 else ''}"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(w.start)) if w.start else ""
        # A sheet run twice gives two "Workload 1"; the start time tells them apart.
        w.label = f"{w.label} · {count}" + (f" · {when}" if labels[w.label] > 1 or not when else "")
    return result


def matches(row: dict, text: str) -> bool:
    """Whether a run matches the filter: a substring of its name or of any param/tag value,
    or ``key=value`` against one param or tag (case-insensitive)."""
    text = (text or "").strip().lower()
    if not text:
        return True
    if "=" in text:
        key, _, wanted = (part.strip() for part in text.partition("="))
        for column in (f"param.{key}", f"tag.{key}"):
            for name, value in row.items():
                if name.lower() == column and value is not None and wanted in str(value).lower():
                    return True
        return False
    haystack = [row.get("run_name") or ""]
    haystack += [str(v) for k, v in row.items()
                 if (k.startswith("param.") or k.startswith("tag.")) and v is not None
                 and not k.startswith(tuple(f"tag.{p}" for p in _HIDDEN_TAG_PREFIXES))]
    return any(text in str(h).lower() for h in haystack)


def ago(start: float, now: float | None = None) -> str:
    """'just now', '5 minutes ago', '3 days ago'."""
    seconds = max(0.0, (now if now is not None else time.time()) - start)
    for unit, size in (("year", 365 * 86400), ("month", 30 * 86400), ("day", 86400),
                       ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return "just now"


def duration_text(seconds: float | None) -> str:
    if seconds is None or pd.isna(seconds):
        return "-"
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


def info_pairs(row: dict) -> list[list[str]]:
    """The run's id, devices, collocation, params and radtrack tags, as [name, value]."""
    shown = [("run id", row["run_id"]), ("devices", row.get("devices")),
             ("collocation", row.get("collocation"))]
    shown += sorted((k, v) for k, v in row.items() if k.startswith("param.") and v is not None)
    shown += sorted((k, v) for k, v in row.items()
                    if k.startswith(f"tag.{schema.TAG_PREFIX}") and v is not None)
    return [[str(k), str(v)] for k, v in shown
            if v is not None and not (isinstance(v, float) and pd.isna(v))]


def runs_hint(workload: str | None) -> html.P:
    """What the run list says when it lists no run."""
    return html.P("Pick an experiment and a workload." if not workload
                  else "No run matches the filter.", className="hint")


def empty_basket() -> html.P:
    """What the Selection basket says when no run is selected."""
    return html.P("No runs selected. Tick runs on the left; they stay here across "
                  "experiments.", className="hint")


def run_row(row: dict, checked: bool, now: float | None = None) -> html.Div:
    """A run: checkbox with its name, status, age, duration, and an info popover.

    Each run has its own one-option checklist (a pattern-matching id): a single checklist
    whose option labels are components breaks in Dash 4's renderer when its options
    shrink, which is what the run filter does.
    """
    status = str(row.get("status") or "")
    start = _start_s(row.get("start_time"))
    duration = row.get("duration_s")
    if status == "RUNNING":
        duration = (now if now is not None else time.time()) - start
    name = str(row.get("run_name") or row["run_id"][:8])
    return html.Div([
        dcc.Checklist(id={"type": "run-check", "run": row["run_id"]},
                      options=[{"label": name, "value": row["run_id"]}],
                      value=[row["run_id"]] if checked else [], className="run-name"),
        html.Span(status.lower() or "?", className=f"status status-{status.lower()}"),
        html.Span(ago(start, now), className="age", title=time.strftime(
            "%Y-%m-%d %H:%M:%S", time.localtime(start))),
        html.Span(duration_text(duration), className="duration"),
        # The popover's rows travel as one attribute, drawn on hover or focus by
        # assets/run_info.js: a table of Dash components was 3 per row, most of a run row's
        # cost in the picker (docs/performance.md, "Frontend").
        html.Span("i", className="info", tabIndex="0",
                  **{"data-info": json.dumps(info_pairs(row)), "aria-label": "run details"}),
    ], className="run-row")
