"""The Atom feeds of new comments and ``docketeer digest``, over a store the real pipeline built:
each feed read by a real feed parser (feedparser) and checked against Atom's rules with lxml;
after a run that adds 3 comments the docket's feed gains exactly those 3 entries and keeps the
others as they were; after a no-op run it is the same bytes."""

from __future__ import annotations

from datetime import UTC, datetime

import feedparser
import pytest
from lxml import etree
from starlette.testclient import TestClient

from devtools import corpus_changes
from pipeline.clock import iso, utcnow
from pipeline.ops import cli
from pipeline.store.models import Docket, Item
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.paths import ROOT
from tests.fixtures.web_fixtures import CITING_ID, web_store

pytestmark = pytest.mark.postgres
ATOM = "{http://www.w3.org/2005/Atom}"
ATOM_SCHEMA = etree.RelaxNG(etree.parse(str(ROOT / "tests" / "fixtures" / "atom.rng")))


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    with web_store(tmp_path_factory.mktemp("feeds"), pg_server) as built:
        yield built


@pytest.fixture(scope="module")
def client(store):
    with TestClient(make_app(store.runtime, pages.WarmSearch(store.runtime)), base_url="http://127.0.0.1") as test_client:
        yield test_client


def _comments(docket: str) -> list[Item]:
    return list(Item.select().where((Item.docket == docket) & (Item.kind == "comment")))


def _parsed(client, path: str, **params):
    answer = client.get(path, params=params)
    assert answer.status_code == 200, answer.text[:500]
    assert answer.headers["content-type"].startswith("application/atom+xml")
    feed = feedparser.parse(answer.content)
    assert not feed.bozo, feed.get("bozo_exception")
    assert feed.version == "atom10"
    _check_atom_rules(answer.content)
    return answer.content, feed


def _check_atom_rules(xml: bytes) -> None:
    """The feed is valid under Atom's schema (RELAX NG, tests/fixtures/atom.rng), and RFC
    4287's rules a schema cannot say: every entry has an author (or the feed one), ids are
    unique, and the feed links itself."""
    root = etree.fromstring(xml)
    assert ATOM_SCHEMA.validate(root), ATOM_SCHEMA.error_log
    assert root.tag == f"{ATOM}feed"
    for element in [root, *root.findall(f"{ATOM}entry")]:
        for name in ("id", "title", "updated"):
            assert len(element.findall(f"{ATOM}{name}")) == 1, (element.tag, name)
        datetime.fromisoformat(element.find(f"{ATOM}updated").text)
    assert root.find(f"{ATOM}author") is not None or all(
        e.find(f"{ATOM}author") is not None for e in root.findall(f"{ATOM}entry"))
    ids = [e.find(f"{ATOM}id").text for e in root.findall(f"{ATOM}entry")]
    assert len(ids) == len(set(ids))
    assert [link for link in root.findall(f"{ATOM}link") if link.get("rel") == "self"]


def test_docket_feed_lists_its_comments_latest_change_first(client, store):
    docket = store.dockets[0]
    _, feed = _parsed(client, f"/feed/docket/{docket}")
    rows = _comments(docket)
    assert sorted(e.id for e in feed.entries) == sorted(f"https://www.regulations.gov/comment/{i.key}" for i in rows)
    updated = [e.updated for e in feed.entries]
    assert updated == sorted(updated, reverse=True)
    assert datetime.fromisoformat(feed.feed.updated) == max(datetime.fromisoformat(i.updated_at) for i in rows)
    assert all(e.link.startswith("http://127.0.0.1/comment/") for e in feed.entries)


def test_search_and_organisation_feeds_follow_their_query_and_filters(client, store):
    _, by_org = _parsed(client, "/feed/organisation", name="Rural Wage Coalition")
    assert [e.id.rsplit("/", 1)[1] for e in by_org.entries] == [CITING_ID]
    _, searched = _parsed(client, "/feed/search", q="42 U.S.C. 1395ww", docket=CITING_ID.rsplit("-", 1)[0])
    assert CITING_ID in [e.id.rsplit("/", 1)[1] for e in searched.entries]
    _, other = _parsed(client, "/feed/search", q="42 U.S.C. 1395ww", docket=store.dockets[1]
                       if store.dockets[1] != CITING_ID.rsplit("-", 1)[0] else store.dockets[0])
    assert CITING_ID not in [e.id.rsplit("/", 1)[1] for e in other.entries]
    _, browsed = _parsed(client, "/feed/search", docket=store.dockets[1], attachments="no")
    keys = {e.id.rsplit("/", 1)[1] for e in browsed.entries}
    assert keys and all(k.startswith(store.dockets[1]) for k in keys)
    for missing in ("/feed/docket/NOPE-0000", "/feed/campaign/NOPE-0000", "/feed/organisation?name=Nobody+At+All"):
        assert client.get(missing).status_code == 404, missing
    assert client.get("/feed/search", params={"from": "2026-13-40"}).status_code == 400
    nothing = client.get("/feed/search", params={"q": "%%%"})  # nothing to search for: said, not a 500
    assert nothing.status_code == 400 and "nothing to search for" in nothing.text
    assert client.get("/feed/organisation").status_code == 400


def test_a_search_feed_carries_only_the_comments_that_match(client, store):
    """A search's feed alerts on a new comment only when it matches the search; browsing
    without a query (the same filters) still lists every comment."""
    _, unrelated = _parsed(client, "/feed/search", q="zebra giraffe volcano")
    assert unrelated.entries == []
    _, browsed = _parsed(client, "/feed/search", docket=store.dockets[0])
    assert len(browsed.entries) == len(_comments(store.dockets[0]))


def test_a_run_adding_three_comments_adds_exactly_three_entries_and_a_noop_none(client, store, capsys):
    docket = store.dockets[1]
    before_bytes, before = _parsed(client, f"/feed/docket/{docket}")
    kept = {e.id: e.updated for e in before.entries}
    started = iso(utcnow())
    added = corpus_changes.add_comments(store.root / "mirror", docket, 3, datetime(2026, 3, 2, 15, tzinfo=UTC))
    store.server.reload()
    Docket.update(last_pull_at="2000-01-01T00:00:00.000000Z").execute()  # a new freshness window
    assert store.run()
    _, after = _parsed(client, f"/feed/docket/{docket}")
    now = {e.id: e.updated for e in after.entries}
    assert set(now) - set(kept) == {f"https://www.regulations.gov/comment/{k}" for k in added}
    assert {k: now[k] for k in kept} == kept  # the others: same ids, same updated
    assert [e.id.rsplit("/", 1)[1] for e in after.entries[:3]] == sorted(added, reverse=True)

    assert cli.main(["digest", "--since", started]) == 0
    out = capsys.readouterr().out
    assert f"{docket}: 3 comments added or changed since" in out
    assert sorted(line.split()[0] for line in out.splitlines() if line.startswith(f"  {docket}-")) == sorted(added)
    assert store.dockets[0] not in out

    settled, _ = _parsed(client, f"/feed/docket/{docket}")
    Docket.update(last_pull_at="2000-01-01T00:00:00.000000Z").execute()
    assert store.run()  # a no-op: nothing new upstream
    assert _parsed(client, f"/feed/docket/{docket}")[0] == settled
    assert before_bytes != settled


@pytest.mark.parametrize("since", ["last tuesday", "999999w", "", "   ", "0001-01-01T00:00:00Z", "0999-12-31",
                                   "9999-12-31T23:59:59-05:00", "2026-02-30T12:00:00Z"])
def test_digest_refuses_a_bad_since_in_one_line(capsys, since):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["digest", "--since", since])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--since" in err
