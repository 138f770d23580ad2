"""Bounded work per request: the pages run one at a time on the server's event loop (``app.py``),
so a request that read for a minute would keep every other page waiting that minute.

Each statement a page sends to the state DB is given ``STATEMENT_SECONDS`` (PostgreSQL's
``statement_timeout``; SQLite's progress handler, which interrupts a statement past its
deadline). A page sends a fixed number of statements, so a request is bounded; one that runs
out is answered with 503 and the next request is served. The index DB's connection (the
searches) gets the same ``statement_timeout`` once, when ``docketeer serve`` makes it read-only. The filters' own costs are bounded
where they are compared (``pipeline/reading/organisation_filter.py``).
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import peewee

STATEMENT_SECONDS = 5.0
_SQLITE_STEPS = 10_000  # virtual-machine steps between two looks at the clock


@contextmanager
def bounded(database, seconds: float | None = None):
    """While the block runs, each statement of this thread's connection to ``database`` gets
    ``seconds`` (default ``STATEMENT_SECONDS``) before it is cancelled (SQLite: the block's
    statements together)."""
    seconds = STATEMENT_SECONDS if seconds is None else seconds
    if not isinstance(database, peewee.SqliteDatabase):
        # The session's setting: this connection is the page's thread's own (peewee's are per thread).
        database.execute_sql(f"SET statement_timeout = {max(1, int(seconds * 1000))}")
        yield
        return
    deadline = time.monotonic() + seconds
    connection = database.connection()
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), _SQLITE_STEPS)
    try:
        yield
    finally:
        connection.set_progress_handler(None, _SQLITE_STEPS)


def ran_out(exc: BaseException) -> bool:
    """Whether ``exc`` is a statement cancelled by ``limit_statements`` (either store's)."""
    import psycopg2.errors

    cause = getattr(exc, "orig", None) or exc.__cause__ or exc.__context__ or exc
    if isinstance(exc, psycopg2.errors.QueryCanceled) or isinstance(cause, psycopg2.errors.QueryCanceled):
        return True
    text = str(exc)
    return "statement timeout" in text or (isinstance(exc, peewee.OperationalError) and text == "interrupted")


def recover(database) -> None:
    """After a cancelled statement: the connection is usable by the next request."""
    if isinstance(database, peewee.SqliteDatabase):
        return
    try:
        database.rollback()
    except peewee.PeeweeException:
        database.close()
