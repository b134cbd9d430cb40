"""radtrack's own process runs NumPy's BLAS on one thread (OpenBLAS would start, and spin,
one thread per core as MLflow's import loads it: 7.5 CPU-s of a 2-s run on a 64-core H200
host), while the script gets the thread variables the user gave, and none it did not
(radtrack/own_threads.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from radtrack import own_threads

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "show_threads_env.py"


def test_limit_sets_only_what_the_user_did_not_and_user_environ_takes_it_back() -> None:
    env = {"OMP_NUM_THREADS": "3", "PATH": "/bin"}
    own_threads.limit(env)
    assert env["OPENBLAS_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"
    assert env["OMP_NUM_THREADS"] == "3"  # the user's
    assert own_threads.user_environ(env) == {"OMP_NUM_THREADS": "3", "PATH": "/bin"}


def test_the_script_gets_the_users_thread_variables_and_none_of_radtracks(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in own_threads.VARS}
    env.update(OMP_NUM_THREADS="3", PYTHONUNBUFFERED="1", RADTRACK_HOME=str(tmp_path / ".radtrack"))
    p = subprocess.run([sys.executable, "-m", "radtrack", "-e", "threads", "-l", "none",
                        "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", str(SCRIPT)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "OMP_NUM_THREADS=3" in p.stdout, p.stdout
    assert "OPENBLAS_NUM_THREADS=-" in p.stdout and "MKL_NUM_THREADS=-" in p.stdout, p.stdout
