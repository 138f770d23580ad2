"""Statements peewee builds once and the driver runs for many rows.

peewee builds a statement's SQL value by value in Python; for a statement run once per
item (a state transition, an attachment row) that building costs several times the write
itself (measured in backfill: about three quarters of its state-DB time). Here peewee
builds each statement once per database, from a row of the real values, and the driver
runs the SQL text for every row (``executemany``, psycopg2's ``execute_batch``).

A statement is counted as ``pipeline.store.db`` counts the statements peewee runs (one
statement, a row write, an item-state write when it writes ``item_state``), so tests that
count statements see these too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import peewee

from pipeline.counters import ROWS_WRITTEN, STATE_QUERIES, count_query, counters
from pipeline.store.models import database

PG_PAGE = 2000  # rows per round trip on PostgreSQL (execute_batch's page)

_statements: dict[tuple[str, type], str] = {}


def run_many(name: str, build: Callable[[tuple], peewee.Query], rows: Sequence[tuple]) -> int:
    """Run the statement ``build(row)`` makes for every row of ``rows``; returns len(rows).

    ``build`` must give the same SQL text for every row (only the values differ) with the
    row's values as its parameters, in the row's order: the text is built from the first
    row and cached under ``name`` per kind of database."""
    if not rows:
        return 0
    if len(rows) == 1:  # one statement is atomic by itself: no transaction around it
        run_one(name, build, rows[0])
        return 1
    sql = statement(name, build, rows[0])
    with database.atomic(), peewee.__exception_wrapper__:  # driver errors as peewee's
        cursor = database.cursor()
        if isinstance(database.obj, peewee.SqliteDatabase):
            cursor.executemany(sql, rows)
        else:
            from psycopg2.extras import execute_batch

            execute_batch(cursor, sql, rows, page_size=PG_PAGE)
    _count(sql)
    return len(rows)


def run_one(name: str, build: Callable[[tuple], peewee.Query], row: tuple) -> None:
    """``run_many`` for one row, without a transaction of its own (autocommit, or the
    caller's)."""
    sql = statement(name, build, row)
    with peewee.__exception_wrapper__:
        database.cursor().execute(sql, row)
    _count(sql)


def statement(name: str, build: Callable[[tuple], peewee.Query], row: tuple) -> str:
    key = (name, type(database.obj))
    sql = _statements.get(key)
    if sql is None:
        sql, params = build(row).sql()
        if tuple(params) != tuple(row):  # the row's values must be the statement's, in order
            raise AssertionError(f"prepared statement {name}: parameters {params!r} are not the row {row!r}")
        _statements[key] = sql
    return sql


def _count(sql: str) -> None:
    count_query(sql, STATE_QUERIES)
    counters.incr(ROWS_WRITTEN)


def raw_rows(query: peewee.Query) -> list[tuple]:
    """A query's rows as the driver gives them, without peewee's conversion of every value
    (about 5 µs a row: most of a 20,000-comment plan's time when 40 comments are new). Only
    for columns the driver returns as peewee would: text, integers."""
    return database.execute(query).fetchall()
