"""The scale corpus generator: a generated docket goes through every stage from the mirror
with every comment accounted for and its planted letters found at their shares; the same
seed writes the same bytes whatever the number of workers; a listing names the dockets asked
for, each once, as the mirror's keys and folders."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

import pipeline
from devtools import mirror_layout as layout
from devtools.scale_corpus import (
    PROFILES,
    ScaleDocket,
    Truth,
    letter_plan,
    listing_name,
    main,
    write_listing,
    write_scale_docket,
)
from pipeline.campaigns.text import points_to_attachment
from pipeline.sources.mirror import LocalMirror, listing_of
from pipeline.store.models import CampaignMember, Item, ItemState
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database, run_invocation

DOCKET = "EPA-HQ-OAR-2026-0001"
NO_API = "http://127.0.0.1:9/v4"  # nothing listens: one API call would fail the run
SHARE_TOLERANCE = 0.02  # of the docket's comments: a letter's found share against its planted one


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_a_generated_docket_goes_through_every_stage_and_its_letters_are_found(tmp_path, pg_server, monkeypatch):
    mirror = tmp_path / "mirror"
    truth = write_scale_docket(mirror, DOCKET, 300, profile="mass-mail-95", seed=3, attachment_share=0.05)
    assert truth.attachments > 0
    monkeypatch.delenv("REGULATIONS_GOV_API_KEY", raising=False)
    monkeypatch.delenv("DOCKETEER_API_KEY", raising=False)
    runtime = make_runtime(tmp_path, index_url=new_pg_database(pg_server), api_base=NO_API, source="mirror",
                           mirror_url=str(mirror), discover="list", dockets=DOCKET, extract_workers=1,
                           ocr="false", http_attempts=1)
    with installed(runtime):
        assert run_invocation(pipeline.IndexAll(docket=DOCKET))
        comments = {i.key for i in Item.select().where((Item.docket == DOCKET) & (Item.kind == "comment"))}
        assert comments == set(truth.comment_ids)
        for stage in ("backfill", "extract", "campaigns"):
            rows = {r.item: r.state for r in ItemState.select().where(ItemState.stage == stage)}
            assert comments <= set(rows), stage
            assert Counter(rows[c] for c in comments) == Counter({"ok": 300}), stage
        indexed = runtime.index_db().state_for_docket("comments", DOCKET)
        assert set(indexed) == comments
        found = dict(CampaignMember.select(CampaignMember.item, CampaignMember.campaign).tuples())
    assert_letters_found(truth, found)


def assert_letters_found(truth: Truth, found: dict[str, str]) -> None:
    """Each planted letter is one found campaign holding its members and no one else's, at
    its planted share (within the tolerance); comments of people's own join none that big."""
    total = len(truth.comment_ids)
    for letter, share in enumerate(truth.letter_shares):
        members = truth.members(letter)
        campaign, held = Counter(found.get(m) for m in members).most_common(1)[0]
        group = {item for item, c in found.items() if c == campaign}
        assert campaign is not None and group <= set(members), letter
        assert abs(len(group) / total - share) <= SHARE_TOLERANCE, (letter, len(group), share)
    own = [c for c, letter in zip(truth.comment_ids, truth.letter_of, strict=True) if letter < 0]
    assert max(Counter(found[c] for c in own if c in found).values(), default=0) <= 2


def test_the_mirror_reads_every_record_and_file_the_generator_wrote(tmp_path):
    truth = write_scale_docket(tmp_path, DOCKET, 120, profile="organic", seed=5, attachment_share=0.3)
    mirror = LocalMirror(tmp_path)
    listing = mirror.docket_listing(DOCKET)
    assert not listing.rejected and not listing.ignored
    assert set(listing.comments) == set(truth.comment_ids) and set(listing.documents) == {f"{DOCKET}-0001"}
    attached = {item for item, files in listing.attachments.items() if item != f"{DOCKET}-0001"}
    assert len(attached) == truth.attachments
    bodies = {}
    for comment_id, key in listing.comments.items():
        record = mirror.read_json(key)
        data = record["data"]
        assert data["id"] == comment_id and data["attributes"]["docketId"] == DOCKET
        files = [f["fileUrl"].rsplit("/", 1)[1] for i in record.get("included", [])
                 for f in i["attributes"]["fileFormats"]]
        assert files == [a.stored_name for a in listing.attachments.get(comment_id, [])]
        bodies[comment_id] = data["attributes"]["comment"]
    # a file's bytes are reused, not made again for each comment
    sizes = {a.size for item in attached for a in listing.attachments[item]}
    assert len(sizes) <= 4 + len(PROFILES["organic"].letter_shares)
    # comments of people's own are varied: hardly any two say the same
    own = [bodies[c] for c, letter in zip(truth.comment_ids, truth.letter_of, strict=True) if letter < 0]
    assert len(set(own)) == len(own) and not any(points_to_attachment(b) for b in own)
    assert len({len(b.split()) for b in own}) > len(own) // 3


