"""Campaign groups: the text rules, the grouping on a planted corpus (precision, recall),
incremental placement (counted), ids stable across a rebuild, the read queries, and the
CampaignGroups task over the real chain."""

from __future__ import annotations

import re

import pytest

import pipeline
from devtools.campaign_corpus import PlantedComment, campaign_comments, pair_scores, seed_store
from pipeline.campaigns import queries as campaigns
from pipeline.campaigns import text
from pipeline.campaigns.grouping import CAMPAIGN_COMPARES
from pipeline.campaigns.stage import group_docket
from pipeline.counters import COMBINED_READS, ROWS_WRITTEN, STAGE_CALLS, counters
from pipeline.engine import markers, registry
from pipeline.engine.invocation import Invocation
from pipeline.engine.stage import StageContext
from pipeline.ops import verify
from pipeline.runtime import set_runtime
from pipeline.store import dockets, item_states, items
from pipeline.store.campaign_bands import stored_keys
from pipeline.store.models import Campaign, CampaignBand, CampaignMember
from tests.fixtures.pipeline_fixtures import built_store
from tests.fixtures.state_fixtures import make_runtime

D = "ACF-2026-0001"


def group(rt, force: bool = False):
    with counters.measure() as io:
        result = group_docket(StageContext(runtime=rt, run_id="test", force=force),
                              dockets.require_docket(D))
    return result, io


def membership() -> dict[str, str]:
    return dict(CampaignMember.select(CampaignMember.item, CampaignMember.campaign).tuples())


def groups_dump() -> tuple[list, list]:
    return (sorted(CampaignMember.select(CampaignMember.item, CampaignMember.campaign,
                                         CampaignMember.added_sentences).tuples()),
            sorted(Campaign.select().tuples()))


# --- the text a comment is compared by ---------------------------------------------------------

LETTER = ("Dear Secretary Jones,\n\nProtect rural hospitals. Keep the wage index floor.\n\n"
          "Sincerely,\nMaria Lopez\nAustin, TX")


def test_salutation_signature_and_own_name_are_not_compared():
    other = "To whom it may concern:\n\nPROTECT rural hospitals; keep the wage-index floor!\n\nThanks,\nBo Li"
    assert text.normalise(LETTER, "Maria Lopez") == text.normalise(other, "Bo Li")
    assert text.normalise("Maria asks: protect rural hospitals.", "Maria Lopez") == "asks protect rural hospitals"


def test_see_attached_bodies_point_to_the_attachment_and_letters_do_not():
    assert text.points_to_attachment("See attached file(s)")
    assert text.points_to_attachment("Please find my comments attached.")
    assert text.points_to_attachment("")
    assert not text.points_to_attachment(LETTER)


def test_added_sentences_are_what_the_representative_lacks():
    member = LETTER.replace("Keep the wage index floor.", "Keep the wage index floor. My clinic closed in May.")
    assert text.added_sentences(member, LETTER) == ["My clinic closed in May."]
    assert text.added_sentences(LETTER, LETTER) == []


@pytest.mark.parametrize("said", [LETTER, "a.\n\n b", "a \n\nb", "a.. b", "x!\t\ny", "end.", ".  ", "\n\n\n",
                                  "q? \n\n r", "a\n\n. b", "", "a.b. c", "x\r\n\r\ny. z", "Why?!  Yes."])
def test_sentences_split_where_a_look_behind_for_the_stop_splits(said):
    assert text.split_sentences(said) == re.split(r"(?<=[.!?])\s+|\n{2,}", said)


