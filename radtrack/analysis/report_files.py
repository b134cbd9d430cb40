"""Where ``radtrack report`` puts its tables: printed, or written to ``--out`` as text,
CSV (formula-like cells neutralised unless ``--raw``), JSON or Parquet."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from radtrack.csvsafe import safe_frame
from radtrack.errors import RadtrackError


def _records(frame: pd.DataFrame) -> list[dict[str, object]]:
    return json.loads(frame.to_json(orient="records", date_format="iso"))


def _sibling(out: Path, name: str) -> Path:
    return out.with_name(f"{out.stem}.{name}{out.suffix}")


def write_tables(tables: dict[str, pd.DataFrame], fmt: str, out: Path, text: str,
                 main: str) -> list[Path]:
    """Write ``tables`` to ``out`` in ``fmt``: json holds every table in one document; csv and
    parquet write ``main`` to ``out`` and each other non-empty table next to it as
    ``<stem>.<name><suffix>``; table writes the printed text."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "table":
        out.write_text(text + "\n")
        return [out]
    if fmt == "json":
        out.write_text(json.dumps({k: _records(v) for k, v in tables.items()}, indent=1) + "\n")
        return [out]
    written = []
    for name, frame in tables.items():
        if name != main and frame.empty:
            continue
        path = out if name == main else _sibling(out, name)
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        written.append(path)
    return written


def emit_tables(tables: dict[str, pd.DataFrame], main: str, text: str, args: argparse.Namespace) -> None:
    if args.fmt == "csv" and not args.raw:  # formula-like cells neutralised (radtrack/csvsafe.py)
        tables = {name: safe_frame(frame) for name, frame in tables.items()}
    if args.out is not None:
        print(text)
        for path in write_tables(tables, args.fmt, args.out, text, main):
            print(f"wrote {path}")
    elif args.fmt == "table":
        print(text)
    elif args.fmt == "csv":
        sys.stdout.write(tables[main].to_csv(index=False))
    elif args.fmt == "json":
        print(json.dumps({k: _records(v) for k, v in tables.items()}, indent=1))
    else:
        raise RadtrackError("--format parquet needs --out FILE")
