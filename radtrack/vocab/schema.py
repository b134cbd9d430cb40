"""The store's layout, in one place: tag names, metric key families, artifact paths.

Writers (the launcher, the sink, the end-of-run steps) and readers (analysis, frontend,
report) import their names from here; docs/architecture.md's tables are checked against
this module (tests/store/test_schema_docs.py). Every string here is what is stored: renaming one
changes what a store holds and what older stores no longer match.

Metric keys as stored in MLflow and as radtrack's readers name them:

Listeners emit, and Parquet traces and summaries use, ``<listener>/<scope>/<quantity>_<unit>``
(``smi/gpu0/power_w``). Where those series are stored as MLflow metrics they carry MLflow's
``system/`` prefix (``system/smi/gpu0/power_w``), so MLflow's own run page files them under
"System metrics" instead of among the model's curves. Stores written before that hold the
bare form. Readers (analysis, frontend, report) call :func:`canonical_key` on every key they
read from MLflow and :func:`stored_keys` to find a series again, so both forms read alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SYSTEM_PREFIX = "system/"
SUMMARY_PREFIX = "summary/"

# -- tags (child runs unless noted; docs/architecture.md#tags-child-runs-unless-noted) ---
TAG_PREFIX = "radtrack."
ROLE = "radtrack.role"  # "workload" (parent) | "row" (child)
ROLE_WORKLOAD = "workload"
ROLE_ROW = "row"
EXPERIMENT = "radtrack.experiment"  # parent and child
WORKLOAD = "radtrack.workload"  # workload number, parent and child
LETTER = "radtrack.letter"
ROW = "radtrack.row"  # 1-based sheet line
SHEET = "radtrack.sheet"  # parent and child
DEVICES = "radtrack.devices"
COLLOCATION = "radtrack.collocation"
COLOCATED_WITH = "radtrack.colocated_with"
# the row's GPU entries another row of its workload may use too ("*": all, "": none: each
# co-located row on GPUs of its own, space-sharing); radtrack/device_entries.py shared_entries
SHARED_GPUS = "radtrack.shared_gpus"
EXIT_CODE = "radtrack.exit_code"
CLOCKS = "radtrack.clocks"
POWER_LIMIT = "radtrack.power_limit"
STOPPED_BY = "radtrack.stopped_by"  # max_epoch | max_time | signal | launcher_lost | slurm:<STATE>
STOPPED_BY_LAUNCHER_LOST = "launcher_lost"
# samples the spool could not write (its disk full): how many, between when and when; the
# metric is the running count over time (radtrack/store/diskfull.py)
SPOOL_DROPPED_TAG = "radtrack.spool.dropped"
SPOOL_DROPPED_KEY = "radtrack/spool_dropped_samples"
SLURM_JOB_ID = "radtrack.slurm.job_id"  # parent and child
SLURM_STATE = "radtrack.slurm.state"
SLURM_REASON = "radtrack.slurm.reason"
VERSION = "radtrack.version"
HOSTNAME = "radtrack.hostname"
GPU_NAMES = "radtrack.gpu.names"
GPU_UUIDS = "radtrack.gpu.uuids"
GPU_DRIVER = "radtrack.gpu.driver"
GPU_CUDA = "radtrack.gpu.cuda"
WORKLOAD_NOTE = "radtrack.workload.note"  # on the parent
SYNCED_END = "radtrack.synced_end"  # on the parent: when radtrack sync ran its end-of-workload step
MIG_UUID = "radtrack.mig_uuid"
MIG_PROFILE = "radtrack.mig_profile"
MIG_GPU_INSTANCE = "radtrack.mig_gpu_instance"
START_SKEW_MS = "radtrack.start_skew_ms"  # on the parent
ERROR = "radtrack.error"  # parent and child
CARBON_INTENSITY = "radtrack.carbon.intensity_g_per_kwh"
CARBON_SOURCE = "radtrack.carbon.source"
CARBON_PUE = "radtrack.carbon.pue"
LAUNCH_ID = "radtrack.launch_id"  # parent and child: one launch (one radtrack command)
MLFLOW_USER = "mlflow.user"  # MLflow's own tag (parent and child): who launched; sets the run's user
ROLE_SCRIPT = "script"  # a run the script made itself (docs/mlflow-code.md)
ROW_RUN = "radtrack.row_run"  # on a script's run: the row run that holds its row's record
ROW_TRACKING_URI = "radtrack.row_tracking_uri"  # on a script's run in another store
SCRIPT_RUNS = "radtrack.script_runs"  # on the row run: its script's run ids, comma-separated
SCRIPT_TRACKING_URI = "radtrack.script_tracking_uri"  # on the row run: their other store(s)
STATUS_NOTE = "radtrack.status_note"  # on a script's run whose status radtrack set
PARAM_TAG_PREFIX = TAG_PREFIX + "param."  # radtrack's value of a param the script set differently
SCRIPT_RANK = "radtrack.rank"  # on a script's run: $RANK of the process that made it (DDP, torchrun)
COPIED_FROM = "radtrack.copied_from"  # on a run radtrack copy made: the source run's id
COPIED_FROM_STORE = "radtrack.copied_from_store"  # ... and the source store (password redacted)
# tags whose values are run ids (comma-separated where several): radtrack copy rewrites them
RUN_ID_TAGS = ("mlflow.parentRunId", ROW_RUN, SCRIPT_RUNS)
PARAM_CUT_PREFIX = TAG_PREFIX + "param_cut."  # a param value longer than MLflow keeps: how, where
LISTENER_TAG_PREFIX = TAG_PREFIX + "listener."
ATTRIBUTION_TAG_PREFIX = TAG_PREFIX + "attribution."
SMI = "smi"  # the listener that writes gpu_tag; readers ask radtrack/vocab/device_identity.py


def listener_tag(name: str, *detail: str) -> str:
    """``radtrack.listener.<name>`` (its state), or ``radtrack.listener.<name>.<detail>...``."""
    return ".".join((LISTENER_TAG_PREFIX + name, *detail))


def gpu_tag(scope: str, fact: str) -> str:
    """The smi listener's probe fact of one GPU, ``radtrack.listener.smi.<scope>.<fact>`` (what it
    writes; readers find any listener's with radtrack/vocab/device_identity.py device_fact)."""
    return listener_tag(SMI, scope, fact)