def test_added_sentences_by_paragraph_are_the_texts_sentences_the_representative_lacks():
    member = LETTER.replace("Keep the wage index floor.", "Keep the wage index floor. My clinic closed.")
    texts = [member, LETTER, "A. \n\nB", "A\n\n\n. B", "A.\n \nB", "A. \n\n  B. My clinic closed.", "\n\nA.\n\n"]
    known, seen = text.known_sentences(LETTER), {}
    for said in texts + texts:  # the second time from the shared paragraphs
        expected = [s for s in text.sentences(said) if text.words(s) and " ".join(text.words(s)) not in known]
        assert text.sentences_not_in(said, known, seen) == text.sentences_not_in(said, known) == expected
    assert text.sentences_not_in(member, known) == ["My clinic closed."]


# --- grouping a planted corpus -------------------------------------------------------------------

def test_planted_campaigns_are_found_with_high_precision_and_recall(rt):
    planted = campaign_comments(D, 300)
    seed_store(rt, D, planted)
    result, io = group(rt)
    assert result.counts["placed"] == 300 and io[CAMPAIGN_COMPARES] == 300
    attached = sum(1 for c in planted if c.attachment)
    assert attached and io[COMBINED_READS] == attached  # only "see attached" bodies read combined.md
    precision, recall = pair_scores({c.key: c.campaign for c in planted}, membership())
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)


def test_a_rerun_compares_and_writes_nothing(rt):
    seed_store(rt, D, campaign_comments(D, 120))
    group(rt)
    before = groups_dump()
    result, io = group(rt)
    assert result.counts == {} and io.get(CAMPAIGN_COMPARES, 0) == 0
    assert io.get(ROWS_WRITTEN, 0) == 0 and io.get(COMBINED_READS, 0) == 0
    assert groups_dump() == before


def test_new_comments_are_compared_alone_and_match_a_rebuild_with_the_same_ids(rt, tmp_path):
    first, more = campaign_comments(D, 200), campaign_comments(D, 20, first=201)
    seed_store(rt, D, first)
    group(rt)
    seed_store(rt, D, more)
    result, io = group(rt)
    assert io[CAMPAIGN_COMPARES] == 20 and result.counts["placed"] == 20
    incremental = groups_dump()
    precision, recall = pair_scores({c.key: c.campaign for c in first + more}, membership())
    assert precision >= 0.95 and recall >= 0.95

    scratch = make_runtime(tmp_path / "scratch")
    scratch.state  # noqa: B018
    set_runtime(scratch)
    try:
        seed_store(scratch, D, first + more)
        group(scratch)
        assert groups_dump() == incremental  # same groups, same ids, same representatives
    finally:
        set_runtime(rt)
        scratch.close()


def test_a_changed_comment_is_placed_again_and_its_old_group_shrinks(rt):
    planted = campaign_comments(D, 150)
    seed_store(rt, D, planted)
    group(rt)
    founder = campaigns.campaign_of_item(next(c.key for c in planted if c.campaign == "campaign-0"))
    old_members = campaigns.members_of(founder.id)
    assert old_members[0].item == founder.id  # a group's id is its earliest member's
    rewrites = {old_members[5].item: "An entirely different comment about ferry tolls on the island route.",
                old_members[0].item: "Bus routes to the clinic matter more to my town than any payment rule."}
    for leaving in (old_members[5], old_members[0]):  # a member, then the founder, rewritten
        before = campaigns.campaign_of_item(old_members[1].item)
        original = next(c for c in planted if c.key == leaving.item)
        seed_store(rt, D, [PlantedComment(leaving.item, original.posted_date, original.submitter,
                                          rewrites[leaving.item], "", None)])
        result, io = group(rt)
        assert io[CAMPAIGN_COMPARES] == 1
        now = campaigns.campaign_of_item(leaving.item)
        assert now.id == leaving.item and now.size == 1
        after = campaigns.campaign_of_item(old_members[1].item)
        assert after.size == before.size - 1
    assert after.id == old_members[1].item  # the founder left: the next earliest names the group
    assert after.id in {m.item for m in campaigns.members_of(after.id)}

    emptied = next(c for c in planted if c.key == old_members[2].item)
    seed_store(rt, D, [PlantedComment(emptied.key, emptied.posted_date, emptied.submitter, "", "", None)])
    result, _ = group(rt)
    assert result.counts == {"no_text": 1} and campaigns.campaign_of_item(emptied.key) is None
    assert campaigns.campaign_of_item(old_members[1].item).size == after.size - 1
    # Those taken out left no band row behind: each row is a compared member's, made again
    # from its signature as its row says.
    banded = (CampaignMember.select(CampaignMember.item, CampaignMember.signature, CampaignMember.banding)
              .where(CampaignMember.banding.is_null(False)).tuples())
    assert sorted(CampaignBand.select(CampaignBand.key, CampaignBand.item).tuples()) == sorted(
        (key, item) for item, signature, banding in banded for key in stored_keys([signature], banding)[0].tolist())


