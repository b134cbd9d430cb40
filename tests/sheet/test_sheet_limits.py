"""radtrack/sheet/limits.py writes MLflow's limits out (no MLflow import at launch): they
must agree with the installed MLflow's own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from radtrack.sheet import limits


def test_limits_are_mlflows() -> None:
    from mlflow.store.tracking.dbmodels.models import SqlRun
    from mlflow.utils import validation

    assert limits.MAX_EXPERIMENT_NAME_LENGTH == validation.MAX_EXPERIMENT_NAME_LENGTH
    assert limits.MAX_ENTITY_KEY_LENGTH == validation.MAX_ENTITY_KEY_LENGTH
    assert limits.RUN_NAME_LENGTH == SqlRun.name.type.length
    assert limits.BAD_CHARACTER_MESSAGE == validation.bad_character_message()


@pytest.mark.parametrize("name", ["lr", "batch-size", "a/b", "x:y", "a b", "mix+up", "ü", "é1",
                                  "a\tb", "/abs", "../up", "a//b", "a/./b", ".", "semi;colon",
                                  "x" * 300, ""])
def test_name_rules_are_mlflows(name: str) -> None:
    from mlflow.utils import validation

    assert limits.valid_param_name(name) == bool(validation.validate_param_and_metric_name(name))
    assert limits.path_not_unique(name) == validation.path_not_unique(name)


def test_checking_a_sheet_does_not_import_mlflow() -> None:
    code = ("import sys; from radtrack.sheet import limits; "
            "limits.param_problems(['--lr', '1', '--mix+up', '2']); "
            "limits.run_name_problem('x' * 300, True); limits.experiment_name_problem('e'); "
            "print('mlflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
