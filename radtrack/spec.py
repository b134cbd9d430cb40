"""RunSpec: one typed row of an experiment sheet (a single-run launch is a one-row sheet)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_INTERVAL = 1.0


def sharing_text(collocation: str, others: int, uses_gpu: bool | None,
                 gpu_shared: bool | None = None) -> str:
    """What a row shared, in the words the page, the report and the launcher use: ``solo``,
    ``GPU time-slicing with 2``, ``own GPU, host shared with 3``, ``CPU only, shared with 1``,
    ``MPS 50 % with 1``, ``MPS``, ``MIG slice 3g.40gb``. ``collocation`` is the sheet's cell
    (``-``, ``mps``, ``mps:<pct>``, a MIG profile); ``others``: how many other rows ran beside
    it; ``uses_gpu``: whether its processes used a GPU (None: not known, e.g. no per-process
    GPU readings); ``gpu_shared``: whether another row could use its GPUs (False: every row
    on GPUs of its own, space-sharing; None: not known). A plain row shares the host's CPUs
    with its partners in any case, and a GPU only where it used one another row had too."""
    c = collocation.strip()
    with_n = f" with {others}" if others else ""
    kind = c.lower()
    if kind == "mps" or kind.startswith("mps:"):
        share = f" {c.split(':', 1)[1].strip()} %" if ":" in c else ""
        return f"MPS{share}{with_n}"
    if kind not in ("", "-"):
        return f"MIG slice {c}"
    if not others:
        return "solo"
    if uses_gpu is None:
        return f"co-located with {others}"
    if uses_gpu and gpu_shared is False:
        return f"own GPU, host shared with {others}"
    return f"GPU time-slicing with {others}" if uses_gpu else f"CPU only, shared with {others}"


@dataclass
class RunSpec:
    """Everything needed to launch and record one run (one sheet row)."""

    experiment: str
    workload: int
    file: Path
    args: list[str] = field(default_factory=list)  # passed to the script verbatim
    devices: list[str] = field(default_factory=list)  # "0", "GPU-<uuid>", ... ; [] = not set
    collocation: str = "-"  # "-" plain, "mps", "mps:<pct>", or a MIG profile such as "1g.10gb"
    listeners: list[str] | None = None  # None = every listener available on this host
    interval: float = DEFAULT_INTERVAL
    max_epoch: int | None = None
    max_time: float | None = None  # minutes
    manual: bool = False
    env: dict[str, str] = field(default_factory=dict)
    clocks: str | None = None  # "1410" or "1200,1980" (MHz) for DVFS studies
    power_limit: float | None = None  # watts
    run_name: str | None = None
    carbon_intensity: float | None = None  # g CO2e/kWh (radtrack/postrun/footprint.py)
    pue: float | None = None
    carbon_source: str = ""  # where carbon_intensity came from: "sheet", "--carbon-intensity"
    letter: str = "A"
    row: int | None = None  # 1-based line number in the sheet, None for CLI launches
    row_key: str = ""  # the row's cells as read, bar Status/Run/Job (radtrack/sheet/rowmatch.py)
    sheet: Path | None = None
    status: str = ""  # as read from the sheet's Status column
    run_id: str = ""  # as read from the sheet's Run column
    # the executor's own options for this row (a SLURM job's partition, ...): key -> value
    # as that executor takes it; declared and read only by the executor
    # (radtrack/executor_contract.py RowOption); empty = none set
    executor_options: dict[str, str] = field(default_factory=dict)
    job: str = ""  # as read from the sheet's Job column ("<job id> <state>")
    nodes: int = 1  # nodes the row's script runs on, one task each (radtrack/nodes/)

    @property
    def collocation_kind(self) -> str:
        """"plain", "mps" or "mig": how placement shares a GPU (what a co-located row
        shared, in words, GPU time-slicing or the CPUs only, is :func:`sharing_text`'s)."""
        c = self.collocation.strip().lower()
        if c in ("", "-"):
            return "plain"
        if c == "mps" or c.startswith("mps:"):
            return "mps"
        return "mig"

    @property
    def mps_percentage(self) -> int | None:
        c = self.collocation.strip().lower()
        if c.startswith("mps:"):
            return int(c.split(":", 1)[1])
        return None

    def default_run_name(self) -> str:
        return f"{self.experiment}-{self.workload} {self.letter}"
