"""Campaign groups and the export on the real dockets in ../shared/realdata (skipped without
them): every real comment is placed, a "See attached" comment by its attachment's text, and
the export DuckDB reads holds what the state DB holds."""

from __future__ import annotations

import duckdb

from pipeline.campaigns import queries as campaigns
from pipeline.ops import cli
from pipeline.store.models import CampaignMember, Item
from pipeline.tasks import CampaignsAll
from tests.fixtures.state_fixtures import real_mirror_runtime, run_invocation


def test_real_comments_are_grouped_and_exported(tmp_path, pg_server, realdata):
    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, ids):
        assert run_invocation(CampaignsAll())
        comments = {i.key for i in Item.select().where(Item.kind == "comment")
                    if i.key != "DOS-2022-0004-0003"}  # its detail waits for its file
        members = {m.item: m for m in CampaignMember.select()}
        assert set(members) == comments
        # "See attached file(s)": grouped by the Wisconsin letter in its PDF, not the placeholder
        wisconsin = members["ACF-2025-0038-0004"].text
        assert "See attached" not in wisconsin and len(wisconsin) > 1000
        # Different letters from different organisations are not one campaign.
        assert all(c.size == 1 for c in campaigns.campaigns_of(ids[2], min_size=1))

        dest = tmp_path / "export"
        assert cli.main(["export", str(dest)]) == 0
        with duckdb.connect() as con:
            exported = con.execute(f"SELECT count(*), count(campaign_id) FROM "
                                   f"read_parquet('{dest}/*/comments.parquet')").fetchone()
        assert exported == (Item.select().where(Item.kind == "comment").count(), len(members))
