"""What every figure radtrack stores is: its scope, unit, role and label, from one owner.

:func:`describe` answers for any name a reader meets: a listener series (``top/proc/cpu_pct``,
as stored ``system/top/proc/cpu_pct``), its summaries (``summary/top/proc/cpu_pct/mean``,
``summary/smi/gpu0/energy_j``), co-location accounting (``attribution/gpu0/attributed_power_w``,
``summary/attribution/gpu0/energy_j``), workload totals (``summary/workload/gpu0/idle_energy_j``),
code windows (``window/warmup/energy_j``), error bars (``..._ci95_pct``), the cost of watching
(``summary/monitoring/...``), the summary and report columns (``proc_cpu_pct_mean``,
``energy_j``) and the script's own metrics (``loss``). Listener series are described by
their listener's declaration (``Listener.series``: radtrack/vocab/series.py's words, read
through the listeners' entry points, third-party ones alike: radtrack/vocab/declared.py),
and from the key's shape where no listener declares them
(``<listener>/<scope>/<quantity>_<unit>``: the unit from the suffix, never a power or
energy role). The page's charts and headers, the exports and the report label by it;
docs/metrics.md is checked against it (tests/store/test_meaning_docs.py).

Every table a reader writes says what its columns are through :func:`column_row` (a
columns table: table, name, scope, unit, meaning; :data:`COLUMN_FIELDS`): the report's
json/csv/parquet, ``radtrack export``, the page. radtrack's own words (summary and report
columns, accounting, windows, workload totals) are data in radtrack/vocab/meaning_words.py.

Pure: no MLflow, no store access. Labels are what a reader sees, so they say whose figure
it is before what it is: ``run CPU (% of one core)`` vs ``host CPU (% of all cores)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache

from radtrack.vocab import schema
from radtrack.vocab.declared import series_of
from radtrack.vocab.device_identity import device_fact
from radtrack.vocab.meaning_words import (
    ATTRIBUTION,
    COUNTS,
    MONITORING,
    OWN_TABLES,
    REPORT_COLUMNS,
    RUN_FIELDS,
    STEP_TABLES,
    SUMMARY_COLUMNS,
    TABLE_PARTS,
    WINDOW,
    WORKLOAD,
)
from radtrack.vocab.series import (
    ROLES,
    SCOPES,
    Series,
    derived_label,
    derived_role,
    derived_scope,
    split_unit,
)

__all__ = ["COLUMN_FIELDS", "COUNTS", "ROLES", "SCOPES", "SUMMARY_COLUMNS", "Meaning", "column_row",
           "describe", "is_count", "with_role"]

#: the statistics a summary key or a summary column ends in
STATS = {"mean": "mean", "min": "min", "max": "max", "p95": "95th percentile"}


@dataclass(frozen=True)
class Meaning:
    """What one figure is. ``label`` is what a title or a header shows: the name, then the
    unit as a reader needs it (``run CPU, mean (% of one core)``); ``unit`` is the bare unit
    (``%``), ``unit_text`` the unit with what it is a part of (``% of one core``)."""

    key: str  # the name described, without MLflow's ``system/`` prefix
    scope: str  # vocab.series.SCOPES: host, run, device, device_share, mig, workload
    unit: str  # "W", "%", "J"; "" for a number without a unit
    unit_text: str  # "% of one core", "W"; "" for a number without a unit
    role: str  # vocab.series.ROLES
    name: str  # "run CPU, mean": the label without its unit
    label: str  # "run CPU, mean (% of one core)"
    stat: str = ""  # a summary's statistic (mean, min, max, p95, total), "" for a series
    declared: bool = True  # False: read from the key's shape, no listener declares it
    #: what the declaration's placeholders matched: (("i", "0"),) for smi/gpu0/power_w,
    #: (("rail", "vdd_gpu_soc"),) for tegrastats/power/vdd_gpu_soc_mw
    ids: tuple[tuple[str, str], ...] = ()
    flavour: str = ""  # a power reading's kind (vocab.series.FLAVOURS), as declared
    priority: int = 0  # the declaring series' priority over another listener's of one device
    refresh_s: float | None = None  # its sensor's declared refresh period (vocab.series.Series)

    @property
    def scope_text(self) -> str:
        """The scope as a word: ``host``, ``run``, ``GPU``, ``run's share of GPU``."""
        return SCOPES[self.scope]


