"""Turning a ``load_runs`` frame into the picker's workloads and run rows.

radtrack stores a workload as a parent run (tag ``radtrack.role=workload``) with one child
run per co-located row; a run that radtrack did not launch (no role tag, no parent) is
shown as a one-run workload so that every run of the store can be picked.

The runs a row's script made itself (``radtrack.role=script``, docs/mlflow-code.md) are
listed under their row run, never as rows of their own: those in the listing's experiment
by their ``radtrack.row_run`` tag, those in other experiments of the store through the
row's ``radtrack.script_runs`` (read by id, :func:`linked_ids`). A script run whose row is
in another experiment brings its row along: the row, with its script runs, is listed as
a workload of its own (``row:<id>``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import pandas as pd
from dash import dcc, html

from radtrack.frontend.colocation import description
from radtrack.frontend.data import node_count, workload_number
from radtrack.vocab import schema

ROLE = f"tag.{schema.ROLE}"
WORKLOAD_TAG = f"tag.{schema.WORKLOAD}"
USER_TAG = f"tag.{schema.MLFLOW_USER}"  # who launched (MLflow's own tag)
LAUNCH_TAG = f"tag.{schema.LAUNCH_ID}"
SHEET_TAG = f"tag.{schema.SHEET}"
LAUNCH_HEADER = "launch:"  # a launch's header row in the workload list (never a workload)
ROW_RUN_TAG = f"tag.{schema.ROW_RUN}"
SCRIPT_RUNS_TAG = f"tag.{schema.SCRIPT_RUNS}"
SCRIPT_MARK = "↳ "  # a script run's name in the run list, under its row
_HIDDEN_TAG_PREFIXES = ("mlflow.",)


@dataclass
class Workload:
    key: str  # the parent run id, or "run:<id>" for a run shown on its own
    label: str
    run_ids: list[str] = field(default_factory=list)
    start: float = 0.0
    user: str = ""
    launch: str = ""  # radtrack.launch_id: one radtrack command (issue 28)
    sheet: str = ""  # the sheet's file name (radtrack.sheet), where a sheet launched it
    #: row run id -> the runs its script made (listed, indented, under the row)
    scripts: dict[str, list[str]] = field(default_factory=dict)

    def listed(self) -> list[tuple[str, bool]]:
        """(run id, is a script run) in list order: each row run, then its script runs."""
        return [(run_id, script) for row in self.run_ids
                for run_id, script in [(row, False), *((s, True) for s in self.scripts.get(row, []))]]


def _sheet_name(row: dict) -> str:
    value = row.get(SHEET_TAG)
    return value.replace("\\", "/").rsplit("/", 1)[-1] if isinstance(value, str) else ""


def _clock(start: float, day: bool = True) -> str:
    """A launch's start as the picker prints it: to the second, so that two launches in one
    minute (a sheet run twice) read apart."""
    return time.strftime("%Y-%m-%d %H:%M:%S" if day else "%H:%M:%S", time.localtime(start)) if start else ""


def _start_s(value: object) -> float:
    return pd.Timestamp(value).timestamp() if value is not None and not pd.isna(value) else 0.0


def is_script(row: dict) -> bool:
    """A run the script made itself (``radtrack.role=script``)."""
    return row.get(ROLE) == schema.ROLE_SCRIPT


def _script_ids(row: dict) -> list[str]:
    value = row.get(SCRIPT_RUNS_TAG)
    return [i for i in value.split(",") if i] if isinstance(value, str) else []


def _row_of(row: dict) -> str | None:
    value = row.get(ROW_RUN_TAG)
    return value if isinstance(value, str) and value else None


def linked_ids(records: list[dict]) -> list[str]:
    """Runs a listing links to but lacks: its rows' script runs in other experiments, and
    the row runs (in other experiments) of its script runs."""
    here = {r["run_id"] for r in records}
    wanted = []
    for row in records:
        wanted += [_row_of(row)] if is_script(row) else _script_ids(row)
    return [i for i in dict.fromkeys(wanted) if i and i not in here]


def _scripts_by_row(records: list[dict], by_id: dict[str, dict]) -> dict[str, list[str]]:
    """Row run id -> its script runs known here (by either link), in start order."""
    out: dict[str, list[str]] = {}
    for row in by_id.values():
        if is_script(row):
            if _row_of(row):
                out.setdefault(_row_of(row), []).append(row["run_id"])  # type: ignore[arg-type]
        else:
            for script in _script_ids(row):
                if script in by_id:
                    out.setdefault(row["run_id"], []).append(script)
    return {row: sorted(dict.fromkeys(ids), key=lambda i: _start_s(by_id[i].get("start_time")))
            for row, ids in out.items()}


def workloads(frame: pd.DataFrame | list[dict], linked: list[dict] | None = None) -> list[Workload]:
    """The workloads of one experiment's runs (parents included), newest first; ``frame``
    may be the listing's rows already as dicts (``DataSource.experiment_rows``); ``linked``:
    the runs of :func:`linked_ids`, read by id."""
    records = frame.to_dict("records") if isinstance(frame, pd.DataFrame) else frame
    if not records:
        return []
    by_id = {r["run_id"]: r for r in [*(linked or []), *records]}
    scripts = _scripts_by_row(records, by_id)
    parents = [r for r in records if r.get(ROLE) == schema.ROLE_WORKLOAD]
    here = {r["run_id"] for r in records}
    rows = [r for r in records if r.get(ROLE) != schema.ROLE_WORKLOAD
            and not (is_script(r) and _row_of(r) in by_id)]
    # a script run here whose row is elsewhere: the row is listed here with its scripts
    rows += [by_id[i] for i in dict.fromkeys(_row_of(r) for r in records if is_script(r))
             if i in by_id and i not in here and not is_script(by_id[i])]
    parent_ids = {p["run_id"] for p in parents}
    found: dict[str, Workload] = {}
    for parent in parents:
        number = parent.get(WORKLOAD_TAG) or parent.get("workload")
        found[parent["run_id"]] = Workload(parent["run_id"], f"Workload {number}",
                                           start=_start_s(parent.get("start_time")),
                                           user=str(parent.get(USER_TAG) or ""),
                                           launch=str(parent.get(LAUNCH_TAG) or ""),
                                           sheet=_sheet_name(parent))
    for row in rows:
        parent_id = row.get("parent_run_id")
        if row["run_id"] not in here:  # the row of a script run here, in another experiment
            key = f"row:{row['run_id']}"
            found[key] = Workload(key, f"{row.get('run_name') or row['run_id'][:8]} "
                                  f"(row run in {row.get('experiment')})", [row["run_id"]],
                                  start=_start_s(row.get("start_time")))
        elif isinstance(parent_id, str) and parent_id in parent_ids:
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
                                  start=_start_s(row.get("start_time")),
                                  user=str(row.get(USER_TAG) or ""),
                                  launch=str(row.get(LAUNCH_TAG) or ""))
    letters = {r["run_id"]: (str(r.get("letter") or ""), str(r.get("run_name") or ""))
               for r in rows}
    for w in found.values():
        w.run_ids.sort(key=lambda run_id: letters[run_id])
        w.scripts = {r: scripts[r] for r in w.run_ids if r in scripts}
    result = [w for w in found.values() if w.run_ids]
    result.sort(key=lambda w: w.start, reverse=True)
    labels = pd.Series([w.label for w in result]).value_counts()
    users = {w.user for w in result if w.user}
    for w in result:
        count = f"{len(w.run_ids)} run{'s' if len(w.run_ids) != 1 else ''}"
        made = sum(len(ids) for ids in w.scripts.values())
        count += f" + {made} script run{'s' if made != 1 else ''}" if made else ""
        parts = [w.label, count]
        if labels[w.label] > 1:
            # A sheet run twice gives two "Workload 1": the entry itself names its launch and
            # its start (the chosen entry is read without its header), and who launched it
            # where several people did
            parts += [f"launch {w.launch}" if w.launch else "",
                      w.user if len(users) > 1 else "", _clock(w.start, day=not w.launch)]
        w.label = " · ".join(p for p in parts if p)
    return result


def by_launch(found: list[Workload]) -> list[tuple[str, str, list[Workload]]]:
    """Workloads grouped by the launch that made them (newest launch first, its workloads
    in order): (launch id, header text, workloads); one group without a header when the
    list holds a single launch or none recorded its id."""
    groups: dict[str, list[Workload]] = {}
    for w in found:
        groups.setdefault(w.launch, []).append(w)
    numbers = [w.label.split(" · ")[0] for w in found]
    # headers where they tell something: a launch of several workloads (a sheet), or one
    # workload number launched twice; one-run CLI launches stay a plain list
    if len(groups) < 2 or not (any(len(m) > 1 for m in groups.values())
                               or len(set(numbers)) < len(numbers)):
        return [("", "", found)]
    out = []
    for launch, members in groups.items():
        first = min((w.start for w in members if w.start), default=0.0)
        users = ", ".join(dict.fromkeys(w.user for w in members if w.user))
        sheets = ", ".join(dict.fromkeys(w.sheet for w in members if w.sheet))
        text = " · ".join(p for p in (f"launch {launch}" if launch else "no launch id",
                                      _clock(first), sheets, users) if p)
        out.append((launch, text, members))
    return out


def matches(row: dict, text: str) -> bool:
    """Whether a run matches the filter: a substring of its name or of any param/tag value,
    or ``key=value`` against one param or tag (case-insensitive); ``user=NAME`` is who
    launched it (MLflow's ``mlflow.user`` tag)."""
    text = (text or "").strip().lower()
    if not text:
        return True
    if "=" in text:
        key, _, wanted = (part.strip() for part in text.partition("="))
        key = schema.MLFLOW_USER if key == "user" else key
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
    shown = [("run id", row["run_id"]), ("user", row.get(USER_TAG)), ("devices", row.get("devices")),
             ("collocation", row.get("collocation"))]
    shown += sorted((k, v) for k, v in row.items() if k.startswith("param.") and v is not None)
    shown += sorted((k, v) for k, v in row.items()
                    if k.startswith(f"tag.{schema.TAG_PREFIX}") and v is not None)
    return [[str(k), str(v)] for k, v in shown
            if v is not None and not (isinstance(v, float) and pd.isna(v))]


def runs_hint(workload: str | None, experiment: str | None = None) -> html.P:
    """What the run list says when it lists no run: what is left to pick, else the filter."""
    text = ("No run matches the filter." if workload else "Pick a workload." if experiment
            else "Pick an experiment and a workload.")
    return html.P(text, className="hint")


def empty_basket() -> html.P:
    """What the Selection basket says when no run is selected."""
    return html.P("No runs selected. Tick runs on the left; they stay here across "
                  "experiments.", className="hint")


def run_row(row: dict, checked: bool, now: float | None = None,
            row_experiment: str | None = None) -> html.Div:
    """A run: checkbox with its name, status, age, duration, and an info popover. A run a
    row's script made (``row_experiment``: its row's experiment) is marked and indented
    under its row, with its own experiment where the script chose another.

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
    if node_count(row) > 1:  # one run over several nodes (nodes.py draws each node's series)
        name += f" · {node_count(row)} nodes"
    script = row_experiment is not None
    if script:
        own = row.get("experiment")
        name = SCRIPT_MARK + name + (f" · {own}" if own and own != row_experiment else "")
    return html.Div([
        dcc.Checklist(id={"type": "run-check", "run": row["run_id"]},
                      options=[{"label": name, "value": row["run_id"]}],
                      value=[row["run_id"]] if checked else [], className="run-name"),
        html.Span(status.lower() or "?", className=f"status status-{status.lower()}"),
        html.Span(ago(start, now), className="age", title=time.strftime(
            "%Y-%m-%d %H:%M:%S", time.localtime(start))),
        # a running run's duration advances in the page (assets/live_duration.js)
        html.Span(duration_text(duration), className="duration live" if status == "RUNNING"
                  else "duration", **({"data-start": f"{start:.3f}"} if status == "RUNNING" else {})),
        # The popover's rows travel as one attribute, drawn on hover or focus by
        # assets/run_info.js: a table of Dash components was 3 per row, most of a run row's
        # cost in the picker (docs/performance.md, "Frontend").
        html.Span("i", className="info", tabIndex="0",
                  **{"data-info": json.dumps(info_pairs(row)), "aria-label": "run details"}),
    ], className="run-row script-run" if script else "run-row",
        title="a run the row's script made itself (docs/mlflow-code.md)" if script else None,
        # how it shared its GPU and which script it ran (colocation.py), as its legend
        # says: drawn by CSS from the attribute (no component more per run row)
        **{"data-how": description(row)})