def test_a_record_from_its_template_is_the_record_serialised(tmp_path):
    writer = ScaleDocket(tmp_path, DOCKET, profile=PROFILES["organic"], seed=1, attachment_share=0.0,
                         start=datetime(2026, 3, 2, 5, tzinfo=UTC))
    writer.write_records()
    for organization, body in ((None, 'He said "no" \\ twice.\n\nCafé — 100 %'), ("Sierra Club", "")):
        fields = {"id": f"{DOCKET}-000002", "first_name": "Ana", "last_name": "Ruiz", "organization": organization,
                  "title": "Comment from Ana Ruiz", "comment": body, "posted": "2026-03-03T05:00:00Z",
                  "modified": "2026-03-03T17:12:09Z", "received": "2026-03-01T05:00:00Z",
                  "tracking": "abc-defg-hijk", "object_id": "09000064c0000002"}
        assert writer.template.render(fields) == json.dumps(writer.record(fields))
    assert json.loads(writer.template.render(fields))["data"]["links"]["self"].endswith(f"/comments/{DOCKET}-000002")


def test_same_seed_same_bytes_whatever_the_workers_and_another_seed_differs(tmp_path):
    one = write_scale_docket(tmp_path / "one", DOCKET, 1500, profile="mass-mail-99", seed=9,
                             attachment_share=0.02, workers=1)
    two = write_scale_docket(tmp_path / "two", DOCKET, 1500, profile="mass-mail-99", seed=9,
                             attachment_share=0.02, workers=2)
    assert tree_digest(tmp_path / "one") == tree_digest(tmp_path / "two")
    assert one.letter_of == two.letter_of
    other = write_scale_docket(tmp_path / "other", DOCKET, 1500, profile="mass-mail-99", seed=10)
    assert tree_digest(tmp_path / "other") != tree_digest(tmp_path / "one") and other.letter_of != one.letter_of
    assert Truth.load(tmp_path / "one", DOCKET).letter_of == one.letter_of


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_letter_has_exactly_its_share(profile):
    import random

    plan = letter_plan(random.Random(1), 200_000, PROFILES[profile])
    counts = Counter(plan)
    assert len(plan) == 200_000
    for letter, share in enumerate(PROFILES[profile].letter_shares):
        assert counts[letter] == round(200_000 * share)
    assert counts[-1] == 200_000 - sum(counts[n] for n in range(len(PROFILES[profile].letter_shares)))


def test_a_listing_names_each_docket_once_as_keys_and_folders(tmp_path):
    ids = write_listing(tmp_path / "keys", 5000, seed=4)
    assert len(ids) == len(set(ids)) == 5000
    assert write_listing(tmp_path / "again", 5000, seed=4) == ids
    keys = (tmp_path / "keys" / listing_name(5000)).read_text().split()
    assert keys == sorted(keys) and len(keys) == 10_000
    by_docket: dict[str, list[str]] = {}
    for key in keys:
        by_docket.setdefault(key.split("/")[2], []).append(key)
    assert set(by_docket) == set(ids)
    for docket_id in ids[:200]:
        agency = by_docket[docket_id][0].split("/")[1]
        listing = listing_of(docket_id, agency, [_listed(k) for k in by_docket[docket_id]])
        assert listing.docket_key and list(listing.documents) == [f"{docket_id}-0001"]
        assert not listing.rejected and not listing.ignored

    small = write_listing(tmp_path / "folders", 150, seed=4, folders=True)
    mirror = LocalMirror(tmp_path / "folders")
    assert sorted(ref.docket_id for ref in mirror.list_dockets()) == sorted(small)
    some = small[7]
    listing = mirror.docket_listing(some)
    assert mirror.read_json(listing.docket_key)["data"]["id"] == some
    attributes = mirror.read_json(listing.documents[f"{some}-0001"])["data"]["attributes"]
    assert attributes["commentEndDate"] > attributes["commentStartDate"]


def _listed(key: str):
    from pipeline.sources.mirror import ListedObject

    return ListedObject(key, 2, None, "0")


def test_bad_arguments_are_one_line_and_a_non_zero_exit(tmp_path, capsys):
    assert main([str(tmp_path), "--docket", "../etc", "--comments", "3"]) == 2
    assert main([str(tmp_path), "--comments", "3"]) == 2
    assert main([str(tmp_path), "--docket", DOCKET, "--comments", "3"]) == 0
    assert main([str(tmp_path), "--docket", DOCKET, "--comments", "3"]) == 2  # there already
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 3 and all(line.startswith("scale_corpus: ") for line in errors)
    assert layout.DocketFolders.find(tmp_path, DOCKET).comment_file(f"{DOCKET}-0004").is_file()
