"""One store handle: the writing side makes every MLflow client through radtrack/store/handle.py
and radtrack/store/mlflow_client.py, and only the latter changes the process environment
for the store."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HANDLE = ROOT / "radtrack" / "store" / "mlflow_client.py"
#: the writing side: every MLflow client it makes comes from the handle
WRITERS = ("run", "store", "postrun", "executors", "nodes", "sheet", "script")
#: modules besides the handle that set MLflow's variables: none (the page's request limits
#: and the report's quiet downloads are the handle's too: bound_requests, quiet_downloads)
READER_ENV: set[str] = set()


def _mlflow_env_writes(tree: ast.AST) -> list[str]:
    """``os.environ.setdefault("MLFLOW_...", ...)`` and ``os.environ["MLFLOW_..."] = ...``."""
    found = []
    for node in ast.walk(tree):
        key = None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("setdefault", "update", "__setitem__")
                and ast.unparse(node.func.value) == "os.environ" and node.args):
            key = node.args[0]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "os.environ":
                    key = target.slice
        if isinstance(key, ast.Constant) and str(key.value).startswith("MLFLOW_"):
            found.append(f"line {node.lineno}: {key.value}")
    return found


def test_only_the_handle_changes_the_environment_for_the_store() -> None:
    offenders = {}
    for path in sorted((ROOT / "radtrack").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if path == HANDLE or rel in READER_ENV:
            continue
        writes = _mlflow_env_writes(ast.parse(path.read_text(), str(path)))
        if writes:
            offenders[rel] = writes
    assert offenders == {}
    assert _mlflow_env_writes(ast.parse(HANDLE.read_text()))  # the check sees the handle's own


def test_the_writing_side_makes_its_mlflow_clients_through_the_handle() -> None:
    offenders = []
    for package in WRITERS:
        for path in sorted((ROOT / "radtrack" / package).rglob("*.py")):
            if path == HANDLE:
                continue
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("MlflowClient"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_the_launcher_s_short_retries_leave_the_scripts_and_the_user_s_values_alone(
        tmp_path: Path) -> None:
    """The handle's MLflow client sets short HTTP retries for this process, where the user
    set none; a script's process gets the user's values, else the long ones."""
    code = (
        "import json, os, sys\n"
        "from radtrack.store import mlflow_client as handle\n"
        "before = {k: os.environ.get(k) for k in handle.HTTP_RETRY_ENV}\n"
        "handle.mlflow_client(sys.argv[1])\n"
        "print(json.dumps({'before': before, 'after': {k: os.environ.get(k) for k in "
        "handle.HTTP_RETRY_ENV}, 'script': handle.script_http_env()}))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_HTTP_REQUEST")}
    env["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "7"  # the user's own
    env["RADTRACK_HOME"] = str(tmp_path / "home")
    p = subprocess.run([sys.executable, "-c", code, f"sqlite:///{tmp_path / 'mlflow.db'}"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    assert seen["before"]["MLFLOW_HTTP_REQUEST_TIMEOUT"] is None  # importing it changes nothing
    assert seen["after"]["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "7"  # the user's value wins
    assert seen["after"]["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "20"  # the launcher's short one
    assert seen["script"] == {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "7",
                              "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "2",
                              "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "1",
                              "MLFLOW_HTTP_REQUEST_TIMEOUT": "120"}
