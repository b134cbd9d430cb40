"""docs/metrics.md says of every built-in key what its listener declares (scope, unit, role,
the label it is shown with), and lists exactly the scopes and roles radtrack/vocab/series.py has:
the docs and radtrack/vocab/meaning.py's sources cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from radtrack.listeners.amd import SERIES as AMDSMI
from radtrack.listeners.dcgm import SERIES as DCGM
from radtrack.listeners.iostat import SERIES as IOSTAT
from radtrack.listeners.rapl import SERIES as RAPL
from radtrack.listeners.smi import SERIES as SMI
from radtrack.listeners.tegrastats import SERIES as TEGRASTATS
from radtrack.listeners.top import SERIES as TOP
from radtrack.vocab.series import ROLES, SCOPES, Series

DOC = Path(__file__).parents[2] / "docs" / "metrics.md"
DECLARED: dict[str, Series] = {s.pattern: s for s in (*SMI, *DCGM, *TOP, *IOSTAT, *TEGRASTATS, *RAPL,
                                                      *AMDSMI)}
_CODE = re.compile(r"`([^`]+)`")
_COLUMNS = ["key", "unit", "scope", "role", "shown as"]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def key_rows(text: str) -> dict[str, dict[str, str]]:
    """key -> its cells, from every table whose columns start with key, unit, scope, role, shown as."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if cells[:5] == _COLUMNS:
            header = cells
        elif header and not set(line) <= set("|- "):
            keys = _CODE.findall(cells[0])
            assert len(keys) == 1, f"{DOC.name}: one key a row, got {cells[0]!r}"
            assert keys[0] not in rows, f"{DOC.name}: {keys[0]} documented twice"
            rows[keys[0]] = dict(zip(header[:5], [keys[0], *cells[1:5]], strict=True))
    return rows


def first_column(text: str, heading: str) -> list[str]:
    """The backticked names of the first column of the table whose header starts ``| heading |``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if _cells(line)[:1] == [heading]
                 if line.startswith("|"))
    names = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        names += _CODE.findall(_cells(line)[0])[:1]
    return names


def shown(series: Series) -> str:
    unit = series.unit_text or series.unit
    return f"{series.label} ({unit})" if unit else series.label


def mismatches(text: str) -> list[str]:
    rows = key_rows(text)
    out = [f"{key}: documented, declared by no built-in listener" for key in rows if key not in DECLARED]
    out += [f"{key}: declared, not in {DOC.name}" for key in DECLARED if key not in rows]
    for key, row in rows.items():
        series = DECLARED.get(key)
        if series is None:
            continue
        code = {"unit": series.unit, "scope": series.scope, "role": series.role, "shown as": shown(series)}
        out += [f"{key}: {DOC.name} says {name} {row[name]!r}, the listener {value!r}"
                for name, value in code.items() if row[name] != value]
    return out


def test_every_built_in_key_is_documented_as_declared() -> None:
    text = DOC.read_text()
    assert len(key_rows(text)) >= 60
    assert mismatches(text) == []


def test_the_scopes_and_roles_are_those_of_the_contract() -> None:
    text = DOC.read_text()
    assert first_column(text, "scope") == list(SCOPES)
    assert first_column(text, "role") == list(ROLES)


@pytest.mark.parametrize(("old", "new", "caught"), [
    ("| `top/proc/cpu_pct` | % | run | proc_cpu |", "| `top/proc/cpu_pct` | % | host | proc_cpu |",
     "top/proc/cpu_pct: metrics.md says scope 'host'"),
    ("| `smi/gpu<i>/power_w` | W | device | device_power |", "| `smi/gpu<i>/power_w` | mW | device | device_power |",
     "smi/gpu<i>/power_w: metrics.md says unit 'mW'"),
    ("host CPU (% of all cores)", "CPU (%)", "top/cpu_pct: metrics.md says shown as 'CPU (%)'"),
    ("| `iostat/net/sent_bytes_per_s` |", "| `iostat/net/sent_bytes_total` |",
     "iostat/net/sent_bytes_per_s: declared, not in"),
])
def test_a_changed_row_is_caught(old: str, new: str, caught: str) -> None:
    text = DOC.read_text()
    assert old in text
    assert any(m.startswith(caught) for m in mismatches(text.replace(old, new, 1))), caught