def attribution_tag(scope: str, detail: str | None = None) -> str:
    """``radtrack.attribution.<scope>`` (the method) or ``radtrack.attribution.<scope>.<x>``."""
    tag = ATTRIBUTION_TAG_PREFIX + scope
    return tag if detail is None else f"{tag}.{detail}"


def stopped_by_slurm(state: str) -> str:
    """The ``radtrack.stopped_by`` value of a run whose SLURM job ended as ``state``."""
    return f"slurm:{state}"


# -- multi-node rows (radtrack/nodes/; docs/sheets.md#multi-node-rows) -------------------
# Node 0 (the master, whose launcher creates the run) keeps the bare keys, traces and tags
# of a one-node run; node K >= 1 has its series as ``node<K>/<key>`` (stored
# ``system/node<K>/<key>``, MLflow's own ``system/<node>/...`` form), its summaries as
# ``summary/node<K>/<key>/...``, its traces as ``telemetry/node<K>.<listener>.parquet``
# and its facts as ``radtrack.node<K>.<name>`` tags. :func:`split_node` reads any of them back.
NODES = "radtrack.nodes"  # on a multi-node row run: how many nodes it ran on
NODES_FAILED = "radtrack.nodes.failed"  # which node(s) did not finish, and why
NODE_PREFIX = "node"
NODES_SUMMARY_PREFIX = SUMMARY_PREFIX + "nodes/"  # totals over every node of the run
_NODE_SEGMENT = re.compile(r"node(\d+)")


def node_scope(node: int) -> str:
    """The key segment of node ``node``: ``node1``."""
    return f"{NODE_PREFIX}{int(node)}"


def node_tag(node: int | str, name: str) -> str:
    """A fact of one node of a multi-node run: ``radtrack.node<K>.<name>`` (``name`` without
    the ``radtrack.`` prefix: ``exit_code``, ``listener.top``, ``clock_offset_ms``)."""
    return f"{TAG_PREFIX}{NODE_PREFIX}{node}.{name.removeprefix(TAG_PREFIX)}"


def node_scoped(key: str, node: int) -> str:
    """``key`` of node ``node``: the node segment goes after a ``system/`` or ``summary/``
    prefix (``system/top/cpu_pct`` -> ``system/node1/top/cpu_pct``, ``top/cpu_pct`` ->
    ``node1/top/cpu_pct``)."""
    for prefix in (SYSTEM_PREFIX, SUMMARY_PREFIX):
        if key.startswith(prefix):
            return f"{prefix}{node_scope(node)}/{key[len(prefix):]}"
    return f"{node_scope(node)}/{key}"