def _meaning(key: str, scope: str, unit: str, role: str, name: str, unit_text: str | None = None,
             stat: str = "", declared: bool = True) -> Meaning:
    text = unit if unit_text is None else unit_text
    return Meaning(key, scope, unit, text, role, name, f"{name} ({text})" if text else name, stat,
                   declared)


def _with(base: Meaning, key: str, name: str, stat: str = "", **changes: str) -> Meaning:
    """``base`` renamed (and re-labelled) for a figure derived from it."""
    out = replace(base, key=key, name=name, stat=stat, **changes)
    return replace(out, label=f"{name} ({out.unit_text})" if out.unit_text else name)

_CI = ((schema.CI95_SUFFIX, "%", "95 % interval", "± % of the figure"),
       (schema.CI95_FLAG_SUFFIX, "", "interval flag", "0 ok, 1 bursty load, 2 span too short"))
_GPU = re.compile(r"gpu\d+")
# an attributed device's figure: summary/attribution/<device>/..., summary/workload/<device>/...,
# attribution/<device>/<series> (a GPU gpu<i>, or a host's CPU package or DRAM: pkg0/dram)
_HOST_DEVICE = re.compile(r"^(?:summary/attribution|summary/workload|attribution)/(.+)/[^/]+$")
_OWN_PREFIXES = (schema.SUMMARY_PREFIX, schema.ATTRIBUTION_PREFIX, schema.WINDOW_PREFIX)


def describe(key: str, tags: Mapping[str, object] | None = None) -> Meaning:
    """What ``key`` is: a stored metric key (``system/`` prefix or not), a summary or
    report column, or a script's own metric; ``tags`` (a run's tags, ``tag.``-prefixed as
    in a runs frame or bare) say whether a GPU was a MIG slice. Never raises for a name of
    an unknown shape: it is described as the run's own figure, ``declared`` False."""
    key = key.strip()
    node, own = schema.split_node(key)
    if node is not None:  # node K's figure of a multi-node run (radtrack/nodes/): as node 0's
        base = describe(own, tags)
        return replace(base, key=schema.node_scoped(base.key, node),
                       name=f"node{node} {base.name}", label=f"node{node} {base.label}")
    if key.startswith(schema.NODES_SUMMARY_PREFIX):  # a multi-node run's total over its nodes
        base = describe(schema.SUMMARY_PREFIX + key[len(schema.NODES_SUMMARY_PREFIX):], tags)
        return replace(base, key=key, name=f"all nodes: {base.name}",
                       label=f"all nodes: {base.label}")
    name = schema.canonical_key(key)
    # a key stored under system/ is a listener's series, whatever its shape
    own = name.startswith(_OWN_PREFIXES) or name == schema.SPOOL_DROPPED_KEY
    meaning = (_series_shape(name) if name != key and not own and _script_like(name)
               else _describe(name))
    host = _HOST_DEVICE.match(name)
    if host and not _GPU.fullmatch(host.group(1)):  # the host's CPU side (rapl's pkg0, pkg0/dram)
        return _with(meaning, meaning.key, re.sub(r"\bGPU\b", f"host {host.group(1)}", meaning.name),
                     meaning.stat)
    if tags and meaning.scope == "device" and meaning.role not in ("device_power", "energy_counter"):
        parts = meaning.key.split("/")
        scope = next((p for p in parts if _GPU.fullmatch(p)), None)
        mig = scope and device_fact(tags, scope, "mig")  # whichever listener read the GPU
        if mig and str(mig).lower() == "true":
            name = re.sub(r"^GPU\b", "MIG slice", meaning.name)
            return _with(meaning, meaning.key, name, meaning.stat, scope="mig")
    return meaning


#: what a columns table says of each column, in every machine-readable output (the report's
#: json/csv/parquet, radtrack export): the table, the name, its scope, its bare unit, the unit
#: as a reader needs it, its role, and its meaning (the label: whose figure, what, in what unit)
COLUMN_FIELDS = ("table", "name", "scope", "unit", "unit_text", "role", "meaning")

