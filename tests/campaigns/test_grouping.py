"""Campaign matching stays linear in a campaign's size: only a bounded set of each group's
members is compared with later comments, and the groups are those that comparing with every
member gives. Counted with the grouping's counters and the stored band rows."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from devtools.campaign_corpus import campaign_comments, pair_scores, seed_store
from pipeline.campaigns import grouping
from pipeline.campaigns.grouping import CAMPAIGN_CANDIDATES, CAMPAIGN_COMPARES, CAMPAIGN_ESTIMATES
from pipeline.campaigns.stage import group_docket
from pipeline.counters import counters
from pipeline.engine.stage import StageContext
from pipeline.runtime import set_runtime
from pipeline.store import db as state_db
from pipeline.store import dockets
from pipeline.store.models import Campaign, CampaignBand, CampaignMember, Meta
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

    def open_store(name: str, url: str = ""):
        runtime = make_runtime(tmp_path / name, url)
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


def test_band_keys_of_a_member_are_made_from_its_bands_and_again_from_its_row(store_at):
    """Each compared member's band rows are the keys of its signature's bands, and its row
    says which bands they were made with, so that its removal makes the same keys again;
    equal bands give one key, different bands different ones."""
    from pipeline.store.campaign_bands import band_keys, stored_keys

    grouped(store_at("keys"), campaign_comments(D, 120, campaigns=2, seed=9))
    grouper = grouping.Grouper(D, 0.5)
    ranges = grouper.lsh.hashranges
    assert grouping.SIGNATURE_DTYPE == np.uint32  # as ``stored_keys`` reads a stored signature
    rows = {}
    for docket, key, item in CampaignBand.select(CampaignBand.docket, CampaignBand.key, CampaignBand.item).tuples():
        assert docket == D
        rows.setdefault(item, set()).add(key)
    for item, signature, banding in (CampaignMember.select(CampaignMember.item, CampaignMember.signature,
                                                           CampaignMember.banding).tuples()):
        made = band_keys(grouping.signature_values(signature)[None, :], ranges)[0].tolist()
        if banding is None:
            assert item not in rows
        else:
            assert banding == grouper.banding == f"{len(ranges)}x{ranges[0][1]}"
            assert stored_keys([signature], banding)[0].tolist() == made and set(made) == rows[item]
    assert len(rows) > 10
    other = np.ones(128, dtype=np.uint32)
    other[ranges[-1][0]] = 2  # a value of the last band differs
    made = band_keys(np.array([np.ones(128), np.ones(128), other], dtype=np.uint32), ranges)
    assert (made[0] == made[1]).all() and (made[0][:-1] == made[2][:-1]).all()
    assert made[0][-1] != made[2][-1]
    assert len(set(made[0].tolist())) == len(ranges)  # the same values in each band: keys differ


def _as_v17(db) -> None:
    """The store as schema v17 kept band keys: text keys (``band:`` and 16 hex digits of the
    SHA-256 of the band's bytes) under three indexes, no banding on the member rows."""
    ranges = grouping.Grouper(D, 0.5).lsh.hashranges
    banded = list(CampaignMember.select(CampaignMember.docket, CampaignMember.item, CampaignMember.signature)
                  .where(CampaignMember.banding.is_null(False)).tuples())
    db.execute_sql("DROP TABLE campaign_band")
    db.execute_sql("CREATE TABLE campaign_band (docket TEXT NOT NULL, key TEXT NOT NULL, item TEXT NOT NULL)")
    db.execute_sql("CREATE INDEX campaign_band_item ON campaign_band (item)")
    db.execute_sql("CREATE INDEX campaign_band_docket_key ON campaign_band (docket, key)")
    for docket, item, signature in banded:
        raw = bytes.fromhex(signature)
        for band, (start, end) in enumerate(ranges):
            key = f"{band}:{hashlib.sha256(raw[start * 4:end * 4]).hexdigest()[:16]}"
            db.execute_sql("INSERT INTO campaign_band VALUES (?, ?, ?)", (docket, key, item))
    db.execute_sql("DROP INDEX campaign_member_campaign_banding")
    db.execute_sql("ALTER TABLE campaign_member DROP COLUMN banding")
    Meta.update(value="17").where(Meta.key == "schema_version").execute()


def test_a_v17_store_keeps_its_groups_and_places_new_comments_as_before(store_at):
    first = campaign_comments(D, 300, campaigns=2, campaign_share=0.9, seed=12)
    more = campaign_comments(D, 40, campaigns=2, campaign_share=0.9, seed=12, first=301)
    control = store_at("control")  # never downgraded
    grouped(control, first)
    control_io, control_after = grouped(control, more)

    rt = store_at("v17")
    _, before = grouped(rt, first)
    bands = sorted(CampaignBand.select().tuples())
    banding = dict(CampaignMember.select(CampaignMember.item, CampaignMember.banding).tuples())
    _as_v17(rt.state)
    state_db.ensure_schema(rt.state)
    assert state_db.schema_version(rt.state) == state_db.SCHEMA_VERSION
    # Rekeyed from the signatures: the same rows as this version writes, the groups untouched.
    assert sorted(CampaignBand.select().tuples()) == bands
    assert dict(CampaignMember.select(CampaignMember.item, CampaignMember.banding).tuples()) == banding
    assert (sorted(CampaignMember.select(CampaignMember.item, CampaignMember.campaign,
                                         CampaignMember.added_sentences).tuples()),
            sorted(Campaign.select().tuples())) == before
    io, after = grouped(rt, more)
    assert after == control_after
    assert io[CAMPAIGN_COMPARES] == control_io[CAMPAIGN_COMPARES] == 40
    assert io[CAMPAIGN_CANDIDATES] == control_io[CAMPAIGN_CANDIDATES]
    assert io[CAMPAIGN_ESTIMATES] == control_io[CAMPAIGN_ESTIMATES]


@pytest.mark.postgres
def test_a_postgresql_state_db_groups_and_places_as_sqlite_does(store_at, pg_url):
    first = campaign_comments(D, 300, campaigns=2, campaign_share=0.9, seed=12)
    more = campaign_comments(D, 40, campaigns=2, campaign_share=0.9, seed=12, first=301)
    lite = store_at("sqlite")
    _, lite_first = grouped(lite, first)
    lite_io, lite_after = grouped(lite, more)
    postgres = store_at("postgres", pg_url)  # its rows through execute_batch, not executemany
    _, postgres_first = grouped(postgres, first)
    postgres_io, postgres_after = grouped(postgres, more)
    assert postgres_first == lite_first and postgres_after == lite_after
    assert postgres_io[CAMPAIGN_COMPARES] == lite_io[CAMPAIGN_COMPARES] == 40
    assert CampaignBand.select().count() > 0


def test_a_v17_store_keyed_otherwise_is_grouped_again_from_scratch(store_at):
    comments = campaign_comments(D, 120, campaigns=2, seed=13)
    rt = store_at("odd")
    _, before = grouped(rt, comments)
    _as_v17(rt.state)
    rt.state.execute_sql("UPDATE campaign_band SET key = '0:0000000000000000' WHERE key LIKE '0:%'")
    state_db.ensure_schema(rt.state)
    assert CampaignMember.select().count() == Campaign.select().count() == 0
    io, after = grouped(rt, [])  # nothing new: every comment of the docket placed again
    assert io[CAMPAIGN_COMPARES] == 120
    assert after == before
