"""Positions as a facet and a filter: the browse page and the search page count each position's
comments as its link shows them and say how many are not estimated (no position matches those);
the filter narrows the list, a search and their Atom feeds to the comments placed there; an
unknown position is one clear 400; and the pages' statements stay as many whatever the rows."""

from __future__ import annotations

import re
from html import unescape

import feedparser
import pytest

from pipeline.reading import browsing
from pipeline.store.models import PositionMember
from pipeline.web import browse, pages
from tests.fixtures.position_search import (
    COMMENTS,
    DOCUMENT,
    PLACED,
    QUERY,
    D,
    placed,
    position_search_store,
)
from tests.fixtures.web_fixtures import linked_comments, page_client

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def rt(tmp_path_factory, pg_server):
    with position_search_store(tmp_path_factory.mktemp("position-facets"), pg_server) as runtime:
        yield runtime


@pytest.fixture(scope="module")
def client(rt):
    with page_client(rt) as test_client:
        yield test_client


def _facet(html: str) -> tuple[dict[str, int], int | None]:
    """(position -> count linked, the 'not estimated' count or None) of a page's position facet."""
    block = re.search(r'<ul class="facet" data-facet="position">(.*?)</ul>', html, re.S).group(1)
    linked = {value: int(n.replace(",", "")) for value, n in
              re.findall(r'position=(\w+)"[^>]*>\w+</a> <span class="n">([\d,]+)</span>', block)}
    missing = re.search(r'<li class="not-estimated">not estimated <span class="n">([\d,]+)</span>', block)
    return linked, int(missing.group(1).replace(",", "")) if missing else None


def _expected() -> dict[str, int]:
    counts: dict[str, int] = {}
    for (position,) in PositionMember.select(PositionMember.position).where(PositionMember.docket == D).tuples():
        counts[position] = counts.get(position, 0) + 1
    return counts


def test_the_browse_page_counts_each_position_and_the_comments_not_estimated(client, rt):
    page = client.get("/comments", params={"docket": D})
    assert page.status_code == 200
    linked, not_estimated = _facet(page.text)
    assert linked == _expected() and set(linked) == {"support", "oppose", "mixed", "off_topic"}
    assert list(linked) == ["support", "oppose", "mixed", "off_topic"]  # the positions' order, not the counts'
    assert not_estimated == COMMENTS - PLACED
    for position, n in linked.items():
        narrowed = client.get("/comments", params={"docket": D, "position": position})
        assert narrowed.status_code == 200
        shown = linked_comments(narrowed.text)
        assert len(shown) == n and set(shown) == placed(position)
        assert f'class="chip">position: {position}' in narrowed.text
        assert _facet(narrowed.text) == ({position: n}, None)
    # No comment placed in no_position: an empty list, not every comment.
    empty = client.get("/comments", params={"docket": D, "position": "no_position"})
    assert empty.status_code == 200 and linked_comments(empty.text) == [] and "No comments match." in empty.text


@pytest.mark.parametrize("path", ["/comments", "/search", "/feed/search"])
def test_an_unknown_position_is_one_400_that_says_which_are_known(client, rt, path):
    answer = client.get(path, params={"q": QUERY if path != "/comments" else "", "docket": D, "position": "neutral"})
    assert answer.status_code == 400
    assert "position=neutral is not one of: support, oppose, mixed, no_position, off_topic" in unescape(answer.text)
    assert "Traceback" not in answer.text


def test_a_search_narrowed_to_a_position_finds_only_its_comments(client, rt):
    page = client.get("/search", params={"q": QUERY, "docket": D})
    assert page.status_code == 200
    every = linked_comments(page.text)
    assert _facet(page.text) == (_expected(), COMMENTS - PLACED)  # among the comments it looks in
    # The first topic's comments are support, mixed, oppose and not estimated: the bare search
    # meets more than support's.
    assert set(every) & placed("support") and set(every) - placed("support")
    narrowed = client.get("/search", params={"q": QUERY, "docket": D, "position": "support"})
    assert narrowed.status_code == 200
    hits = linked_comments(narrowed.text)
    assert hits and set(hits) <= placed("support")
    assert '<option value="support" selected>support</option>' in narrowed.text  # kept when the search changes
    assert DOCUMENT not in narrowed.text  # a position narrows comments: both kinds means the comments
    assert "position=support" in narrowed.text  # its feed and its other pages keep it


def test_the_feeds_hold_only_the_positions_comments(client, rt):
    browsed = feedparser.parse(client.get("/feed/search", params={"docket": D, "position": "oppose"}).content)
    assert not browsed.bozo and "position oppose" in browsed.feed.title
    keys = {entry.id.rsplit("/", 1)[1] for entry in browsed.entries}
    assert keys == placed("oppose")
    searched = feedparser.parse(client.get("/feed/search", params={"q": QUERY, "docket": D,
                                                                    "position": "support"}).content)
    found = {entry.id.rsplit("/", 1)[1] for entry in searched.entries}
    assert found and found <= placed("support")


def test_the_position_filter_and_facet_cost_the_same_statements_however_many_rows(client, rt, monkeypatch):
    from pipeline.counters import STATE_QUERIES, counters

    def statements(url: str, **params) -> int:
        with counters.counting_queries(), counters.measure() as io:
            assert client.get(url, params=params).status_code == 200
        return io.get(STATE_QUERIES, 0)

    browsed, searched = [], []
    for rows in (1, 50):
        monkeypatch.setattr(browse, "BROWSE_PAGE_SIZE", rows)
        monkeypatch.setattr(pages, "PAGE_SIZE", rows)
        browsed.append(statements("/comments", docket=D, position="support"))
        searched.append(statements("/search", q=QUERY, docket=D, position="support"))
    # The browse page: its count, its page (keys, rows, attachments), the facets' ten statements
    # (the topic facet's one: no topic map here) and the docket checked; the search page: the
    # checks, the narrowing, its five facet statements.
    assert 0 < browsed[0] == browsed[1] <= 13, browsed
    assert 0 < searched[0] == searched[1] <= 8, searched
    # The facet itself: one grouped statement, whatever the comments.
    with counters.counting_queries(), counters.measure() as io:
        browsing.position_counts(browsing.BrowseFilters(docket=D))
    assert io.get(STATE_QUERIES, 0) == 1
