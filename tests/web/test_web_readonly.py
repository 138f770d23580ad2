"""``docketeer serve`` makes its connections refuse writes once the stores are open."""

from __future__ import annotations

import peewee
import psycopg2.errors
import pytest

from pipeline.runtime import set_runtime
from pipeline.store.models import Docket
from pipeline.web.server import read_only
from tests.fixtures.state_fixtures import make_runtime

pytestmark = pytest.mark.postgres


def test_the_servers_connections_refuse_writes(tmp_path, pg_url):
    runtime = make_runtime(tmp_path, index_url=pg_url)
    previous = set_runtime(runtime)
    try:
        read_only(runtime)
        with pytest.raises(peewee.OperationalError, match="readonly|read-only|query_only"):
            Docket.insert(id="CMS-2026-9999").execute()
        with pytest.raises(psycopg2.errors.ReadOnlySqlTransaction):
            runtime.index_db().write_docket_marker("comments", "CMS-2026-9999", None, 1, "x")
        assert runtime.index_db().docket_markers("comments") == {}  # reads still work
        # And a statement of the page's is bounded in time: a search never holds the others.
        with pytest.raises(psycopg2.errors.QueryCanceled), runtime.index_db()._conn.cursor() as cur:
            cur.execute("SELECT pg_sleep(30)")
        runtime.index_db()._conn.rollback()
        assert runtime.index_db().docket_markers("comments") == {}
    finally:
        set_runtime(previous)
        runtime.close()
