"""Campaign groups and the export on the real dockets in ../shared/realdata (skipped without
them): every real comment is placed, a "See attached" comment by its attachment's text, and
the export DuckDB reads holds what the state DB holds; on the CDO pilot's dockets campaigns are
the letters read by eye and hold the letters people added notes to."""

from __future__ import annotations

import duckdb
import pytest

from devtools import cdo_letters
from devtools.campaign_corpus import seed_store
from pipeline.campaigns import queries as campaigns
from pipeline.campaigns.stage import group_docket
from pipeline.engine.stage import StageContext
from pipeline.ops import cli
from pipeline.runtime import set_runtime
from pipeline.store import dockets, item_states
from pipeline.store.models import CampaignMember, Item, ItemState
from pipeline.tasks import CampaignsAll
from tests.fixtures.state_fixtures import make_runtime, real_mirror_runtime, run_invocation


def test_real_comments_are_grouped_and_exported(tmp_path, pg_server, realdata):
    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, ids):
        assert run_invocation(CampaignsAll())
        comments = {i.key for i in Item.select().where(Item.kind == "comment")
                    if i.key != "DOS-2022-0004-0003"}  # its detail waits for its file
        members = {m.item: m for m in CampaignMember.select()}
        # every comment is placed but those with too few words of their own: "See attached."
        # whose file the mirror does not hold, and slogans
        short = {r.item for r in ItemState.select().where(
            (ItemState.stage == "campaigns") & (ItemState.state == "skipped")
            & ItemState.reason.startswith("too short to compare"))}
        assert set(members) == comments - short
        assert "USTR-2015-0010-0002" in short
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


# --- the CDO pilot's dockets: real form letters with real notes ---------------------------------

@pytest.fixture
def cdo_store(tmp_path, realdata):
    """The three CDO dockets' comments seeded as extract leaves them and grouped: yields the
    real data's folder and, per docket, (texts, item -> campaign)."""
    runtime = make_runtime(tmp_path)
    runtime.state  # noqa: B018 - open and create the schema
    previous = set_runtime(runtime)
    try:
        grouped = {}
        for docket in cdo_letters.DOCKETS:
            comments = cdo_letters.comments(realdata, docket)
            seed_store(runtime, docket, comments)
            group_docket(StageContext(runtime=runtime, run_id="test"), dockets.require_docket(docket))
            members = CampaignMember.select(CampaignMember.item, CampaignMember.campaign).where(
                CampaignMember.docket == docket).tuples()
            grouped[docket] = ({c.key: c.body for c in comments}, dict(members))
        yield realdata, grouped
    finally:
        set_runtime(previous)
        runtime.close()


@pytest.mark.parametrize("docket", cdo_letters.DOCKETS)
def test_cdo_campaigns_are_letters_read_by_eye_and_hold_letters_with_notes(cdo_store, docket):
    realdata, grouped = cdo_store
    texts, found = grouped[docket]
    scores = cdo_letters.scores(realdata, docket, texts, found)
    assert scores["precision_letters"] >= 0.98, scores
    assert scores["containment_recall"] >= 0.9, scores


def test_cdo_letters_with_a_note_join_and_slogans_join_nothing(cdo_store):
    _, grouped = cdo_store
    texts, found = grouped["USDA-2020-0009"]
    # "unfairly favors" with a sentence swapped for a paragraph of the commenter's own
    assert found["USDA-2020-0009-row00010009"] == found["USDA-2020-0009-09000064842f9e61"]
    # the humanist letter after a note that ends "Thank you." (not a signature: a letter follows)
    assert found["USDA-2020-0009-09000064843836dc"] == found["USDA-2020-0009-090000648437473d"]
    texts, found = grouped["EPA-HQ-OA-2018-0259"]
    # the UCS letter in the middle of a long addition of the commenter's own
    assert found["EPA-HQ-OA-2018-0259-0900006484615c9d"] == found["EPA-HQ-OA-2018-0259-0900006484469c1d"]
    # "End secret science now!!" (four words), six times: too short to judge, no campaign
    slogans = [k for k, t in texts.items() if cdo_letters.plain(t) in ("end secret science now", "end secret science")]
    assert len(slogans) >= 5 and not set(slogans) & set(found)
    reasons = item_states.rows_in_states("campaigns", "EPA-HQ-OA-2018-0259", ("skipped",))
    assert all(reasons[k].reason.startswith("too short to compare") for k in slogans)
