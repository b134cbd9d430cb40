"""Turn a script's command-line arguments into MLflow params."""

from __future__ import annotations

import shlex

MAX_PARAM_LEN = 6000  # MLflow's limit on a param value (mlflow.utils.validation)


def over_long(params: dict[str, str]) -> dict[str, str]:
    """The params whose value is longer than MLflow keeps: stored cut to :data:`MAX_PARAM_LEN`
    characters, their whole value kept as the run's artifact ``params/<name>.txt``, with a
    ``radtrack.param_cut.<name>`` tag and one line (docs/mlflow-code.md, "Params")."""
    return {k: v for k, v in params.items() if len(v) > MAX_PARAM_LEN}


def parse_script_args(args: list[str], cut: bool = True) -> dict[str, str]:
    """``--batch-size 128`` -> batch-size=128, ``--flag`` -> true, ``--lr=0.1`` -> lr=0.1,
    ``-n 3`` -> n=3; positionals are joined (shell-quoted) into ``args``. Values are cut to
    :data:`MAX_PARAM_LEN` (``cut=False``: whole, to find the :func:`over_long` ones)."""
    limit = MAX_PARAM_LEN if cut else None
    params: dict[str, str] = {}
    positionals: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and len(a) > 1 and not _is_number(a):
            name = a.lstrip("-")
            if "=" in name:
                name, value = name.split("=", 1)
            elif i + 1 < len(args) and (not args[i + 1].startswith("-") or _is_number(args[i + 1])):
                value = args[i + 1]
                i += 1
            else:
                value = "true"
            if name:
                params[name] = value[:limit]
        else:
            positionals.append(a)
        i += 1
    if positionals:
        params["args"] = shlex.join(positionals)[:limit]
    return params


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
