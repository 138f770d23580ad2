"""`docketeer forget --purge` leaves the docket in no table: every table of the state DB and the
index DB, listed from the databases themselves (so a table added later is checked without being
named here), is read whole after every stage has run, and no cell names the docket or one of
its comments; the other docket keeps its rows."""

from __future__ import annotations

from pipeline import tasks
from pipeline.ops import cli
from pipeline.store.models import Item, database
from tests.fixtures.pipeline_fixtures import built_store


def _state_tables() -> dict[str, list[tuple]]:
    names = [name for (name,) in database.execute_sql(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall()]
    return {name: database.execute_sql(f'SELECT * FROM "{name}"').fetchall() for name in names}  # noqa: S608


def _index_tables(index_db) -> dict[str, list[tuple]]:
    with index_db._conn, index_db._conn.cursor() as cur:
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                    "AND table_type = 'BASE TABLE'")
        names = [name for (name,) in cur.fetchall()]
        tables = {}
        for name in names:
            cur.execute(f'SELECT * FROM "{name}"')  # noqa: S608
            tables[name] = cur.fetchall()
    return tables


def _holding(tables: dict[str, list[tuple]], marks: set[str]) -> dict[str, int]:
    """table -> rows one of whose cells holds one of ``marks`` (the docket's id, its comments' keys)."""
    found = {}
    for name, rows in tables.items():
        n = sum(1 for row in rows if any(any(m in str(cell) for m in marks) for cell in row if cell is not None))
        if n:
            found[name] = n
    return found


def test_purge_leaves_the_docket_in_no_table_of_either_database(tmp_path, pg_server, capsys):
    with built_store(tmp_path, pg_server) as store:
        gone, kept = store.dockets
        rt = store.runtime
        for task in (tasks.OrganisationsAll(), tasks.LineageAll(), tasks.TopicsAll()):
            assert store.run(task), task
        marks = {gone} | {key for (key,) in Item.select(Item.key).where(Item.docket == gone).tuples()}
        before = {**_holding(_state_tables(), marks), **_holding(_index_tables(rt.index_db()), marks)}
        # The stages wrote rows of it in their tables (topics, lineage, organisations, campaigns, index).
        assert {"topic_map", "lineage_comment", "organisation_member", "campaign_member", "chunks"} <= set(before), before
        assert cli.main(["forget", gone, "--purge"]) == 0, capsys.readouterr()
        left = {**_holding(_state_tables(), marks), **_holding(_index_tables(rt.index_db()), marks)}
        assert left == {}, left
        kept_marks = {kept}
        assert {"item", "topic_map", "chunks"} <= set(_holding(_state_tables(), kept_marks)
                                                        | _holding(_index_tables(rt.index_db()), kept_marks))


def test_purge_is_refused_while_a_run_holds_the_docket_and_not_after_its_holder_died(tmp_path, pg_server, capsys):
    import subprocess

    from pipeline.engine import leases
    from pipeline.store.models import Lease

    with built_store(tmp_path, pg_server) as store:
        gone = store.dockets[0]
        rows = Item.select().where(Item.docket == gone).count()
        with leases.held("index", gone, 600):  # a run of this process works the docket
            assert cli.main(["forget", gone, "--purge"]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and "a run holds it" in err[0], err
            assert Item.select().where(Item.docket == gone).count() == rows
        dead = subprocess.Popen(["true"])
        dead.wait()
        Lease.insert(stage="index", docket=gone, token="t", holder=f"{leases.holder_name().rsplit(':', 1)[0]}:{dead.pid}",
                     expires_at="9999-01-01T00:00:00Z").execute()  # a killed run's lease, unexpired
        assert cli.main(["forget", gone, "--purge"]) == 0, capsys.readouterr().err
        assert Item.select().where(Item.docket == gone).count() == 0
