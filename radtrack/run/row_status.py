"""A row's MLflow status from how its script ended: one rule for the launcher, the
start's early failures and radtrack sync."""

from __future__ import annotations


def decide_status(stopped_by: str, exit_code: int | None) -> str:
    """FINISHED, FAILED or KILLED: the script's exit code decides, unless radtrack stopped it
    (a signal to the launcher: KILLED; its MaxTime: FINISHED)."""
    if stopped_by == "signal":
        return "KILLED"
    if stopped_by == "max_time" or exit_code == 0:
        return "FINISHED"
    if exit_code is not None and exit_code < 0:
        return "KILLED"
    return "FAILED"
