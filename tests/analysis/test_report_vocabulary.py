"""One vocabulary from the store to the reader (issue 52): every figure ``radtrack report``
prints or writes has one name, and its scope, unit and meaning are radtrack/vocab/meaning.py's
in every format; each machine-readable output carries its columns table and keeps its schema
whatever the data; the printed tables fit 120 columns with long names."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from mlflow import MlflowClient
from support import made_store, report_rows, run_cli
from test_analysis_seed import T0, Row, seed_workload

from radtrack.analysis.report_text import REPORT_TABLES, column_legend
from radtrack.analysis.text_table import WIDTH
from radtrack.vocab.meaning import COLUMN_FIELDS, column_row

LONG = "x" * 130  # an experiment name longer than the page is wide
OLD_NAMES = ("span_s", "run_cpu_pct", "host_cpu_pct", "energy_ci95_pct")


@pytest.fixture
def seeded(store, tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("RADTRACK_CACHE_DIR", str(tmp_path / "cache"))
    client = MlflowClient(made_store(store))
    cpu = {"system/top/cpu_pct": [(t, i, 50.0) for i, t in enumerate(range(0, 11))],
           "system/top/proc/cpu_pct": [(t, i, 90.0) for i, t in enumerate(range(0, 11))]}
    seed_workload(client, "coloc", 1, [Row(duration_s=10, throughput=100.0, extra=cpu)])
    seed_workload(client, "coloc", 2, [Row(duration_s=15, throughput=60.0, collocation="mps"),
                                       Row(duration_s=15, throughput=60.0, collocation="mps")],
                  start=T0 + 100)
    seed_workload(client, "coloc", 3, [Row(duration_s=12, throughput=80.0)], start=T0 + 200)
    return store


def _report(*args: str) -> str:
    """``radtrack report ARGS`` through the CLI's entry point, in this process."""
    return run_cli("report", *args, check=True).stdout


def _owner_rows(table: str, columns: list[str]) -> list[dict[str, str]]:
    return [{k: ("" if v is None else str(v)) for k, v in column_row(c, table).items()} for c in columns]


def _said(frame: pd.DataFrame) -> list[dict[str, str]]:
    return [{k: ("" if pd.isna(v) else str(v)) for k, v in row.items()}
            for row in frame.to_dict("records")]


def test_every_format_says_each_column_as_the_owner_does(seeded, tmp_path):
    """csv, parquet and json: a file (or key) per table, empty ones too, and a columns table
    whose rows are meaning.column_row's for exactly the tables' columns, in their order."""
    _report("coloc", "--format", "csv", "--out", str(tmp_path / "r.csv"))
    columns = pd.read_csv(tmp_path / "r.columns.csv", keep_default_na=False)
    assert list(columns.columns) == list(COLUMN_FIELDS)
    for table in REPORT_TABLES:
        path = tmp_path / ("r.csv" if table == "runs" else f"r.{table}.csv")
        assert path.exists(), f"{table}: no file although the table is empty"
        # a stable schema: an empty table's file still has its header (issue 52); 'checks'
        # and the nodes table have fixed columns, 'monitoring' its fixed ones
        assert path.read_text().strip() or table not in ("monitoring", "nodes", "checks"), table
        names = list(pd.read_csv(path, nrows=0).columns) if path.read_text().strip() else []
        mine = columns[columns["table"] == table]
        assert list(mine["name"]) == names, table
        assert _said(mine) == _owner_rows(table, list(mine["name"])), table
    runs = columns[columns["table"] == "runs"].set_index("name")
    assert runs.loc["cpu_pct_mean", "scope"] == "host" and runs.loc["proc_cpu_pct_mean", "scope"] == "run"
    assert runs.loc["duration_s", "unit"] == "s"
    workloads = columns[columns["table"] == "workloads"].set_index("name")
    assert workloads.loc["energy_j", "scope"] == "workload"  # the workload's, not a run's

    _report("coloc", "--format", "parquet", "--out", str(tmp_path / "p.parquet"))
    assert _said(pd.read_parquet(tmp_path / "p.columns.parquet")) == _said(columns)
    for table in ("runs", "interference", "workloads", "variability"):
        path = tmp_path / ("p.parquet" if table == "runs" else f"p.{table}.parquet")
        for field in pq.read_schema(path):
            meta = {k.decode(): v.decode() for k, v in (field.metadata or {}).items()}
            owner = column_row(field.name, table)
            assert meta == {f"radtrack.{k}": str(owner[k]) for k in COLUMN_FIELDS
                            if k not in ("table", "name")}, (table, field.name)

    doc = json.loads(_report("coloc", "--format", "json"))
    assert list(doc) == [*REPORT_TABLES, "columns"]
    assert doc["checks"] == [] and doc["windows"] == []  # present, empty: one schema
    assert _said(pd.DataFrame(doc["columns"])) == _said(columns)
    for table in REPORT_TABLES:
        for record in doc[table]:
            assert list(record) == list(columns.loc[columns["table"] == table, "name"]), table

    listed = pd.read_csv(io.StringIO(_report("coloc", "--format", "csv", "--table",
                                                        "columns")), keep_default_na=False)
    assert _said(listed) == _said(columns)
    bad = run_cli("report", "coloc", "--format", "csv", "--table", "nope")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "--table 'nope': this report's tables are runs, interference" in bad.stderr