#: a table whose rows are not runs: its columns of a run's name are its subject's figures
_TABLE_KEYS = {"workloads": {c: schema.workload_key(c) for c in ("duration_s", "energy_j", "co2e_g")}}


def column_meaning(name: str, table: str = "") -> Meaning:
    """What column ``name`` of the report's (or an export's) table ``table`` is: the one
    lookup every reader makes, so that a figure has one name, scope and unit everywhere
    (the workloads table's ``energy_j`` is the workload's, the runs table's the run's)."""
    key = _TABLE_KEYS.get(table, {}).get(name)
    if key:
        return replace(describe(key), key=name)
    figure = name.removesuffix(schema.CI95_SUFFIX)
    if figure != name and figure:  # a figure's interval: of the figure as this table means it
        base = column_meaning(figure, table)
        what, text = _CI[0][2:]
        return _meaning(name, base.scope, "%", "other", f"{base.name}: {what}", text, base.stat)
    if table == "windows" and name in WINDOW:  # a window's figure, summed over the times it ran
        base = _table(name, name, WINDOW)
        return _with(base, name, f"code window: {base.name}, over the times it ran", "total")
    for prefix, what in RUN_FIELDS.items():
        if name.startswith(prefix):
            return _meaning(name, "run", "", "other", f"{what} {name[len(prefix):]}")
    meaning = describe(name)
    if table in OWN_TABLES and not meaning.declared:  # the script's own metric (loss)
        return replace(_with(meaning, name, f"{meaning.name}: the script's own metric, last value logged"),
                       declared=True)
    if table in STEP_TABLES and not meaning.declared and "/" not in name:  # the script's, per step
        return replace(_with(meaning, name, f"{meaning.name}: {STEP_TABLES[table]}"), declared=True)
    if name in TABLE_PARTS.get(table, {}):  # a part's figure: a node's, a device's or rail's
        whose, scope = TABLE_PARTS[table][name]
        return _with(meaning, name, whose, meaning.stat, scope=scope)
    return meaning


def column_row(name: str, table: str = "") -> dict[str, str]:
    """One row of a columns table (:data:`COLUMN_FIELDS`) for column ``name`` of ``table``."""
    meaning = column_meaning(name, table)
    return {"table": table, "name": name, "scope": meaning.scope, "unit": meaning.unit,
            "unit_text": meaning.unit_text, "role": meaning.role, "meaning": meaning.label}


def is_count(name: str) -> bool:
    """True for a column that counts things (samples, repeats, rows): a whole number."""
    return name in COUNTS