def split_node(key: str) -> tuple[int | None, str]:
    """The node a key is scoped to and the key without it (:func:`node_scoped` reversed):
    ``system/node1/top/cpu_pct`` -> ``(1, "system/top/cpu_pct")``; ``(None, key)`` for a key
    of no node (node 0 of a multi-node run, every one-node run)."""
    for prefix in (SYSTEM_PREFIX, SUMMARY_PREFIX, ""):
        if not key.startswith(prefix):
            continue
        head, sep, rest = key[len(prefix):].partition("/")
        m = _NODE_SEGMENT.fullmatch(head)
        if m and sep and rest:
            return int(m.group(1)), prefix + rest
        if prefix:
            break  # a system/ or summary/ key is scoped right after its prefix, or not at all
    return None, key


def node_stream(listener: str, node: int) -> str:
    """Node ``node``'s spool stream and trace name of ``listener``: ``node1.top``
    (``telemetry/node1.top.parquet``); node 0 keeps the listener's own name."""
    return listener if not node else f"{node_scope(node)}.{listener}"


def trace_of(key: str) -> str:
    """The trace that holds a listener key: its listener's (``top`` for ``top/cpu_pct``), or
    node K's own (``node1.top`` for ``node1/top/cpu_pct``)."""
    node, own = split_node(key)
    return node_stream(own.split("/", 1)[0], node or 0)


def split_node_stream(name: str) -> tuple[int | None, str]:
    """A trace name read back: ``node1.top`` -> ``(1, "top")``, ``top`` -> ``(None, "top")``."""
    head, sep, rest = name.partition(".")
    m = _NODE_SEGMENT.fullmatch(head)
    return (int(m.group(1)), rest) if m and sep and rest else (None, name)


def node_summary_key(node: int, quantity: str) -> str:
    """A node's own figure on a multi-node run: ``summary/node<K>/<quantity>`` (``duration_s``,
    ``gpu_energy_j``), node 0 included."""
    return f"{SUMMARY_PREFIX}{node_scope(node)}/{quantity}"


def nodes_total_key(quantity: str) -> str:
    """A figure over every node of a multi-node run: ``summary/nodes/<quantity>``
    (``duration_s``: first start to last end; ``gpu_energy_j``; ``co2e_g``)."""
    return NODES_SUMMARY_PREFIX + quantity


# the documented tag patterns (docs/architecture.md), built by the helpers above
TAG_PATTERNS: tuple[str, ...] = (
    listener_tag("<name>"), listener_tag("<name>", "sampler"),
    listener_tag("<name>", "unsupported"), listener_tag("<name>", "<detail>"),
    attribution_tag("gpu<i>"), attribution_tag("gpu<i>", "gpu"),
    attribution_tag("gpu<i>", "note"), attribution_tag("gpu<i>", "uuid"),
    PARAM_TAG_PREFIX + "<name>", node_tag("<k>", "<name>"))
TAG_PATTERNS += (PARAM_CUT_PREFIX + "<name>",)


def param_cut_tag(name: str) -> str:
    """``radtrack.param_cut.<name>``: param ``name`` was longer than MLflow keeps."""
    return PARAM_CUT_PREFIX + name


# -- metric keys (besides the listeners' own <listener>/<scope>/<quantity>_<unit>) ---------
DURATION_KEY = SUMMARY_PREFIX + "duration_s"  # the run's wall time
CO2E_KEY = SUMMARY_PREFIX + "co2e_g"  # the run's footprint (radtrack/postrun/footprint.py)
ATTRIBUTION_PREFIX = "attribution/"  # co-location series (stored under system/)
SUMMARY_ATTRIBUTION_PREFIX = SUMMARY_PREFIX + ATTRIBUTION_PREFIX
SUMMARY_WORKLOAD_PREFIX = SUMMARY_PREFIX + "workload/"  # on the parent
WINDOW_PREFIX = "window/"  # code windows (radtrack/postrun/window_energy.py)
# energy error bars (radtrack/compute/energy_error.py): next to every energy figure <key>,
# <key>_ci95_pct (half-width of its 95 % interval, % of the figure) and <key>_ci95_flag
# (0: within the threshold; 1: wider, bursty load near the sensor's period; 2: wider, window too short;
# 3: an attributed energy whose split is assumed, split-assumed)
CI95_SUFFIX = "_ci95_pct"
CI95_FLAG_SUFFIX = "_ci95_flag"
CI95_FLAGS = {0: "", 1: "bursty load near the sensor's period", 2: "window too short",
              # an attributed energy split by a rule with no validated bound
              # (radtrack/compute/split_model.py): its interval is the worst deviation measured
              3: "split-assumed: no solo baseline with a logged throughput for every run on the GPU; "
                 "run each script solo in this experiment (same Params) to get the solo-model split",
              # a solo-model split whose workload drew > 5 % more or less than its runs solo
              # for the same work (radtrack/compute/split_model.py): the interval includes it
              4: "co-location-change: co-located, the GPU's energy per unit of work changed by more "
                 "than 5 % against the runs solo; the solo-model shares the change in proportion, "
                 "which is not measured: the interval includes it"}
