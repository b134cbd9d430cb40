"""The modules a workload's end needs, imported while its scripts still run.

A row's end (radtrack/run/row_end.py, radtrack/postrun/workload_end.py) builds each
listener's trace and figures with pandas and pyarrow and runs the accounting: importing
them took about 0.6 s of the end on a 2-core VM (py-spy and benchmarks/phase_profile.py,
issue 47). The run-creating thread (radtrack/run/record.py) imports them once the runs
exist, while the scripts run: the launcher's CPU over the row's span grows by that import
(``summary/monitoring/launcher_cpu_s``), and the command returns that much sooner after the
scripts end. The end joins that thread before it starts (``Recorder.wait``), so no module
is imported by two threads at once. None of these imports MLflow (tests/run/test_light_store.py).
"""

from __future__ import annotations

import importlib

END_MODULES = (
    "pandas",
    "pyarrow.parquet",  # DataFrame.to_parquet's engine, imported by pandas on first use
    "pyarrow.pandas_compat",
    "radtrack.store.spans",
    "radtrack.store.traces",
    "radtrack.store.row_run_close",
    "radtrack.compute.energy_figures",
    "radtrack.postrun.accounting",
    "radtrack.postrun.window_energy",
    "radtrack.postrun.footprint",
    "radtrack.postrun.script_runs",
    "radtrack.postrun.long_params",
    "radtrack.postrun.unbound",
)


def import_end_modules() -> None:
    """Import END_MODULES; one that fails is left for the end to report where it is used."""
    for name in END_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the end imports it again and says what failed
            continue