def test_the_text_prints_the_files_names_and_the_owners_words(seeded, tmp_path):
    """One name: each printed header is a column of the files; the legend under a table is
    the owner's meaning of each; counts are whole numbers."""
    text = _report("coloc")
    doc = json.loads(_report("coloc", "--format", "json"))
    names = {r["name"] for r in doc["columns"]}
    headers = [line for line in text.splitlines() if re.match(r"(run_name|workload|file) {2}", line)]
    assert len(headers) >= 4
    for line in headers:
        for token in re.split(r" {2,}", line.strip()):
            assert token in names, f"printed header {token!r} is no column of the files"
    assert not any(re.search(rf"\b{old}\b", text) for old in OLD_NAMES)
    flat = " ".join(text.split())
    for column in ("duration_s", "proc_cpu_pct_mean", "cpu_pct_mean", "energy_j_ci95_pct"):
        assert " ".join(column_legend(column, "runs").split()) in flat, column
    assert "slowdown: solo rate / co-located rate" in flat and "stp: system throughput (STP)" in flat
    variability = text.split("per GPU model)\n")[1].split("\nColumns:")[0]
    assert _cells(variability, "n") == ["2", "2"]  # repeats, as whole numbers
    assert all(c.isdigit() for c in _cells(text.split("Per-run summary\n")[1].split("\nColumns:")[0],
                                           "samples"))


def _cells(section: str, column: str) -> list[str]:
    """The printed cells of ``column`` in the block of ``section`` whose header names it."""
    for block in section.split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        heads = re.split(r" {2,}", lines[0].strip()) if lines else []
        if column in heads:
            return [re.split(r" {2,}", line.strip())[heads.index(column)] for line in lines[1:]]
    raise AssertionError(f"no block prints {column}:\n{section}")


def test_long_names_fit_the_width_and_every_block_keeps_its_key(store, tmp_path, monkeypatch):
    monkeypatch.setenv("RADTRACK_CACHE_DIR", str(tmp_path / "cache"))
    client = MlflowClient(made_store(store))
    params = {"batch-size": "64", "a-rather-long-option-name": "with-a-long-value-" * 3}
    script = "/home/someone/projects/a-deep/folder/structure/of/experiments/train_the_model.py"
    loss = {"loss": [(0.0, 0, 0.9), (1.0, 1, 0.5)]}  # the script's own metric
    for workload in (1, 2):  # two repeats: the variability table, split into blocks
        seed_workload(client, LONG, workload, [Row(duration_s=4, params=params, script=script,
                                                   extra=loss)],
                      start=T0 + 100 * workload)
    text = _report(LONG)
    wide = [line for line in text.splitlines() if len(line) > WIDTH]
    assert not wide, f"{len(wide)} line(s) over {WIDTH}: {wide[0]!r}"
    title = text.splitlines()[0]
    assert title.startswith("experiment xxx") and title.endswith("…: 2 run(s)")
    # a long run name is cut in its middle: the runs stay apart, workload and letter shown
    # (cut at its end, both read 'xxx…' and a reader could not tell the rows apart)
    for section in ("Per-run summary", "The scripts' own metrics (last value logged; the run's span beside it)"):
        names = sorted(report_rows(text, section))
        assert len(names) == 2 and "…" in names[0] and names[0].endswith("x-1 A") and names[1].endswith("-2 A"), \
            (section, names)
    flat = " ".join(text.split())
    assert "loss: the script's own metric, last value logged" in flat and "loss: loss:" not in flat
    variability = text.split("Run-to-run variability")[1].split("\nColumns:")[0].strip("\n")
    blocks = [b for b in variability.split("\n\n") if b.strip()][1:]
    assert len(blocks) >= 2, variability
    for block in blocks:  # each block says which configuration its numbers are
        lines = block.splitlines()
        assert lines[0].startswith("file") and "params" in lines[0], block
        assert lines[1].startswith("…") and "train_the_model.py" in lines[1], block
    assert "\n" not in next(line for line in text.splitlines() if "train_the_model.py" in line)
    samples = json.loads(_report(LONG, "--format", "json"))["runs"][0]["samples"]
    assert isinstance(samples, int)


def test_the_format_is_documented_in_help():
    out = " ".join(run_cli("report", "--help", check=True).stdout.split())
    assert "--format {table,csv,json,parquet}" in out and "columns table" in out
    assert "--table NAME" in out
    doc = (Path(__file__).parents[2] / "docs" / "analysis.md").read_text()
    assert "--format" in doc and "columns" in doc and "(printed `span_s`)" not in doc
