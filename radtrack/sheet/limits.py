"""MLflow's own limits on names and params, checked before any run exists.

The limits and name rules are MLflow's (``mlflow.utils.validation`` and its database
schema), written out here so that checking a sheet does not import MLflow: that import
alone takes 2-4 s, and the script must start well under a second after ``radtrack`` is
invoked (docs/performance.md). tests/sheet/test_sheet_limits.py checks every value and rule
here against the installed MLflow, so a row is refused up front exactly when MLflow would
refuse it after the runs were created.
"""

from __future__ import annotations

import posixpath
import re

from radtrack.script.params import parse_script_args

MAX_EXPERIMENT_NAME_LENGTH = 500  # mlflow.utils.validation.MAX_EXPERIMENT_NAME_LENGTH
MAX_ENTITY_KEY_LENGTH = 250  # mlflow.utils.validation.MAX_ENTITY_KEY_LENGTH (param names)
RUN_NAME_LENGTH = 250  # the length of MLflow's runs.name column (SqlRun.name)
_NAME_CHARS = re.compile(r"^[/\w.\- :]*$")  # validate_param_and_metric_name (POSIX)
BAD_CHARACTER_MESSAGE = ("Names may only contain alphanumerics, underscores (_), dashes (-), "
                         "periods (.), spaces ( ), colon(:) and slashes (/).")


def run_name_limit() -> int:
    """The longest run name MLflow's store keeps (its ``runs.name`` column)."""
    return RUN_NAME_LENGTH


def valid_param_name(name: str) -> bool:
    """MLflow's character rule for param and metric names."""
    return _NAME_CHARS.match(name) is not None


def path_not_unique(name: str) -> bool:
    """MLflow's rule against names that would not be unique as file paths."""
    norm = posixpath.normpath(name)
    return norm != str(name) or norm == "." or norm.startswith("..") or norm.startswith("/")


def experiment_name_problem(name: str) -> str | None:
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
    out = []
    for key in parse_script_args(args):
        if not valid_param_name(key):
            out.append(f"{key!r} would be an MLflow param name, which MLflow refuses: "
                       f"{BAD_CHARACTER_MESSAGE} Rename the option, or pass it as "
                       "--name=value with an accepted name")
        elif path_not_unique(key):
            out.append(f"{key!r} would be an MLflow param name, which MLflow refuses: it must "
                       "not start with '/' or '..' nor hold '//', '/./' or '/../' (names may be "
                       "treated as file paths)")
        elif len(key) > MAX_ENTITY_KEY_LENGTH:
            out.append(f"the param name {key[:40]!r}... is {len(key)} characters; MLflow "
                       f"accepts param names of at most {MAX_ENTITY_KEY_LENGTH}")
    return out
