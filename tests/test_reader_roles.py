"""Readers select series by declared role, never by listener name (issue 40).

Every string in the code of the reader side (radtrack/analysis, radtrack/postrun,
radtrack/export.py, radtrack/frontend/*.py; docstrings excepted) is checked for the names of the
two GPU listeners, ``smi`` and ``dcgm``: a pattern such as ``(?:smi|dcgm)/gpu\\d+/...``, a
key ``smi/gpu0/power_w`` or a frame looked up by ``frames.get("smi")`` would make a reader
blind to any other power source (a Jetson's board, RAPL, a plugin). ``ALLOWED`` names the
places where a listener's own name is displayed or is the subject, with the reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READERS = [*sorted((ROOT / "radtrack" / "analysis").rglob("*.py")),
           *sorted((ROOT / "radtrack" / "compute").rglob("*.py")),
           *sorted((ROOT / "radtrack" / "postrun").rglob("*.py")),
           ROOT / "radtrack" / "export.py", *sorted((ROOT / "radtrack" / "frontend").glob("*.py"))]
NAME = re.compile(r"(?<![\w-])(?:smi|dcgm)(?![\w-])")
#: file (relative to the repository) -> why a listener's name may appear in its code
ALLOWED = {
    "radtrack/frontend/callbacks_chart.py": "the metric picker's group order: listener names displayed",
    "radtrack/frontend/columns.py": "the columns' help says which listener a blank energy cell lacked",
    "radtrack/frontend/layout.py": "the metric search's placeholder shows a listener prefix",
    "radtrack/frontend/shares.py": "the note says which listener a workload without accounting lacked",
    "radtrack/compute/result_checks.py": "issue 38's checks name the smi listener in their "
                                          "advice (its state tag); their series go by role",
    "radtrack/analysis/studies/utilisation.py": "the note says which listeners give the levels",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def listener_names(path: Path) -> list[str]:
    """``path:line: text`` for each code string naming smi or dcgm."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
                and NAME.search(node.value)):
            out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:80]!r}")
    return out


def test_no_reader_knows_a_listener_by_name() -> None:
    found = [hit for path in READERS if str(path.relative_to(ROOT)) not in ALLOWED
             for hit in listener_names(path)]
    assert found == [], "select by role (radtrack/vocab/energy_sources.py), not by name:\n" + "\n".join(found)


def test_every_allowed_file_still_names_a_listener() -> None:
    for name in ALLOWED:
        assert listener_names(ROOT / name), f"{name} no longer names a listener: drop it from ALLOWED"


def test_the_check_finds_a_pattern_a_key_and_a_frame(tmp_path: Path) -> None:
    global ROOT
    code = tmp_path / "reader.py"
    code.write_text('"""Reads smi/gpu0/power_w (docstring: fine)."""\n'
                    'P = r"(?:smi|dcgm)/gpu\\d+/power_w"\n'
                    'def f(frames, s):\n    return frames.get("smi"), f"smi/{s}/energy_j", "nvidia-smi"\n')
    saved, ROOT = ROOT, tmp_path
    try:
        hits = listener_names(code)
    finally:
        ROOT = saved
    assert [h.split(":")[1] for h in hits] == ["2", "4", "4"]


def test_a_script_runs_own_metrics_are_those_no_listener_declares() -> None:
    """A script run's view keeps the script's metrics and leaves out every listener's series,
    a node's, a Jetson's or RAPL's as well as the GPU listeners' (declared, not by name)."""
    import pandas as pd

    from radtrack.analysis.script_runs import own_metric_columns

    columns = ["run_id", "metric.loss", "metric.val_acc", "metric.train/throughput",
               "metric.smi/gpu0/power_w", "metric.node1/top/cpu_pct", "metric.summary/duration_s",
               "metric.tegrastats/power/rails_sum_mw", "metric.rapl/package0/energy_j",
               "metric.iostat/sda/read_bytes_per_s", "metric.window/epoch/energy_j"]
    assert own_metric_columns(pd.DataFrame(columns=columns)) == [
        "metric.loss", "metric.val_acc", "metric.train/throughput"]


def test_no_reader_finds_a_device_by_one_listeners_tags() -> None:
    """A device's identity comes from whichever listener described it
    (radtrack/vocab/device_identity.py), never from smi's probe tags by name."""
    found = [f"{path.relative_to(ROOT)}: {name}" for path in READERS
             for name in ("gpu_tag", "schema.SMI", "listener_tag(schema.SMI")
             if name in path.read_text()]
    assert found == [], "read device facts with device_identity.device_fact:\n" + "\n".join(found)
