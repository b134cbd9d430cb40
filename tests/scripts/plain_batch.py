"""Run several scripts as plain programs, one after the other, in this one interpreter.

``python plain_batch.py JOBS.json``: JOBS is a list of ``{"script", "args", "out"}``; each
script runs as ``python SCRIPT ARGS`` would run it (``__main__``, its folder first on
``sys.path``, ``sys.argv`` = [SCRIPT, *ARGS]), its stdout and stderr written to
``OUT.stdout`` / ``OUT.stderr`` and its exit status to ``OUT.code``: 0, a ``SystemExit``'s
code, or 1 with the traceback written to its stderr as Python prints it. The workloads
import torch (and transformers) for 2-5 CPU-s each: one interpreter pays that once for
every script of tests/workloads/test_workloads.py's plain-program layer.
"""

import contextlib
import io
import json
import os
import runpy
import sys
import traceback


def run_one(script: str, args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv, path = sys.argv, list(sys.path)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if exc.code is not None and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)  # sys.exit("message"), as Python does
            except BaseException:  # noqa: BLE001 - reported as Python would, then the next one
                traceback.print_exc()
                code = 1
    finally:
        sys.argv, sys.path[:] = argv, path
    return code, out.getvalue(), err.getvalue()


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        jobs = json.load(f)
    for job in jobs:
        code, out, err = run_one(job["script"], job["args"])
        for suffix, text in (("stdout", out), ("stderr", err), ("code", str(code))):
            with open(f"{job['out']}.{suffix}", "w", encoding="utf-8") as f:
                f.write(text)


if __name__ == "__main__":
    main()
