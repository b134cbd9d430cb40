"""Param values longer than MLflow keeps, on every path (docs/mlflow-code.md, "Params").

MLflow keeps at most 6,000 characters of a param value (radtrack/script/params.py). A longer
value, from the command line or a sheet's Params (the row run), ``RADTBenchmark.log_param``
or the script's own ``mlflow.log_param``/``log_params`` in any process of its tree, is
stored cut to that limit, as MLflow itself stores it, and its whole value was kept in the row
folder (radtrack/script/run_events.py ``keep_param``). After the row, each run that got one
gets the whole value as its artifact ``params/<name>.txt`` and the tag
``radtrack.param_cut.<name>`` (how long it was, where the whole value is), and the launcher
says it in one line per row.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack.script.params import MAX_PARAM_LEN
from radtrack.script.run_events import ParamCut, read_param_cuts
from radtrack.store.tracking import set_tags
from radtrack.vocab import schema

if TYPE_CHECKING:
    from radtrack.postrun.end_inputs import EndRow as Row

ARTIFACT_DIR = schema.PARAMS_DIR
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\- ]")


def artifact_name(key: str) -> str:
    """The file a param's whole value is stored as, under ``params/``."""
    return (_UNSAFE.sub("_", key).strip(". ") or "param") + ".txt"


def store_long_params(row: Row, client_for: Callable[[str], Any], names: dict[str, str],
                      say: Callable[[str], None]) -> list[ParamCut]:
    """Store every over-long param value of the row's runs; ``client_for(run_id)`` is the
    client of the run's store, ``names`` run id -> name for the line. Returns those stored."""
    cuts = read_param_cuts(row.folder / "mlflow-runs.jsonl")
    done: list[ParamCut] = []
    parts: list[str] = []
    for cut in cuts:
        run_id = cut.run_id or row.run_id
        where = f"{ARTIFACT_DIR}/{artifact_name(cut.key)}"
        kept = bool(cut.file) and Path(cut.file).is_file()
        note = (f"{cut.chars} characters, stored cut to MLflow's {MAX_PARAM_LEN}; the whole "
                f"value: artifact {where}" if kept else
                f"{cut.chars} characters, stored cut to MLflow's {MAX_PARAM_LEN}; the whole "
                "value could not be kept (disk full)")
        try:
            c = client_for(run_id)
            if kept:
                with tempfile.TemporaryDirectory() as tmp:
                    copy = Path(tmp) / artifact_name(cut.key)
                    shutil.copyfile(cut.file, copy)
                    c.log_artifact(run_id, str(copy), ARTIFACT_DIR)
            set_tags(c, run_id, {schema.param_cut_tag(cut.key): note})
        except Exception as exc:  # noqa: BLE001 - the cut value is stored regardless
            parts.append(f"{cut.key} ({cut.chars} characters, run {names.get(run_id, run_id)}: "
                         f"whole value not stored: {type(exc).__name__}: {exc})"[:300])
            continue
        done.append(cut)
        parts.append(f"{cut.key} ({cut.chars} characters, run {names.get(run_id, run_id)}"
                     f"{': ' + where if kept else ''})")
    if parts:
        say(f"{row.spec.letter}: {len(parts)} param value(s) longer than MLflow's {MAX_PARAM_LEN} "
            f"characters stored cut to {MAX_PARAM_LEN}, the whole value as an artifact: "
            + "; ".join(parts))
    return done
