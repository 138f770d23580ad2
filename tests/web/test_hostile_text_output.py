"""Control characters and invalid text in records never break a feed or reach a terminal:
records holding them go through the real pipeline (stored valid, controls removed), and
rows an older store kept with ESC, BEL and NUL still give a valid Atom feed (feedgen refuses
what XML cannot hold: it answered 500) and ``docketeer`` commands print them escaped (an OSC
sequence would set the terminal's title)."""

from __future__ import annotations

import feedparser
import pytest
from starlette.testclient import TestClient

from pipeline.ops import cli
from pipeline.store.models import Item
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.web_fixtures import web_store

pytestmark = pytest.mark.postgres

OSC_TITLE = "\x1b]0;owned\x07"  # sets a terminal's title
HOSTILE_ID = "CMS-2026-0001-0006"
HOSTILE = {HOSTILE_ID: {"title": f"Title {OSC_TITLE}with \ud800 in it",
                        "comment": "Body \x1b[2J\x00 with a screen clear", "organization": f"Org {OSC_TITLE}Ltd"}}


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    with web_store(tmp_path_factory.mktemp("hostile-text"), pg_server, records=HOSTILE) as built:
        yield built


@pytest.fixture(scope="module")
def client(store):
    with TestClient(make_app(store.runtime, pages.WarmSearch(store.runtime)), base_url="http://127.0.0.1") as test_client:
        yield test_client


def _feed(client, docket: str):
    answer = client.get(f"/feed/docket/{docket}")
    assert answer.status_code == 200, answer.text[:300]
    feed = feedparser.parse(answer.content)
    assert not feed.bozo, feed.get("bozo_exception")
    return feed


def test_a_hostile_record_is_stored_readable_and_its_docket_feed_answers(client, store):
    item = Item.get_by_id(HOSTILE_ID)
    assert item.title == "Title ]0;ownedwith \ufffd in it" and item.organization == "Org ]0;ownedLtd"
    assert "\x1b" not in item.body and "\x00" not in item.body
    titles = [entry.title for entry in _feed(client, store.dockets[0]).entries]
    assert f"{HOSTILE_ID}: Title ]0;ownedwith \ufffd in it" in titles


@pytest.fixture
def older_rows(store):
    """Rows as a store written before text was made valid may hold them."""
    item = Item.get_by_id(HOSTILE_ID)
    kept = item.title, item.organization, item.body
    Item.update(title=f"Old {OSC_TITLE}title\x00", organization=f"Old {OSC_TITLE}org\x1b[2J",
                body="Old body \x07\x1b[31m red").where(Item.key == HOSTILE_ID).execute()
    yield
    Item.update(title=kept[0], organization=kept[1], body=kept[2]).where(Item.key == HOSTILE_ID).execute()


def test_a_feed_leaves_out_what_xml_cannot_hold(client, store, older_rows):
    feed = _feed(client, store.dockets[0])
    entry = next(e for e in feed.entries if e.id.endswith(HOSTILE_ID))
    assert entry.title == f"{HOSTILE_ID}: Old ]0;ownedtitle" and entry.author == "Old ]0;ownedorg[2J"


@pytest.mark.parametrize("command", [["explain", HOSTILE_ID], ["digest", "--since", "5000w", "--limit", "100"]])
def test_commands_print_control_characters_escaped(store, older_rows, capsys, command):
    assert cli.main(command) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\x00" not in out
    assert "Old \\x1b]0;owned\\x07" in out