def with_role(keys: Iterable[str], *roles: str, scope: str | None = None) -> list[str]:
    """The keys among ``keys`` whose role is one of ``roles`` (and scope ``scope``), in their
    order: how a reader picks series by what they are, never by listener name
    (``with_role(keys, "device_power")`` finds smi's, tegrastats' input rail, a plugin's)."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown role(s) {sorted(unknown)}: roles are {', '.join(ROLES)}")
    return [k for k in keys if (m := describe(k)).role in roles and (scope is None or m.scope == scope)]


@cache
def _describe(key: str) -> Meaning:
    for suffix, unit, what, text in _CI:
        if key.endswith(suffix) and len(key) > len(suffix):
            base = _describe(key[: -len(suffix)])
            return _meaning(key, base.scope, unit, "other", f"{base.name}: {what}", text, base.stat)
    if key.startswith(schema.SUMMARY_PREFIX):
        return _summary(key, key[len(schema.SUMMARY_PREFIX):])
    if key.startswith(schema.ATTRIBUTION_PREFIX):
        return _table(key, key.rsplit("/", 1)[-1], ATTRIBUTION)
    if key.startswith(schema.WINDOW_PREFIX):
        name, _, quantity = key[len(schema.WINDOW_PREFIX):].rpartition("/")
        base = _table(key, quantity, WINDOW)
        return _with(base, key, f"code window {name or '?'}: {base.name}")
    if key == schema.SPOOL_DROPPED_KEY:
        return _meaning(key, "run", "", "other", "samples the full disk dropped", "samples")
    if key.startswith(schema.SYSTEM_PREFIX):  # MLflow's own system metrics: the host's
        name, unit = split_unit(key)
        return _meaning(key, "host", unit, derived_role(key),
                        f"host {name.replace('_', ' ')} (MLflow)", declared=False)
    if "/" in key:
        return _listener(key)
    return _column(key)


def _table(key: str, quantity: str, table: Mapping[str, tuple[str, str, str, str, str]]) -> Meaning:
    if quantity in table:
        scope, unit, role, name, text = table[quantity]
        return _meaning(key, scope, unit, role, name, text)
    return _shape(key)


def _summary(key: str, rest: str) -> Meaning:
    """``summary/...``: a series' statistic or total, or one of radtrack's own totals."""
    if rest.startswith("workload/"):
        parts = rest.split("/")[1:]
        quantity = parts[-1]
        if quantity in WORKLOAD:
            unit, role, name, text = WORKLOAD[quantity]
        elif quantity.startswith("work_"):
            unit, role, name, text = quantity[5:], "other", "workload work", quantity[5:]
        elif quantity.startswith("energy_per_") and quantity.endswith("_j"):
            per = quantity[len("energy_per_"):-2]
            unit, role, name, text = f"J/{per}", "energy", f"workload energy per {per}", f"J/{per}"
        else:
            return _shape(key)
        gpu = next((p for p in parts[:-1] if _GPU.fullmatch(p)), "")
        return _meaning(key, "workload", unit, role, name.replace("GPU", f"GPU {gpu[3:]}") if gpu
                        else name, text, "total")
    if rest.startswith("attribution/"):
        return replace(_table(key, rest.rsplit("/", 1)[-1], ATTRIBUTION), stat="total")
    if rest.startswith("monitoring/"):
        parts = rest.split("/")[1:]
        if parts[-1] not in MONITORING:
            return _shape(key)
        unit, name, text = MONITORING[parts[-1]]
        listener = parts[0] if len(parts) > 1 else "listeners"
        return _meaning(key, "run", unit, "other", name.replace("<listener>", listener), text, "total")
    if key.startswith(schema.ENERGY_MODEL_PREFIX):
        return _meaning(key, "device", "J", "energy", "GPU energy, activity model", "J", "total")
    if rest in ("duration_s", "co2e_g"):
        return _column(rest, key)
    series, _, stat = rest.rpartition("/")
    if series and stat in STATS and not series.startswith(schema.SUMMARY_PREFIX):
        base = _describe(series)
        return _with(base, key, f"{base.name}, {STATS[stat]}", stat)
    base = _describe(rest)
    if rest.endswith("/" + schema.RAIL_ENERGY) and (base.role == "power_rail" or not base.declared):
        rail = _rail_energy(key, rest)
        if rail is not None:  # summary/<rail>/energy_j: a power rail's energy over the run
            return rail
    if base.role == "energy_counter":  # summary/<counter> = last - first: the run's total
        name = (base.name.removesuffix(" counter") + " over the run" if base.name.endswith(" counter")
                else f"{base.name}, total")
        return _with(base, key, name, "total", role="energy")
    return _with(base, key, f"{base.name}, total", "total")


#: a rail's quantity names dropped from its name (rapl/pkg0/core/power_w -> rapl/pkg0/core)
_RAIL_QUANTITIES = ("power", "energy")
#: the flavours of a rail's series that are integrated (never a mean since start, never samples)
RAIL_FLAVOURS = ("", "average")


def rail_name(key: str) -> str:
    """The name of the rail a ``power_rail`` series (or its declared pattern) measures: its
    key without the unit suffix, and without a bare ``power``/``energy`` last part
    (``tegrastats/power/vdd_gpu_soc_mw`` -> ``tegrastats/power/vdd_gpu_soc``,
    ``rapl/pkg0/core/energy_j`` and ``rapl/pkg0/core/power_w`` -> ``rapl/pkg0/core``); a key
    without a known unit suffix is its own name."""
    head, _, _ = key.rpartition("/")
    quantity, unit = split_unit(key)
    if not unit:
        return key
    if quantity in _RAIL_QUANTITIES and head:
        return head
    return f"{head}/{quantity}" if head else quantity


def _rail_energy(key: str, rest: str) -> Meaning | None:
    """``summary/<rail>/energy_j`` (schema.rail_energy_key) of a rail its listener declares."""
    for series in _declared(rest.split("/", 1)[0]) or ():
        if series.role == "power_rail" and series.flavour in RAIL_FLAVOURS:
            family = replace(series, pattern=f"{rail_name(series.pattern)}/{schema.RAIL_ENERGY}")
            if (values := family.match(rest)) is not None:
                name = re.sub(r"\s+(?:power|energy)$", "", family.spec(rest).label)
                return replace(_meaning(key, series.scope, "J", "energy", f"{name} energy over the run",
                                        "J", "total"), ids=tuple(values.items()))
    return None


def _column(column: str, key: str | None = None) -> Meaning:
    """A summary or report column (``proc_cpu_pct_mean``, ``energy_j``), or a script's own metric."""
    key = key or column
    own = SUMMARY_COLUMNS.get(column) or REPORT_COLUMNS.get(column)
    if isinstance(own, tuple):
        scope, unit, role, name, text = own
        return _meaning(key, scope, unit, role, name, text, "total" if role == "energy" else "")
    quantity, _, stat = column.rpartition("_")
    if stat == "cv" and quantity:  # run-to-run spread of a column (compute/variability.py)
        base = _column(quantity)
        return _meaning(key, base.scope, "", "other", f"{base.name}, run-to-run coefficient of variation",
                        "std / mean")
    if column.endswith("_cpu_s") and column.count("_") == 2:  # <listener>_cpu_s (monitoring_cost.py)
        unit, name, text = MONITORING["cpu_s"]
        return _meaning(key, "run", unit, "other", name.replace("<listener>", column.split("_")[0]), text)
    if stat in STATS and quantity:
        base = _describe(quantity)
        return _with(base, key, f"{base.name}, {STATS[stat]}", stat)
    if column.startswith("energy_per_") and column.endswith("_j"):
        per = column[len("energy_per_"):-2]
        return _meaning(key, "device_share", f"J/{per}", "energy", f"run's energy per {per}")
    return _script(column, key)


