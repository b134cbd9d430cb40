"""Parsers for single sheet cells; each raises ValueError with a message for the user."""

from __future__ import annotations

import re
import shlex

from radtrack import inputs

# re.ASCII throughout: \d would otherwise match any Unicode digit ('²', '٣').
_MIG_PROFILE_RE = re.compile(r"^\d+g\.\d+gb(\+[a-z0-9]+)*$", re.ASCII)
_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SLURM_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_CONSTRAINT_RE = re.compile(r"^[A-Za-z0-9_.\-&|\[\]*(),:!]+$")
# SLURM's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S
_TIME_RE = re.compile(r"^(?:(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?|(\d+)(?::(\d+)(?::(\d+))?)?)$",
                      re.ASCII)
_TRUE = {"1", "true", "yes", "y", "on"}
_FALSE = {"0", "false", "no", "n", "off"}


def parse_collocation(text: str) -> str:
    """'-'/'' -> '-', 'MPS' -> 'mps', 'MPS:50' -> 'mps:50', '1g.10gb' -> '1g.10gb'."""
    c = text.strip().lower()
    if c in ("", "-"):
        return "-"
    if c == "mps":
        return "mps"
    if c.startswith("mps:"):
        try:
            pct = inputs.whole(c[4:], "percent", minimum=1, maximum=100)
        except ValueError:
            raise ValueError(f"{text!r}: MPS:<percent> needs a whole percentage from 1 to "
                             "100") from None
        return f"mps:{pct}"
    if _MIG_PROFILE_RE.match(c):
        return c
    raise ValueError(f"{text!r} is not '-', 'MPS', 'MPS:<1-100>' or a MIG profile such as "
                     "'1g.10gb'")


def parse_clocks(text: str) -> str:
    """'1410' -> '1410' (locked), '1200-1980' -> '1200,1980' (range), MHz."""
    parts = [p.strip() for p in text.split("-")]
    try:
        if len(parts) not in (1, 2) or any(p[:1] in "+-" for p in parts):
            raise ValueError
        values = [inputs.whole(p, "MHz", positive=True) for p in parts]
    except ValueError:
        raise ValueError(f"{text!r}: give an SM clock in MHz ('1410') or a range "
                         "('1200-1980')") from None
    if len(values) == 2 and values[0] > values[1]:
        raise ValueError(f"{text!r}: the range's minimum is above its maximum")
    return ",".join(str(v) for v in values)


def parse_env(text: str) -> dict[str, str]:
    """'A=1 B="x y"' -> {'A': '1', 'B': 'x y'}."""
    out = {}
    for item in shlex.split(text):
        key, sep, value = item.partition("=")
        if not sep or not _ENV_KEY_RE.match(key):
            raise ValueError(f"{item!r} is not KEY=VALUE (space-separated, KEY a variable name)")
        out[key] = value
    return out


def parse_positive(text: str, kind: type, unit: str) -> float | int:
    """A number > 0 through the checked parser (radtrack/inputs.py): finite, ASCII digits."""
    if kind is int:
        return inputs.whole(text, unit, positive=True)
    return inputs.number(text, unit, positive=True)


def parse_bool(text: str) -> bool:
    low = text.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(f"{text!r} is not true/false")


def parse_slurm_name(text: str) -> str:
    """A partition, account or QoS name as SLURM spells them (letters, digits, ``_ - .``)."""
    if not _SLURM_NAME_RE.match(text):
        raise ValueError(f"{text!r} is not a SLURM name (letters, digits, '_', '-', '.')")
    return text


def parse_constraint(text: str) -> str:
    """A SLURM ``--constraint`` expression: features joined by ``& | , *``, brackets."""
    if not _CONSTRAINT_RE.match(text):
        raise ValueError(f"{text!r} is not a SLURM constraint (features such as 'a100', "
                         "joined by '&', '|', ',', with '[...]' and '*N')")
    return text


def parse_time_limit(text: str) -> str:
    """A SLURM time limit ('30', '1:30:00', '2-12', 'UNLIMITED'), kept as written."""
    if text.lower() in ("unlimited", "infinite"):
        return "UNLIMITED"
    m = _TIME_RE.match(text)
    if not m or all(int(g) == 0 for g in m.groups() if g is not None):
        raise ValueError(f"{text!r} is not a SLURM time limit: minutes ('30'), 'H:MM:SS' "
                         "('1:30:00'), 'D-HH' or 'D-HH:MM:SS' ('2-12:00:00'), or 'UNLIMITED'")
    return text


def check_listener_intervals(text: str) -> None:
    """Each ``name@seconds`` of a Listeners value through the checked number parser (finite,
    ASCII digits, > 0); the registry checks the names."""
    for entry in text.split("+"):
        name, at, every = entry.partition("@")
        if at:
            try:
                inputs.number(every, "seconds", positive=True)
            except ValueError as exc:
                raise ValueError(f"listener {entry.strip()!r}: the interval after '@' must be a "
                                 f"number of seconds > 0, e.g. {name.strip()}@0.5 ({exc})") from None
