"""Reading a spool back: a killed launcher's streams (``radtrack sync``), a file as a trace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack.listeners.protocol import Message, ProtocolError, decode, samples_of
from radtrack.store.spool import META_FILE, SHIPPED_SUFFIX, SPOOL_SUFFIX, Stream

if TYPE_CHECKING:
    import pandas as pd


def read_meta(run_dir: Path) -> dict[str, Any]:
    """``meta.json`` of a run's spool: its run id and tracking URI."""
    return json.loads((run_dir / META_FILE).read_text())


def messages(path: Path) -> Iterator[Message | None]:
    """Every line of a spool file as its message; None for a line that is none (a torn
    last line from a crash)."""
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                yield decode(line)
            except ProtocolError:
                yield None


def reopen_streams(run_dir: Path) -> dict[str, Stream]:
    """The streams a killed launcher left in ``run_dir``, reopened for appending: lines
    counted, hellos kept, samples past ``<listener>.shipped`` pending again."""
    streams: dict[str, Stream] = {}
    for path in sorted(run_dir.glob(f"*{SPOOL_SUFFIX}")):
        name = path.name[:-len(SPOOL_SUFFIX)]
        marker = run_dir / f"{name}{SHIPPED_SUFFIX}"
        shipped = int(marker.read_text()) if marker.exists() else 0
        s = Stream(name, path, path.open("a", encoding="utf-8"), shipped=shipped)
        for msg in messages(path):
            s.take(msg, queue=s.lines >= shipped)
        streams[name] = s
    return streams


def read_spool(path: Path) -> pd.DataFrame:
    """A listener's spool file as the wide Parquet layout: time, step, one column per key."""
    import pandas as pd

    rows = [{"time": msg.t, "step": step, **msg.values}
            for step, msg in enumerate(s for m in messages(path) for s in samples_of(m))]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["step"] = frame["step"].astype("int64")
    for col in frame.columns[2:]:
        frame[col] = frame[col].astype("float64")
    return frame
