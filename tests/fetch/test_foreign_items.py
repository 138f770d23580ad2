"""An item's docket is the one its own record names: a listing that claims another docket's
item records a failure of its own and never moves or overwrites that item; ``verify`` checks
every item and its rows against the docket its record names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pipeline.ops import verify
from pipeline.store import dockets
from pipeline.store.models import Item, ItemState
from tests.fixtures.fetch_scripted import (
    CLOSED_LONG_AGO,
    ScriptedServer,
    client,
    fetch,
    small_docket,
)

OWNER, CLAIMANT = "CMS-2026-0301", "CMS-2026-0302"


@pytest.fixture
def two_dockets(tmp_path):
    root = tmp_path / "mirror"
    start = datetime(2025, 8, 1, tzinfo=UTC)
    small_docket(root, OWNER, [start + i * timedelta(minutes=1) for i in range(3)])
    small_docket(root, CLAIMANT, [start + i * timedelta(minutes=1) for i in range(3)])
    with ScriptedServer(root) as server:
        yield server


def rows_of(key: str) -> list[tuple]:
    item = Item.get_by_id(key)
    states = sorted(ItemState.select(ItemState.stage, ItemState.docket, ItemState.state)
                    .where(ItemState.item == key).tuples())
    return [(item.docket, item.title, item.summary_hash), *states]


def test_a_listing_claiming_another_dockets_item_fails_that_claim_and_moves_nothing(state, two_dockets):
    server = two_dockets
    dockets.ensure_dockets([OWNER, CLAIMANT], "list")
    assert fetch(state, OWNER, client(server), clock=CLOSED_LONG_AGO).counts["created"] == 3
    owned = sorted(Item.select(Item.key).where(Item.docket == OWNER).tuples())[0][0]
    before = rows_of(owned)
    listed = sorted(Item.select(Item.key).where(Item.docket == OWNER).tuples())[1][0]
    # The claimant's listing serves, in place of one of its own items, the owner's item
    # with a changed title: an impostor (or a confused mirror).
    victim = f"{CLAIMANT}-{listed.rsplit('-', 1)[1]}"
    server.replace = {victim: {"id": owned, "type": "comments", "attributes": {
        "title": "taken over", "postedDate": "2025-08-01T00:00:00Z",
        "lastModifiedDate": "2025-08-01T00:00:00Z", "withdrawn": False}}}

    result = fetch(state, CLAIMANT, client(server), clock=CLOSED_LONG_AGO)

    assert result.clean and result.counts["foreign"] == 1 and result.counts["created"] == 2
    assert rows_of(owned) == before  # neither moved nor overwritten
    claim = ItemState.get(ItemState.item == f"{CLAIMANT}/foreign-{owned}")
    assert claim.docket == CLAIMANT and claim.state == "failed" and claim.detail == "permanent"
    assert claim.reason == f"comment {owned} belongs to docket {OWNER}: not taken in by {CLAIMANT}"
    assert f"belongs to docket {OWNER}" in result.message
    assert verify.check_item_dockets().ok


def test_verify_fails_an_item_or_a_row_filed_under_another_docket(state, two_dockets):
    dockets.ensure_dockets([OWNER, CLAIMANT], "list")
    fetch(state, OWNER, client(two_dockets), clock=CLOSED_LONG_AGO)
    assert verify.check_item_dockets().ok
    first, second = sorted(k for (k,) in Item.select(Item.key).where(
        (Item.docket == OWNER) & (Item.kind == "comment")).tuples())[:2]
    ItemState.update(docket=CLAIMANT).where(ItemState.item == first).execute()  # a row moved
    Item.update(docket=CLAIMANT).where(Item.key == second).execute()  # an item moved
    check = verify.check_item_dockets()
    assert not check.ok and len(check.problems) == 3  # the moved item's own row too
    assert f"{first}: its fetch row is filed under {CLAIMANT}, the item under {OWNER}" in check.problems
    assert f"{second}: filed under {CLAIMANT}, its record names {OWNER}" in check.problems
