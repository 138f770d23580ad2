"""The stores a process works with, opened once and lazily: settings, state DB, blobs, index DB.

The index DB is the index stage's (``pipeline.index.database``), so this module sits above
the stages (pipeline/layers.py), beside the assembly. The engine, below them, reaches the
runtime through what this module hands it when imported: how to open the process's runtime
(``pipeline.engine.process_runtime``), and, for a process that asks the registry before it
imported the assembly (a command that opened only the runtime), the pipeline's stages.
"""

from __future__ import annotations

import logging
import os
from functools import cached_property
from pathlib import Path

from pipeline.config import Settings, ensure_data_dir, load_settings
from pipeline.engine import process_runtime, registry
from pipeline.errors import ConfigError
from pipeline.store import db as state_db
from pipeline.store.models import database

log = logging.getLogger("docketeer")


class Runtime:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._pid = os.getpid()
        self._index = None

    @cached_property
    def data_dir(self):
        return ensure_data_dir(self.settings)

    @cached_property
    def state(self):
        return state_db.open_state_db(self.settings.state_url, self.data_dir)

    @cached_property
    def blobs(self):
        from pipeline.store import leftovers
        from pipeline.store.blobs import open_blob_store

        self.data_dir  # noqa: B018 - made (and checked writable) before anything is put there
        url = self.settings.blob_url or self.settings.derived_places()["blob_url"]
        settings = self.settings
        return open_blob_store(url, s3_endpoint_url=settings.s3_endpoint_url or None,
                               spool_dir=leftovers.scratch_dir(self.data_dir),
                               max_connections=max(10, settings.mirror_concurrency),  # backfill's readers
                               retry_mode=settings.s3_retry_mode, max_attempts=settings.s3_max_attempts)

    def index_db(self):
        """The index DB; the embedded server starts on first use and stops at close()."""
        if self._index is None:
            from pipeline.index.database import IndexDB

            self._index = IndexDB.open(self.settings.index_url or None, self.data_dir,
                                       ef_search=self.settings.search_ef,
                                       search_floor=self.settings.search_floor)
        return self._index

    def existing_index_db(self):
        """The index DB when one exists; None rather than creating an embedded one to answer."""
        return self.index_db() if index_exists(self.settings) else None

    def after_fork(self) -> None:
        """A forked Luigi worker must not share its parent's DB connections: open its own."""
        if os.getpid() == self._pid:
            return
        self._pid = os.getpid()
        # Drop (never close) inherited handles, and keep them referenced so that garbage
        # collection does not close them either: that would end the parent's session.
        if "state" in self.__dict__:
            _inherited.append(self.state._state.conn)
            self.state._state.reset()
        if self._index is not None:
            _inherited.append(self._index)
            self._index = None

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None
        if "state" in self.__dict__ and not self.state.is_closed():
            self.state.close()


_current: Runtime | None = None
_inherited: list = []


def check_layout(settings: Settings) -> None:
    """A shared (PostgreSQL) state DB means several hosts may work it: each needs the same
    index DB and blob store, so the embedded index server and a local blob folder, which
    only this host sees, are refused."""
    if not settings.state_url.startswith(("postgresql:", "postgres:")):
        return
    if not settings.index_url:
        raise ConfigError("state_url is a shared PostgreSQL DB but index_url is empty (the embedded "
                          "index server is for one host only): set index_url = postgresql://... "
                          "with pgvector, reachable from every host")
    if not settings.blob_url.startswith("s3://"):
        raise ConfigError(f"state_url is a shared PostgreSQL DB but blob_url is "
                          f"{'a local folder' if settings.blob_url else 'empty (data_dir/blobs)'}: "
                          "set blob_url = s3://bucket/prefix (and s3_endpoint_url if not AWS), "
                          "the same on every host")


def get_runtime() -> Runtime:
    """The process's runtime, built from the settings on first use."""
    global _current
    if _current is None:
        runtime = Runtime(load_settings())
        runtime.state  # noqa: B018 - an unreachable state DB is named before the layout
        try:
            check_layout(runtime.settings)
        except ConfigError:
            runtime.close()
            raise
        _current = runtime
    _current.after_fork()
    _current.state  # noqa: B018 - bind the models before anyone queries
    return _current


def index_exists(settings: Settings) -> bool:
    """Is there an index DB to ask, without starting or creating one? A configured
    ``index_url``, or the embedded server's folder under data_dir."""
    return bool(settings.index_url) or (settings.data_path / "index-pg").is_dir()


def sqlite_state_path(settings: Settings) -> Path | None:
    """The SQLite state DB's file (None: the state DB is a PostgreSQL server's), whether it
    exists or not; opening nothing."""
    if settings.state_url.startswith(("postgresql:", "postgres:")):
        return None
    return Path(state_db.make_database(settings.state_url, settings.data_path).database)


def require_existing_store(settings: Settings) -> None:
    """A command that reads a store never makes one: a data folder without a state DB (a
    relative DOCKETEER_DATA_DIR given from another folder, a typo) is one line naming it."""
    path = sqlite_state_path(settings)
    if path is None:
        return  # a server's database: opening it says whether it is reachable
    if not path.is_file():
        where = settings.data_path if not settings.state_url else path
        raise ConfigError(f"no docketeer store at {where} (set DOCKETEER_DATA_DIR to the folder a "
                          "run wrote, or run `luigi --module pipeline IndexAll` to make one there)")


def existing_runtime() -> Runtime:
    """``get_runtime()`` for a command that reads a store: never creates one."""
    if _current is None:
        require_existing_store(load_settings())
    return get_runtime()


def current_settings() -> Settings:
    """The settings of the installed runtime, or loaded afresh: without opening any store."""
    return _current.settings if _current is not None else load_settings()


def set_runtime(runtime: Runtime | None) -> Runtime | None:
    """Install a runtime (tests, the CLI); returns the previous one."""
    global _current
    previous, _current = _current, runtime
    if runtime is not None and "state" in runtime.__dict__:
        database.initialize(runtime.state)
    return previous


def _register_the_pipelines_stages() -> None:
    import pipeline.assembly  # noqa: F401 - importing it registers the stages, in order


process_runtime.runs_with(get_runtime, current_settings)
registry.fill_with(_register_the_pipelines_stages)
