"""Where ``radtrack report`` puts its tables: printed, or written to ``--out`` as text, CSV
(formula-like cells neutralised unless ``--raw``), JSON or Parquet.

Every machine-readable output carries its meaning and keeps one schema whatever the data:

- json: one document, a key per table (every table, empty ones as ``[]``) and ``columns``:
  a row per column of every table with :data:`radtrack.vocab.meaning.COLUMN_FIELDS`
  (table, name, scope, unit, unit_text, role, meaning);
- csv and parquet with ``--out STEM.csv``: the main table in ``STEM.csv``, every other
  table beside it as ``STEM.<table>.csv`` (empty ones too: an empty file, or its header
  where the table has fixed columns), and the columns table as ``STEM.columns.csv``;
  Parquet fields also carry ``radtrack.scope``, ``radtrack.unit``, ``radtrack.unit_text``,
  ``radtrack.role`` and ``radtrack.meaning`` in their metadata;
- csv on stdout (no ``--out``): one table, ``--table NAME`` (default the main table;
  ``columns`` for the columns table).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from radtrack.csvsafe import safe_frame
from radtrack.errors import RadtrackError
from radtrack.vocab.meaning import COLUMN_FIELDS, column_row

COLUMNS_TABLE = "columns"


def columns_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """What every column of every table is, in the owner's words (radtrack/vocab/meaning.py)."""
    rows = [column_row(str(c), name) for name, frame in tables.items() for c in frame.columns]
    return pd.DataFrame(rows, columns=list(COLUMN_FIELDS))


def _records(frame: pd.DataFrame) -> list[dict[str, object]]:
    return json.loads(frame.to_json(orient="records", date_format="iso"))


def _document(tables: dict[str, pd.DataFrame]) -> str:
    return json.dumps({k: _records(v) for k, v in tables.items()}, indent=1)


def _sibling(out: Path, name: str) -> Path:
    return out.with_name(f"{out.stem}.{name}{out.suffix}")


#: what a Parquet field's metadata says of its column: ``radtrack.<field>``
FIELD_METADATA = tuple(f for f in COLUMN_FIELDS if f not in ("table", "name"))


def write_parquet(frame: pd.DataFrame, path: Path, said: pd.DataFrame) -> None:
    """``frame`` to ``path``, each field's metadata what its column is (``said``: the
    columns table's rows of this table: ``radtrack.scope``, ``radtrack.unit``, ...)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    rows = {row["name"]: row for row in said.to_dict("records")}
    fields = [f.with_metadata({f"radtrack.{k}": str(rows[f.name][k]) for k in FIELD_METADATA})
              if f.name in rows else f for f in table.schema]
    pq.write_table(table.cast(pa.schema(fields, metadata=table.schema.metadata)), path)


def write_tables(tables: dict[str, pd.DataFrame], fmt: str, out: Path, text: str,
                 main: str) -> list[Path]:
    """Write ``tables`` (and their columns table) to ``out`` in ``fmt``: json holds every
    table in one document; csv and parquet write ``main`` to ``out`` and every other table
    next to it as ``<stem>.<name><suffix>``; table writes the printed text."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "table":
        out.write_text(text + "\n")
        return [out]
    said = columns_table(tables)
    if fmt == "json":
        out.write_text(_document({**tables, COLUMNS_TABLE: said}) + "\n")
        return [out]
    written = []
    for name, frame in {**tables, COLUMNS_TABLE: said}.items():
        path = out if name == main else _sibling(out, name)
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            write_parquet(frame, path, said[said["table"] == name])
        written.append(path)
    return written


def emit_tables(tables: dict[str, pd.DataFrame], main: str, text: str, args: argparse.Namespace) -> None:
    """Print or write ``tables`` as ``--format``/``--out``/``--table`` ask."""
    if args.fmt == "csv" and not args.raw:  # formula-like cells neutralised (radtrack/csvsafe.py)
        tables = {name: safe_frame(frame) for name, frame in tables.items()}
    chosen = getattr(args, "table", None)
    if chosen is not None and chosen not in (*tables, COLUMNS_TABLE):
        raise RadtrackError(f"--table {chosen!r}: this report's tables are "
                            f"{', '.join((*tables, COLUMNS_TABLE))}")
    if args.out is not None:
        print(text)
        for path in write_tables(tables, args.fmt, args.out, text, main):
            print(f"wrote {path}")
    elif args.fmt == "table":
        print(text)
    elif args.fmt == "csv":
        name = chosen or main
        frame = columns_table(tables) if name == COLUMNS_TABLE else tables[name]
        sys.stdout.write(frame.to_csv(index=False))
    elif args.fmt == "json":
        print(_document({**tables, COLUMNS_TABLE: columns_table(tables)}))
    else:
        raise RadtrackError("--format parquet needs --out FILE")
