"""Which store a task works on, in its task id: several stores (data folders) can share one
luigid without sharing a task. Luigi makes a task's id from its family and its significant
parameters, and luigid keeps one status per id; without the store in it, two stores' cron jobs
running ``IndexAll`` on the same luigid would overwrite each other's task states (one store's
failure replacing the other's DONE).

The value is never typed by people: it is the digest of the configured state DB (the data
folder's SQLite file, or a shared PostgreSQL database). The visualiser's re-run command writes
it out (``--store 3f9a…``); given for another store than the one configured, it is one line and
exit 2, never a run on the wrong store."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

import luigi

from pipeline.engine.command_line import refuse
from pipeline.engine.process_runtime import current_settings
from pipeline.errors import ConfigError
from pipeline.fingerprints import digest
from pipeline.store.db import make_database

STORE_DIGEST_CHARS = 10


def store_of(settings) -> str:
    """The short digest naming the store ``settings`` configure: its state DB, the one place
    every run of a store shares (each host of a shared PostgreSQL store has its own data
    folder, and their tasks must be the same tasks on one luigid)."""
    return digest("store", state_db_identity(settings))[:STORE_DIGEST_CHARS]


def state_db_identity(settings) -> str:
    """The SQLite file's absolute path, or a PostgreSQL server's host, port and database
    (never its user or password)."""
    if not settings.state_url.startswith(("postgresql:", "postgres:")):
        return f"sqlite:{Path(make_database(settings.state_url, settings.data_path).database).resolve()}"
    url = urlsplit(settings.state_url)
    return f"postgresql://{url.hostname or ''}:{url.port or 5432}{url.path}"


def current_store() -> str:
    try:
        return store_of(current_settings())
    except ConfigError as exc:  # as runtime_or_exit says it: one line, exit 2
        print(f"docketeer: configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


class StoreParameter(luigi.Parameter):
    """The store's digest: significant (it is in every task id), set from the configuration."""

    def __init__(self) -> None:
        super().__init__(default="", description="the store this task works on (a digest of its "
                                                 "state DB, set from the configuration)")
        # Luigi orders a task's parameters by creation; this one is listed last, after what
        # people read first in the visualiser (the docket, the version).
        self._counter = 10**9

    def normalize(self, x) -> str:
        """Every value passes here (a default, a parsed flag, a constructor's argument)."""
        here = current_store()
        if x and x != here:
            refuse(f"--store {x} names another store than the one configured here ({here}): "
                   "set DOCKETEER_DATA_DIR (or state_url) to that store's")
        return here


class OfOneStore:
    """A task of one store: its id names the store (``StoreParameter``)."""

    store = StoreParameter()
