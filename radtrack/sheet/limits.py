"""MLflow's own limits on names and params, checked before any run exists.

The limits and name rules are read from the installed MLflow (mlflow.utils.validation and
its database schema), so a row is refused up front exactly when MLflow would refuse it
after the runs were created.
"""

from __future__ import annotations

from functools import cache

from radtrack.script.params import parse_script_args


@cache
def run_name_limit() -> int:
    """The longest run name MLflow's store keeps (its ``runs.name`` column)."""
    try:
        from mlflow.store.tracking.dbmodels.models import SqlRun

        return int(SqlRun.name.type.length)
    except Exception:  # another MLflow layout: its key limit, the same 250 today
        from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH

        return int(MAX_ENTITY_KEY_LENGTH)


def experiment_name_problem(name: str) -> str | None:
    from mlflow.utils.validation import MAX_EXPERIMENT_NAME_LENGTH

    if len(name) > MAX_EXPERIMENT_NAME_LENGTH:
        return (f"{len(name)} characters; MLflow accepts experiment names of at most "
                f"{MAX_EXPERIMENT_NAME_LENGTH} characters")
    return None


def run_name_problem(name: str, default: bool) -> str | None:
    limit = run_name_limit()
    if len(name) <= limit:
        return None
    if default:
        return (f"the run name radtrack gives this row ({name[:40]!r}..., from Experiment and "
                f"Workload) is {len(name)} characters; MLflow keeps run names of at most "
                f"{limit}: shorten the Experiment or give a shorter RunName")
    return f"{len(name)} characters; MLflow keeps run names of at most {limit} characters"


def param_problems(args: list[str]) -> list[str]:
    """Why MLflow would refuse a param radtrack makes from the script's arguments (each
    ``--name value`` becomes param ``name``; docs/cli.md), one message per param."""
    from mlflow.utils.validation import (
        MAX_ENTITY_KEY_LENGTH,
        bad_character_message,
        path_not_unique,
        validate_param_and_metric_name,
    )

    out = []
    for key in parse_script_args(args):
        if not validate_param_and_metric_name(key):
            out.append(f"{key!r} would be an MLflow param name, which MLflow refuses: "
                       f"{bad_character_message()} Rename the option, or pass it as "
                       "--name=value with an accepted name")
        elif path_not_unique(key):
            out.append(f"{key!r} would be an MLflow param name, which MLflow refuses: it must "
                       "not start with '/' or '..' nor hold '//', '/./' or '/../' (names may be "
                       "treated as file paths)")
        elif len(key) > MAX_ENTITY_KEY_LENGTH:
            out.append(f"the param name {key[:40]!r}... is {len(key)} characters; MLflow "
                       f"accepts param names of at most {MAX_ENTITY_KEY_LENGTH}")
    return out