def _script(name: str, key: str | None = None) -> Meaning:
    """A script's own metric (``loss``, ``val/acc_pct``): the run's, its unit from its suffix."""
    quantity, unit = split_unit(name)
    path = name.rpartition("/")[0]
    label = (f"{path}/" if path else "") + quantity.replace("_", " ") if unit else name
    return _meaning(key or name, "run", unit, "other", label, declared=False)


def _listener(key: str) -> Meaning:
    """A listener's series: from its listener's declaration, else from the key's shape; a
    key of no installed listener that is not of a listener's shape is the script's own
    (``train/loss``)."""
    if _script_like(key):
        return _script(key)
    for series in _declared(key.split("/", 1)[0]) or ():
        values = series.match(key)
        if values is not None:  # a family key (smi/gpu*/power_w) as well as a stored one
            label = re.sub(r"<([a-z_]+)>", lambda m, found=values: found.get(m[1], m[0]), series.label)
            return replace(_meaning(key, series.scope, series.unit, series.role, label,
                                    series.unit_text or series.unit), ids=tuple(values.items()),
                           flavour=series.flavour, priority=series.priority,
                           refresh_s=series.refresh_s)
    return _shape(key)


def _script_like(key: str) -> bool:
    """No installed listener's key and not ``<listener>/<host|proc|gpu<i>>/<quantity>``."""
    parts = key.split("/")
    shaped = len(parts) >= 3 and (parts[1] in ("host", "proc") or _GPU.fullmatch(parts[1]) is not None)
    return not shaped and _declared(parts[0]) is None


@cache
def _series_shape(key: str) -> Meaning:
    return _shape(key)


def _shape(key: str) -> Meaning:
    """A key no one declares, read as ``<listener>/<scope>/<quantity>_<unit>``."""
    unit = split_unit(key)[1]
    scope = derived_scope(key)
    return _meaning(key, scope, unit, derived_role(key), derived_label(key, scope), declared=False)


def _declared(listener: str) -> tuple[Series, ...] | None:
    """The series a registered listener declares (() for one that declares none or does not
    load: its keys are read from their shape); None for a name no package registers."""
    return series_of(listener)
