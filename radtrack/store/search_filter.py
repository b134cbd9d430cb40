"""The few MLflow search filters radtrack's launcher asks, read without MLflow.

``tags.`radtrack.role` = 'workload' and tags.`radtrack.workload` = '3'`` and
``attributes.start_time >= 1700000000000 AND attributes.start_time <= ...``: comparisons of a
tag with a quoted string (``=`` or ``!=``) and of a run's start or end time with a whole
number, of a param with a quoted string and of a run's status with one
(``attributes.status = 'FINISHED' and params.script = 'train.py'``: the solo baselines'
search), joined by ``and``. Anything else raises :class:`Unsupported`, and the light client
asks MLflow's own client instead (radtrack/store/handle.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class Unsupported(ValueError):
    """A filter this reader does not know: MLflow's client reads it."""


@dataclass(frozen=True)
class Clause:
    kind: str  # "tag", "param" or "attribute"
    key: str  # the tag's or param's key, or the runs table's column
    op: str
    value: str | int


_TAG = re.compile(r"""(?P<kind>tags?|params?)\.(?:`(?P<bq>[^`]+)`|"(?P<dq>[^"]+)"|(?P<plain>[\w.\-/]+))\s*(?P<op>!=|=)\s*"""
                  r"""'(?P<value>[^']*)'$""")
_ATTR = re.compile(r"(?:attributes?|attr|run)\.(?P<key>start_time|end_time)\s*(?P<op>>=|<=|!=|=|<|>)\s*"
                   r"(?P<value>-?\d+)$")
_STATUS = re.compile(r"(?:attributes?|attr|run)\.status\s*(?P<op>!=|=)\s*'(?P<value>[A-Z_]+)'$")
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)


def parse(filter_string: str | None) -> list[Clause]:
    """The clauses of ``filter_string`` (all must hold); [] for none."""
    text = (filter_string or "").strip()
    if not text:
        return []
    out = []
    for part in _AND.split(text):
        part = part.strip()
        if m := _TAG.match(part):
            key = m.group("bq") or m.group("dq") or m.group("plain")
            kind = "tag" if m.group("kind").startswith("tag") else "param"
            out.append(Clause(kind, key, m.group("op"), m.group("value")))
        elif m := _ATTR.match(part):
            out.append(Clause("attribute", m.group("key"), m.group("op"), int(m.group("value"))))
        elif m := _STATUS.match(part):
            out.append(Clause("attribute", "status", m.group("op"), m.group("value")))
        else:
            raise Unsupported(f"filter {part!r}")
    return out


_START_ASC = re.compile(r"(?:attributes?\.|attr\.|run\.)?start_time(?:\s+ASC)?$", re.IGNORECASE)


def order_ascending(order_by: list[str] | None) -> bool | None:
    """False for MLflow's default order (newest first), True for the readers' order by start
    time ascending (``attributes.start_time ASC``); None for any other order, which MLflow's
    client reads."""
    if not order_by:
        return False
    if len(order_by) == 1 and _START_ASC.match(order_by[0].strip()):
        return True
    return None
