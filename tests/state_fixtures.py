"""Fixtures that give a test a real state DB (SQLite file or embedded PostgreSQL)."""

from __future__ import annotations

import contextlib
import uuid

import pytest

from pipeline.config import load_settings
from pipeline.invocation import Invocation
from pipeline.runtime import Runtime, set_runtime


def run_invocation(*tasks) -> bool:
    """One `luigi` invocation, in process, as cron runs it: the tasks join a new Invocation
    (its own start, budgets, seal hints, forced versions, shared reads)."""
    import luigi

    invocation = Invocation()
    return luigi.build([joined(task, invocation) for task in tasks], local_scheduler=True,
                       log_level="WARNING")


def joined(task, invocation: Invocation):
    """``task`` as a member of ``invocation`` (a task that takes none, e.g. DiscoverDockets,
    as it is)."""
    return task.clone(invocation=invocation) if "invocation" in task.param_kwargs else task


def make_runtime(tmp_path, state_url: str = "", **overrides) -> Runtime:
    env = {
        "DOCKETEER_DATA_DIR": str(tmp_path / "data"),
        "DOCKETEER_STATE_URL": state_url,
        "DOCKETEER_DISCOVER": "none",
        "DOCKETEER_EMBEDDER": "hashing",
        "DOCKETEER_PACE_SECONDS": "0",
    }
    env.update({f"DOCKETEER_{k.upper()}": str(v) for k, v in overrides.items()})
    return Runtime(load_settings(env))


@contextlib.contextmanager
def installed(runtime: Runtime):
    """``runtime`` as the process's current one while the block runs; closed after, and the
    one current before put back."""
    previous = set_runtime(runtime)
    try:
        yield runtime
    finally:
        set_runtime(previous)
        runtime.close()


def new_pg_database(pg_server) -> str:
    """A fresh, empty database on the session server, as a postgresql:// URL."""
    import psycopg2

    name = f"t_{uuid.uuid4().hex[:12]}"
    conn = psycopg2.connect(pg_server.get_uri())
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    return pg_server.get_uri(database=name)



@pytest.fixture(params=["sqlite", "postgres"])
def state(request, tmp_path):
    """A runtime whose state DB is SQLite or PostgreSQL: core tests run on both."""
    url = ""
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
    runtime = make_runtime(tmp_path, url)
    runtime.state  # noqa: B018 - open and create the schema
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.close()


@pytest.fixture
def sqlite_state(tmp_path):
    runtime = make_runtime(tmp_path)
    runtime.state  # noqa: B018
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.close()


REAL_KEY = "test-key"


@contextlib.contextmanager
def real_mirror_runtime(tmp_path, pg_server, realdata):
    """The real dockets of ``../shared/realdata/mirror`` served by the stand-in (key
    ``REAL_KEY``), details and files from the mirror: yields (runtime, docket ids), the
    runtime current while the block runs."""
    from devtools.standin_server import StandinServer

    mirror = realdata / "mirror"
    ids = sorted(p.name for p in mirror.glob("raw-data/*/*") if p.is_dir())
    with StandinServer(mirror, api_keys=(REAL_KEY,)) as server:
        runtime = make_runtime(tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base,
                               api_key=REAL_KEY, discover="list", dockets=",".join(ids), source="mirror",
                               mirror_url=str(mirror), extract_workers=1, ocr="false", http_attempts=1)
        with installed(runtime):
            runtime.state  # noqa: B018 - bind the models to this store before any test reads it
            yield runtime, ids
