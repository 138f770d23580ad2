"""The status and home pages a page of dockets at a time: ``?page=N`` shows the next dockets
with links either way, the total from one count, and a page costs the same statements at 3
dockets as at 120 (its reads are filtered to its own dockets)."""

from __future__ import annotations

import re

import pytest

from pipeline.counters import INDEX_QUERIES, STATE_QUERIES, counters
from pipeline.web import pages
from tests.fixtures.state_fixtures import indexed_runtime, known_dockets
from tests.fixtures.web_fixtures import page_client

pytestmark = pytest.mark.postgres


def shown(html: str) -> list[str]:
    return re.findall(r'<td><a href="/docket/([^"]+)">', html)


def test_status_pages_show_the_next_dockets_with_links_either_way(tmp_path, pg_server, monkeypatch):
    monkeypatch.setattr(pages, "STATUS_PAGE_SIZE", 50)
    with indexed_runtime(tmp_path, pg_server) as runtime, page_client(runtime) as client:
        ids = known_dockets(120)
        first = client.get("/status").text
        assert shown(first) == ids[:50] and "120 dockets: page 1 of 3" in first
        assert 'href="/status?page=2"' in first and 'rel="prev"' not in first
        second = client.get("/status", params={"page": "2"}).text
        assert shown(second) == ids[50:100]
        assert 'href="/status?page=1"' in second and 'href="/status?page=3"' in second
        last = client.get("/status", params={"page": "3"}).text
        assert shown(last) == ids[100:] and 'rel="next"' not in last
        past = client.get("/status", params={"page": "9"})
        assert past.status_code == 200 and shown(past.text) == [] and "there are 3 pages" in past.text
        assert client.get("/status", params={"page": "two"}).status_code == 400


def test_a_page_shows_what_failed_of_its_own_dockets(tmp_path, pg_server, monkeypatch):
    from pipeline.store.models import ItemState

    monkeypatch.setattr(pages, "STATUS_PAGE_SIZE", 50)
    with indexed_runtime(tmp_path, pg_server) as runtime, page_client(runtime) as client:
        ids = known_dockets(120)
        ItemState.create(stage="fetch", item=f"{ids[110]}-0001", docket=ids[110], state="failed",
                         reason="made up for the page", written_at="2026-12-01T05:00:00.000000Z")
        assert "made up for the page" not in client.get("/status").text
        last = client.get("/status", params={"page": "3"}).text
        assert "made up for the page" in last and f'href="/docket/{ids[110]}#problems"' in last


@pytest.mark.parametrize("path", ["/status", "/"])
def test_a_page_of_dockets_costs_the_same_statements_at_3_as_at_120(tmp_path, pg_server, path):
    spent = []
    for n in (3, 120):
        with indexed_runtime(tmp_path / str(n), pg_server) as runtime, page_client(runtime) as client:
            known_dockets(n)
            with counters.counting_queries(), counters.measure() as io:
                assert client.get(path).status_code == 200
            spent.append((io.get(STATE_QUERIES, 0), io.get(INDEX_QUERIES, 0)))
    assert spent[0] == spent[1], spent
    assert spent[0][1] == (1 if path == "/status" else 0)  # the page's index counts: one grouped query
