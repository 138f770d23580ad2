"""Campaign matching stays linear in a campaign's size: only a bounded set of each group's
members is compared with later comments, and the groups are those that comparing with every
member gives. Counted with the grouping's counters and the stored band rows."""

from __future__ import annotations

import pytest

from devtools.campaign_corpus import campaign_comments, pair_scores, seed_store
from pipeline.campaigns import grouping
from pipeline.campaigns.grouping import CAMPAIGN_COMPARES, CAMPAIGN_ESTIMATES
from pipeline.campaigns.stage import group_docket
from pipeline.counters import counters
from pipeline.engine.stage import StageContext
from pipeline.runtime import set_runtime
from pipeline.store import dockets
from pipeline.store.models import Campaign, CampaignBand, CampaignMember
from tests.fixtures.state_fixtures import make_runtime

D = "ACF-2026-0002"
# The bound these tests' groups outgrow (the default is sized for campaigns of thousands).
COMPARED_PER_GROUP = 32


@pytest.fixture(autouse=True)
def small_bound(monkeypatch):
    monkeypatch.setattr(grouping, "COMPARED_PER_GROUP", COMPARED_PER_GROUP)


@pytest.fixture
def store_at(tmp_path):
    """A runtime in its own folder, made current; closed at the end."""
    opened = []

    def open_store(name: str):
        runtime = make_runtime(tmp_path / name)
        runtime.state  # noqa: B018 - open and create the schema
        set_runtime(runtime)
        opened.append(runtime)
        return runtime

    yield open_store
    set_runtime(None)
    for runtime in opened:
        runtime.close()


def grouped(rt, comments) -> tuple[dict, tuple]:
    seed_store(rt, D, comments)
    with counters.measure() as io:
        group_docket(StageContext(runtime=rt, run_id="test"), dockets.require_docket(D))
    dump = (sorted(CampaignMember.select(CampaignMember.item, CampaignMember.campaign,
                                         CampaignMember.added_sentences).tuples()),
            sorted(Campaign.select().tuples()))
    return io, dump


def compared_per_group() -> dict[str, int]:
    counts: dict[str, set[str]] = {}
    for item, campaign in (CampaignBand.select(CampaignBand.item, CampaignMember.campaign)
                           .join(CampaignMember, on=(CampaignMember.item == CampaignBand.item)).tuples()):
        counts.setdefault(campaign, set()).add(item)
    return {campaign: len(items) for campaign, items in counts.items()}


def test_the_same_groups_as_comparing_with_every_member_for_far_fewer_comparisons(store_at, monkeypatch):
    comments = campaign_comments(D, 600, campaigns=3, campaign_share=0.9, seed=4)
    io, dump = grouped(store_at("bounded"), comments)
    compared = compared_per_group()
    sizes = dict(Campaign.select(Campaign.id, Campaign.size).tuples())
    assert max(sizes.values()) > 3 * COMPARED_PER_GROUP  # big groups, few of their members compared
    # (A group merged into another brings its compared members along.)
    assert max(compared.values()) <= 2 * COMPARED_PER_GROUP
    precision, recall = pair_scores({c.key: c.campaign for c in comments},
                                    {m[0]: m[1] for m in dump[0]})
    assert precision >= 0.95 and recall >= 0.95

    # Every member compared (as before the bound): the very same groups, ids and signals.
    monkeypatch.setattr(grouping, "REPRESENTED_AT", 2.0)
    monkeypatch.setattr(grouping, "COMPARED_PER_GROUP", 10**9)
    every_io, every_dump = grouped(store_at("every"), comments)
    assert every_dump == dump
    assert io[CAMPAIGN_COMPARES] == every_io[CAMPAIGN_COMPARES] == 600
    assert io[CAMPAIGN_ESTIMATES] * 3 < every_io[CAMPAIGN_ESTIMATES]


def test_comparisons_per_comment_do_not_grow_with_the_campaign(store_at):
    per_comment = []
    for n in (300, 1200):
        io, _ = grouped(store_at(f"n{n}"), campaign_comments(D, n, campaigns=2, campaign_share=0.95, seed=5))
        per_comment.append(io[CAMPAIGN_ESTIMATES] / n)
    # Comparing with every member, four times the campaign is four times the work per comment.
    assert per_comment[1] < 1.5 * per_comment[0], per_comment


def test_later_comments_are_compared_with_the_stored_bounded_set_and_match_a_rebuild(store_at):
    first = campaign_comments(D, 400, campaigns=2, campaign_share=0.9, seed=6)
    more = campaign_comments(D, 60, campaigns=2, campaign_share=0.9, seed=6, first=401)
    rt = store_at("incremental")
    grouped(rt, first)
    io, incremental = grouped(rt, more)
    assert io[CAMPAIGN_COMPARES] == 60
    assert max(compared_per_group().values()) <= 2 * COMPARED_PER_GROUP
    _, rebuilt = grouped(store_at("rebuild"), first + more)
    assert rebuilt == incremental


def test_signatures_hash_each_distinct_shingle_once_and_equal_datasketchs(monkeypatch):
    from datasketch import MinHash

    from pipeline.campaigns import text as campaign_text

    shingle_sets = [campaign_text.shingles(campaign_text.normalise(c.attachment or c.body, c.submitter))
                    for c in campaign_comments(D, 120, campaigns=2, seed=7)]
    hashed = []
    monkeypatch.setattr(grouping, "sha1_hash32", lambda data: hashed.append(data) or _sha1_hash32(data))
    signatures = grouping.signatures_of(shingle_sets)
    distinct = set().union(*shingle_sets)
    # A form letter's copies share their shingles: each is hashed once, not once per copy.
    assert len(hashed) == len(distinct) < sum(map(len, shingle_sets)) / 2
    expected = MinHash.bulk([[s.encode() for s in sh] for sh in shingle_sets], num_perm=grouping.NUM_PERM)
    assert all((a.hashvalues == b.hashvalues).all() for a, b in zip(signatures, expected, strict=True))


def _sha1_hash32(data: bytes) -> int:
    from datasketch.hashfunc import sha1_hash32

    return sha1_hash32(data)


def test_a_docket_grouped_from_scratch_writes_band_keys_for_its_compared_members_alone(store_at):
    comments = campaign_comments(D, 300, campaigns=2, campaign_share=0.9, seed=8)
    grouped(store_at("scratch"), comments)
    banded = {item for (item,) in CampaignBand.select(CampaignBand.item).tuples()}
    assert 0 < len(banded) < len(comments) / 2
    assert CampaignBand.select().count() == len(banded) * len(grouping.Grouper(D, 0.5).lsh.hashranges)


def test_pair_scores_count_the_pairs_without_listing_them():
    truth = {"a": "x", "b": "x", "c": "x", "d": "y", "e": "y", "f": None}
    found = {"a": "1", "b": "1", "c": "2", "d": "2", "e": "2", "f": "3"}
    # planted pairs ab ac bc de; found pairs ab cd ce de: both ab de
    assert pair_scores(truth, found) == (2 / 4, 2 / 4)