def test_a_see_attached_comment_joins_the_campaign_of_its_attachment(rt):
    letter = ("Dear Administrator,\n\nWe oppose the cut to rural payments because our clinic serves "
              "nine towns and the nearest hospital is two hours away in winter storms.\n\n"
              "The wage index floor keeps nurses here and should stay as it is today.\n\nSincerely,\n")
    comments = [PlantedComment(f"{D}-0000{i}", f"2026-01-0{i}T00:00:00Z", name, body, attachment, "c")
                for i, (name, body, attachment) in enumerate([
                    ("Ann Ray", letter + "Ann Ray", ""),
                    ("Bo Li", "See attached file(s)", letter + "Bo Li"),
                    ("Cy Oz", letter.upper() + "Cy Oz", "")], start=1)]
    seed_store(rt, D, comments)
    group(rt)
    assert set(membership().values()) == {f"{D}-00001"}  # the earliest member's id


def test_read_queries_give_groups_largest_first_with_members_and_their_signal(rt):
    seed_store(rt, D, campaign_comments(D, 150))
    group(rt)
    found = campaigns.campaigns_of(D, limit=3)
    assert [c.size for c in found] == sorted((c.size for c in found), reverse=True) and found[0].size > 5
    biggest = found[0]
    members = campaigns.members_of(biggest.id)
    assert len(members) == biggest.size and members[0].item == biggest.id
    assert biggest.first_seen == members[0].posted_date <= biggest.last_seen
    assert any(m.added_sentences for m in members)  # someone wrote a sentence of their own
    rep = next(m for m in members if m.item == biggest.representative)
    assert rep.added_sentences == [] and biggest.representative_text == rep.text
    assert campaigns.campaign_of_item(members[-1].item).id == biggest.id
    assert campaigns.campaign_of_item("NOPE-2026-0001-0001") is None


def test_the_web_pages_read_the_stored_campaigns(rt):
    from pipeline.reading import campaigns as web_campaigns

    assert not web_campaigns.available()  # nothing grouped yet: the pages show no campaign parts
    seed_store(rt, D, campaign_comments(D, 150))
    group(rt)
    biggest = campaigns.campaigns_of(D, limit=1)[0]
    members = [m.item for m in campaigns.members_of(biggest.id)]
    assert web_campaigns.available()
    assert web_campaigns.campaign_members(biggest.id) == members
    assert web_campaigns.campaign_members("NOPE") is None
    info = web_campaigns.campaign_info(members[:3] + ["NOPE-2026-0001-0001"])
    assert set(info) == set(members[:3])
    assert {v["id"] for v in info.values()} == {biggest.id} and info[members[0]]["size"] == biggest.size
    top = web_campaigns.largest_campaigns(D, 2)
    assert top[0] == {"id": biggest.id, "size": biggest.size, "first_seen": biggest.first_seen,
                      "last_seen": biggest.last_seen, "opening": web_campaigns.opening(biggest.representative_text),
                      "submissions": biggest.size}  # no member stands for duplicates: one submission each
    assert top[0]["opening"] and top[0]["opening"].split()[0] in biggest.representative_text


# --- the task over the real chain ----------------------------------------------------------------

