"""`docketeer export`: per-docket Parquet and CSV that DuckDB reads with counts equal to the
state DB's; a second export writes nothing; one changed comment rewrites only its docket."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest

import pipeline
from devtools import corpus_changes
from pipeline.counters import COMBINED_READS, counters
from pipeline.ops import cli
from pipeline.ops.export import EXPORT_FILES_WRITTEN, readme
from pipeline.store.models import Attachment, CampaignMember, Docket, Item, ItemState
from tests.fixtures.pipeline_fixtures import built_store


def comment_count(docket: str | None = None) -> int:
    query = Item.select().where(Item.kind == "comment")
    return (query.where(Item.docket == docket) if docket else query).count()


def mtimes(folder) -> dict:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def scalar(sql: str):
    with duckdb.connect() as con:
        return con.execute(sql).fetchone()[0]


def test_export_is_read_by_duckdb_and_rewritten_only_where_data_changed(tmp_path, pg_server, capsys):
    with built_store(tmp_path, pg_server, dockets=2, comments=6) as store:
        assert store.run(pipeline.CampaignsAll(docket=",".join(store.dockets)))
        dest = tmp_path / "export"
        assert cli.main(["export", str(dest)]) == 0
        assert "exported 2 docket(s)" in capsys.readouterr().out

        assert scalar(f"SELECT count(*) FROM read_parquet('{dest}/*/comments.parquet')") == comment_count()
        assert scalar(f"SELECT count(*) FROM read_csv_auto('{dest}/*/comments.csv')") == comment_count()
        first = store.dockets[0]
        assert scalar(f"SELECT count(*) FROM read_parquet('{dest}/{first}/comments.parquet')") == \
            comment_count(first)
        comment_keys = Item.select(Item.key).where(Item.kind == "comment")
        assert scalar(f"SELECT count(*) FROM read_parquet('{dest}/*/attachments.parquet')") == \
            Attachment.select().where(Attachment.item.in_(comment_keys)).count()
        assert scalar(f"SELECT sum(attachment_count) FROM read_parquet('{dest}/*/comments.parquet')") == \
            Attachment.select().where(Attachment.item.in_(comment_keys)).count()
        assert scalar(f"SELECT sum(size) FROM read_parquet('{dest}/*/campaigns.parquet')") == \
            CampaignMember.select().count()
        assert scalar(f"SELECT count(*) FROM read_parquet('{dest}/*/comments.parquet') "
                      "WHERE text_chars IS NULL") == 0
        # in no campaign: the comments too short to compare ("See attached file(s)", its file unreadable)
        assert scalar(f"SELECT count(*) FROM read_parquet('{dest}/*/comments.parquet') "
                      "WHERE campaign_id IS NULL") == ItemState.select().where(
            (ItemState.stage == "campaigns") & (ItemState.state == "skipped")).count()
        assert scalar(f"SELECT count(*) FROM read_parquet('{dest}/*/attachments.parquet') "
                      "WHERE state = 'ok' AND NOT text_chars > 0") == 0
        assert (dest / "README.txt").read_text() == readme()

        before = mtimes(dest)
        with counters.measure() as io:
            assert cli.main(["export", str(dest)]) == 0
        assert "0 docket(s)" in capsys.readouterr().out
        assert io.get(EXPORT_FILES_WRITTEN, 0) == 0 and io.get(COMBINED_READS, 0) == 0
        assert mtimes(dest) == before

        changed = sorted(k for (k,) in Item.select(Item.key).where(
            (Item.docket == first) & (Item.kind == "comment") & (Item.body.is_null(False))).tuples())[0]
        corpus_changes.modify_comments(store.root / "mirror", [changed], datetime(2026, 3, 1, tzinfo=UTC))
        store.server.reload()
        Docket.update(last_pull_at="2000-01-01T00:00:00.000000Z").execute()  # a new window
        assert store.run(pipeline.CampaignsAll(docket=",".join(store.dockets)))
        with counters.measure() as io:
            assert cli.main(["export", str(dest)]) == 0
        after = mtimes(dest)
        rewritten = {p for p in after if after[p] != before.get(p)}
        assert rewritten and {p.parent.name for p in rewritten} == {first}
        assert io[EXPORT_FILES_WRITTEN] == len(rewritten) == 17  # 8 tables x 2 formats + export.json
        body = scalar(f"SELECT body FROM read_parquet('{dest}/{first}/comments.parquet') "
                      f"WHERE comment_id = '{changed}'")
        assert "[revised" in body


def test_export_of_one_docket_in_one_format_and_bad_requests_are_one_line(tmp_path, pg_server, capsys):
    with built_store(tmp_path, pg_server, dockets=2, comments=4) as store:
        dest = tmp_path / "out"
        assert cli.main(["export", str(dest), "--docket", store.dockets[1], "--format", "csv"]) == 0
        assert sorted(p.name for p in (dest / store.dockets[1]).iterdir()) == [
            "attachments.csv", "campaigns.csv", "comment_organisations.csv", "comments.csv", "export.json", "positions.csv",
            "rule_phases.csv", "sections.csv", "topics.csv"]
        assert not (dest / store.dockets[0]).exists()
        assert cli.main(["export", str(dest), "--docket", "NOPE-2026-0001"]) == 2
        assert capsys.readouterr().err.strip() == "docketeer: unknown docket(s): NOPE-2026-0001"
        with pytest.raises(SystemExit) as bad:
            cli.main(["export", str(dest), "--format", "xlsx"])
        assert bad.value.code == 2
