"""The few MLflow search filters radtrack's launcher asks, read without MLflow.

``tags.`radtrack.role` = 'workload' and tags.`radtrack.workload` = '3'`` and
``attributes.start_time >= 1700000000000 AND attributes.start_time <= ...``: comparisons of a
tag with a quoted string (``=`` or ``!=``) and of a run's start or end time with a whole
number, joined by ``and``. Anything else raises :class:`Unsupported`, and the light client
asks MLflow's own client instead (radtrack/store/handle.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class Unsupported(ValueError):
    """A filter this reader does not know: MLflow's client reads it."""


@dataclass(frozen=True)
class Clause:
    kind: str  # "tag" or "attribute"
    key: str  # the tag's key, or the runs table's column
    op: str
    value: str | int


_TAG = re.compile(r"""tags\.(?:`(?P<bq>[^`]+)`|"(?P<dq>[^"]+)"|(?P<plain>[\w.\-/]+))\s*(?P<op>!=|=)\s*"""
                  r"""'(?P<value>[^']*)'$""")
_ATTR = re.compile(r"(?:attributes?|attr|run)\.(?P<key>start_time|end_time)\s*(?P<op>>=|<=|!=|=|<|>)\s*"
                   r"(?P<value>-?\d+)$")
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
            out.append(Clause("tag", key, m.group("op"), m.group("value")))
        elif m := _ATTR.match(part):
            out.append(Clause("attribute", m.group("key"), m.group("op"), int(m.group("value"))))
        else:
            raise Unsupported(f"filter {part!r}")
    return out