# the activity model's energy, next to the counter's (radtrack/compute/activity_power.py)
ENERGY_MODEL_PREFIX = SUMMARY_PREFIX + "energy_model/"
ACTIVITY_ENERGY = "activity_energy_j"
# what watching a row cost (radtrack/run/cost.py): per listener and for the row
MONITORING_PREFIX = SUMMARY_PREFIX + "monitoring/"
MONITORING_LISTENERS_CPU = MONITORING_PREFIX + "listeners_cpu_s"  # their processes' CPU
MONITORING_STORE_CPU = MONITORING_PREFIX + "store_cpu_s"  # the launcher's intake + shipping
MONITORING_CPU_PCT = MONITORING_PREFIX + "cpu_pct"  # both over the run's duration, % of a core
# the launcher process's whole CPU over the row's span (its MLflow import, run creation and
# storing included, for every row of the workload it ran): what the host's CPU holds of
# radtrack's own besides the listeners
MONITORING_LAUNCHER_CPU = MONITORING_PREFIX + "launcher_cpu_s"
MONITORING_POINTS = MONITORING_PREFIX + "points"  # listener metric points stored
MONITORING_SPOOL_BYTES = MONITORING_PREFIX + "spool_bytes"  # the listeners' lines as received
MONITORING_MISSED = MONITORING_PREFIX + "missed"  # sampling deadlines skipped, all listeners


def monitoring_key(listener: str, quantity: str) -> str:
    """A listener's cost on a row run: ``summary/monitoring/<listener>/<quantity>``
    (``cpu_s``, ``samples``, ``missed``)."""
    return f"{MONITORING_PREFIX}{listener}/{quantity}"


# summary/<key>/<stat> of a listener series over the run's span (radtrack/store/traces.py):
# its time-weighted mean, min, max and, as READINGS_STAT, how many readings the listener
# took inside the span (the span's two end points not counted: radtrack/store/spans.py)
READINGS_STAT = "n"


def summary_key(key: str, stat: str | None = None) -> str:
    """``summary/<key>`` (a total, e.g. an energy counter's delta) or ``summary/<key>/<stat>``."""
    return f"{SUMMARY_PREFIX}{key}" if stat is None else f"{SUMMARY_PREFIX}{key}/{stat}"


#: a power rail's energy over the run's span: ``summary/<rail>/energy_j``, ``<rail>`` its key
#: without the unit (tegrastats/power/vdd_gpu_soc_mw -> tegrastats/power/vdd_gpu_soc;
#: rapl/pkg0/core/energy_j and .../power_w -> rapl/pkg0/core: radtrack/vocab/energy_sources.py
#: rail_energies); a part of its device's energy, never added to it nor to the run's
RAIL_ENERGY = "energy_j"


def rail_energy_key(rail: str) -> str:
    """A rail's energy over the run: ``summary/tegrastats/power/vdd_gpu_soc/energy_j``."""
    return f"{SUMMARY_PREFIX}{rail}/{RAIL_ENERGY}"


def attribution_key(scope: str, quantity: str) -> str:
    """A co-location series, bare (stored via :func:`stored_key`): ``attribution/<scope>/<q>``."""
    return f"{ATTRIBUTION_PREFIX}{scope}/{quantity}"


def attribution_summary_key(scope: str, quantity: str) -> str:
    """A run's co-location total on one GPU: ``summary/attribution/<scope>/<quantity>``."""
    return f"{SUMMARY_ATTRIBUTION_PREFIX}{scope}/{quantity}"


def workload_key(*parts: str) -> str:
    """A workload total on the parent: ``summary/workload/<part>/...`` (``gpu0/idle_energy_j``)."""
    return SUMMARY_WORKLOAD_PREFIX + "/".join(parts)


def window_key(name: str, quantity: str) -> str:
    """A code window's figure: ``window/<name>/<quantity>`` (``window/warmup/energy_j``)."""
    return f"{WINDOW_PREFIX}{name}/{quantity}"


