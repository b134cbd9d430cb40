"""Turn a script's command-line arguments into MLflow params."""

from __future__ import annotations

import shlex

MAX_PARAM_LEN = 6000  # MLflow's limit on a param value


def parse_script_args(args: list[str]) -> dict[str, str]:
    """``--batch-size 128`` -> batch-size=128, ``--flag`` -> true, ``--lr=0.1`` -> lr=0.1,
    ``-n 3`` -> n=3; positionals are joined (shell-quoted) into ``args``."""
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
                params[name] = value[:MAX_PARAM_LEN]
        else:
            positionals.append(a)
        i += 1
    if positionals:
        params["args"] = shlex.join(positionals)[:MAX_PARAM_LEN]
    return params


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