def test_index_all_groups_once_then_campaigns_all_is_pruned_and_a_new_threshold_redoes_it(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=1, comments=8) as store:
        docket = store.dockets[0]
        # IndexAll (the store's build) grouped the campaigns after the index.
        assert markers.read_marker(docket, "campaigns").version == 1
        # every comment is placed but the "See attached file(s)" ones whose file has no text
        skipped = item_states.rows_in_states("campaigns", docket, ("skipped",))
        assert campaigns.count_members(docket) == 8 - len(skipped)
        assert all(r.reason.startswith("too short to compare") for r in skipped.values())
        assert set(items.bodies_of(docket, list(skipped)).values()) <= {"See attached file(s)"}
        wrapper = pipeline.CampaignsAll(docket=docket)
        with counters.measure() as io:
            assert store.run(wrapper)
        assert io.get(STAGE_CALLS, 0) == 0  # pruned by its target: no task ran
        report = verify.run_checks(store.runtime)
        assert report.passed and "campaigns markers" in [c.name for c in report.checks], \
            "\n".join(report.lines())

        with counters.measure() as io:
            assert store.run(pipeline.CampaignsAll(docket=docket, force=True))
        assert io[STAGE_CALLS] == 1 and io[CAMPAIGN_COMPARES] == 8 - len(skipped)
        assert markers.read_marker(docket, "campaigns").version == 2

        stage = registry.get("campaigns")
        raised = make_runtime(tmp_path, index_url=store.index_url, campaign_threshold="0.8")
        assert registry.marker_store(stage, store.runtime).probe(docket).expected_input != \
            registry.marker_store(stage, raised).probe(docket).expected_input
        raised.close()
        assert item_states.states_for_docket("campaigns", docket)
        task = pipeline.CampaignGroups(docket=docket, invocation=Invocation())
        assert task.complete()


def test_grouping_and_placing_later_comments_work_on_both_state_databases(state):
    first, more = campaign_comments(D, 80), campaign_comments(D, 10, first=81)
    seed_store(state, D, first)
    group(state)
    seed_store(state, D, more)
    _, io = group(state)
    assert io[CAMPAIGN_COMPARES] == 10
    precision, recall = pair_scores({c.key: c.campaign for c in first + more}, membership())
    assert precision >= 0.95 and recall >= 0.95
    assert sum(c.size for c in campaigns.campaigns_of(D, min_size=1)) == 90


def test_see_attached_comments_whose_files_wait_are_not_one_campaign_until_a_file_arrives(rt):
    """Grouped by "See attached file(s)" alone, every comment whose files the mirror lacks
    would be one form letter: they wait, with nothing to compare, and one is placed once its
    file's text arrives (its extract hash changes)."""
    letter = ("Dear Administrator,\n\nWe oppose the cut to rural payments because our clinic serves "
              "nine towns and the nearest hospital is two hours away in winter storms.\n\nSincerely,\n")
    waiting = [PlantedComment(f"{D}-0000{i}", f"2026-01-0{i}T00:00:00Z", name, "See attached file(s)", "", "c")
               for i, name in enumerate(["Ann Ray", "Bo Li", "Cy Oz"], start=1)]
    seed_store(rt, D, waiting)
    for comment in waiting:  # their records read, their files waiting for the mirror
        item_states.transition("backfill", comment.key, D, "retry", run_id="test", content_hash="h")
    result, _ = group(rt)
    assert result.counts == {"no_text": 3} and membership() == {}
    arrived = waiting[0]
    seed_store(rt, D, [PlantedComment(arrived.key, arrived.posted_date, arrived.submitter, "See attached file(s)",
                                      letter + arrived.submitter, "c")])
    item_states.transition("backfill", arrived.key, D, "ok", run_id="test", content_hash="h2")
    result, _ = group(rt)
    assert result.counts.get("placed") == 1 and set(membership()) == {arrived.key}