def ci_key(key: str) -> str:
    """The 95 % interval of an energy figure: ``summary/smi/gpu0/energy_j_ci95_pct``."""
    return key + CI95_SUFFIX


def ci_flag_key(key: str) -> str:
    """Why an energy figure's interval is over the threshold (CI95_FLAGS): ``<key>_ci95_flag``."""
    return key + CI95_FLAG_SUFFIX


def energy_model_key(scope: str) -> str:
    """The activity model's energy of one GPU over the run:
    ``summary/energy_model/<scope>/activity_energy_j`` (an estimate next to the counter's)."""
    return f"{ENERGY_MODEL_PREFIX}{scope}/{ACTIVITY_ENERGY}"


def stored_key(key: str) -> str:
    """The MLflow metric key of a listener series: ``smi/gpu0/power_w`` -> ``system/smi/...``."""
    return key if key.startswith(SYSTEM_PREFIX) else SYSTEM_PREFIX + key


def canonical_key(key: str) -> str:
    """The reader's name of a stored key: ``system/smi/gpu0/power_w`` -> ``smi/gpu0/power_w``.

    Only a prefixed ``<listener>/...`` key loses the prefix; MLflow's own system metrics
    (``system/cpu_utilization_percentage``, no second '/') and every other key stay as they are.
    """
    if key.startswith(SYSTEM_PREFIX) and "/" in key[len(SYSTEM_PREFIX):]:
        return key[len(SYSTEM_PREFIX):]
    return key


def stored_keys(keys: Iterable[str]) -> dict[str, str]:
    """Canonical key -> the key as stored, for a run's stored metric keys; where a store holds
    both forms of one series (never written so by radtrack), the ``system/`` one wins."""
    out: dict[str, str] = {}
    for key in keys:
        name = canonical_key(key)
        if name not in out or key.startswith(SYSTEM_PREFIX):
            out[name] = key
    return out


# -- artifact paths (inside a run's artifact root; child runs unless noted) -------------
TELEMETRY_DIR = "telemetry"  # <listener>.parquet trace + <listener>.json probe
TRACE_SUFFIX = ".parquet"
PROBE_SUFFIX = ".json"
LOGS_DIR = "logs"
LOG_FILE = "output.log"
LOG_ARTIFACT = f"{LOGS_DIR}/{LOG_FILE}"
ENVIRONMENT_DIR = "environment"
PIP_FREEZE_FILE = "pip-freeze.txt"
PLATFORM_FILE = "platform.json"
NVIDIA_SMI_FILE = "nvidia-smi-q.txt"
CONDA_LIST_FILE = "conda-list.txt"
PROFILES_DIR = "profiles"  # nsys / ncu reports
PLACEMENT_DIR = "placement"  # on the parent: placement logs (MPS control logs)
POWER_ARTIFACT = "attribution/power.parquet"  # on the parent
WINDOWS_ARTIFACT = "windows/windows.parquet"  # code windows, out of telemetry/
PARAMS_DIR = "params"  # the whole value of a param longer than MLflow keeps: params/<name>.txt


def trace_artifact(listener: str) -> str:
    """A listener's full-resolution trace: ``telemetry/<listener>.parquet``."""
    return f"{TELEMETRY_DIR}/{listener}{TRACE_SUFFIX}"


def probe_artifact(listener: str) -> str:
    """A listener's probe (metric specs, tags): ``telemetry/<listener>.json``."""
    return f"{TELEMETRY_DIR}/{listener}{PROBE_SUFFIX}"


def environment_artifact(file: str) -> str:
    """One file of the environment capture: ``environment/<file>``."""
    return f"{ENVIRONMENT_DIR}/{file}"


# every documented artifact (docs/architecture.md; a folder ends in '/')
ARTIFACTS: tuple[str, ...] = (
    LOG_ARTIFACT, trace_artifact("<listener>"), probe_artifact("<listener>"),
    *(environment_artifact(f)
      for f in (PIP_FREEZE_FILE, PLATFORM_FILE, NVIDIA_SMI_FILE, CONDA_LIST_FILE)),
    PROFILES_DIR + "/", PLACEMENT_DIR + "/", WINDOWS_ARTIFACT, POWER_ARTIFACT,
    PARAMS_DIR + "/<name>.txt")


def documented_tags() -> set[str]:
    """Every tag name defined here: the ``radtrack.*`` constants and :data:`TAG_PATTERNS`."""
    names = {v for k, v in globals().items() if k.isupper() and isinstance(v, str)
             and v.startswith(TAG_PREFIX) and not v.endswith(".")}
    return names | set(TAG_PATTERNS)
