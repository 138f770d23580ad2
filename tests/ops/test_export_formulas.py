"""A CSV export never hands a spreadsheet a formula: every text cell of every table that
starts with =, +, -, @, a tab or a carriage return is written as text (a leading '); the
Parquet files keep the values as stored."""

from __future__ import annotations

import csv

import pyarrow.parquet as pq
import pytest

from pipeline.ops import export

FORMULAS = ["=HYPERLINK(\"http://evil.example\",\"click\")", "=cmd|' /C calc'!A0", "+1+cmd|' /C calc'!A0",
            "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]


def _rows(table: str, formula: str) -> list[dict]:
    """Two rows of ``table``: every text column holding ``formula`` (titles, names, bodies,
    text, campaign representatives...), and one holding ordinary text."""
    columns = export.COLUMNS[table]
    typed = {"string": None, "bool_": False, "int64": 1, "float64": 0.5}
    hostile = {name: formula if kind == "string" else typed.get(kind) for name, kind, _ in columns}
    plain = {name: "a plain 2026-01-02 value" if kind == "string" else typed.get(kind) for name, kind, _ in columns}
    return [hostile, plain]


@pytest.mark.parametrize("formula", FORMULAS)
@pytest.mark.parametrize("table", sorted(export.COLUMNS))
def test_every_text_cell_a_spreadsheet_would_run_is_written_as_text(tmp_path, table, formula):
    rows = _rows(table, formula)
    strings = [name for name, kind, _ in export.COLUMNS[table] if kind == "string"]
    assert strings
    export._write_table(tmp_path / f"{table}.csv", table, rows, "csv")
    export._write_table(tmp_path / f"{table}.parquet", table, rows, "parquet")
    with open(tmp_path / f"{table}.csv", newline="", encoding="utf-8") as written:
        read = list(csv.DictReader(written))
    assert [read[0][name] for name in strings] == ["'" + formula] * len(strings)
    assert [read[1][name] for name in strings] == ["a plain 2026-01-02 value"] * len(strings)
    stored = pq.read_table(tmp_path / f"{table}.parquet").to_pylist()
    assert [stored[0][name] for name in strings] == [formula] * len(strings)  # Parquet unchanged


def test_the_readme_says_so():
    text = export.readme()
    assert "=, +, -, @, a tab or a carriage return" in text and "starts with an added '" in text
