"""The docket's rule documents on the web: found by the search page (comments, documents or
both, the kind shown on each result), by its Atom feed, and read on their own page (facts,
text section by section and page by page, or why there is no text), linked from the docket page. Over a store the
real pipeline built: each generated docket holds one proposed rule with a two-page PDF."""

from __future__ import annotations

import re

import feedparser
import pytest

from pipeline.reading import comments
from pipeline.store import item_states
from pipeline.store.blobs import combined_key
from pipeline.store.models import Item
from tests.fixtures.web_fixtures import linked_comments, page_client, web_store

pytestmark = pytest.mark.postgres
FAILURE = "content.pdf: the cross-reference table is broken"


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    with web_store(tmp_path_factory.mktemp("documents"), pg_server) as built:
        documents = {d: _document_of(d) for d in built.dockets}
        # The first docket's proposed rule withdrawn after indexing: still found, marked.
        Item.update(withdrawn=True).where(Item.key == documents[built.dockets[0]]).execute()
        # The second's text failed extraction: no combined.md, its extract row says why.
        failed = documents[built.dockets[1]]
        built.runtime.blobs.delete(combined_key(built.dockets[1], failed))
        item_states.transition("extract", failed, built.dockets[1], "failed", run_id="test", reason=FAILURE)
        yield built


@pytest.fixture(scope="module")
def client(store):
    with page_client(store.runtime) as test_client:
        yield test_client


def _document_of(docket: str) -> str:
    (key,) = [k for (k,) in Item.select(Item.key).where((Item.docket == docket) & (Item.kind == "document")).tuples()]
    return key


@pytest.fixture(scope="module")
def document(store) -> str:
    return _document_of(store.dockets[0])


@pytest.fixture(scope="module")
def query(store, document) -> str:
    """Words of the proposed rule's own text (its content file's), as a reader would search them."""
    (_, text), *_ = [s for s in comments.sections(store.runtime.blobs, store.dockets[0], document)
                     if s[0] == "content.pdf"]
    assert "Proposed rule" in text
    return "proposed rule comments must be received"


def _documents_linked(html: str) -> list[str]:
    return re.findall(r'class="document-link" href="/document/([^"]+)"', html)


def _results(html: str) -> list[str]:
    return re.findall(r'<li class="result">(.*?)</li>\s*(?=<li class="result">|</ol>)', html, flags=re.S)


def test_the_search_finds_documents_beside_comments_each_result_saying_its_kind(client, document, query):
    page = client.get("/search", params={"q": query})
    assert page.status_code == 200
    assert document in _documents_linked(page.text)
    results = _results(page.text)
    kinds = {re.search(r'href="/(comment|document)/([^"]+)"', r)[2]: re.search(r'class="kind">(\w+)<', r)[1]
             for r in results}
    assert kinds[document] == "document" and "comment" in kinds.values()
    (shown,) = [r for r in results if f'href="/document/{document}"' in r]
    assert 'class="withdrawn"' in shown  # withdrawn, still found, marked
    assert f'href="https://www.regulations.gov/document/{document}"' in shown
    assert '<option value="both" selected>' in page.text


def test_the_kind_filter_looks_in_comments_or_in_documents(client, document, query, store):
    only_comments = client.get("/search", params={"q": query, "kind": "comments"})
    assert only_comments.status_code == 200 and linked_comments(only_comments.text)
    assert _documents_linked(only_comments.text) == []
    only_documents = client.get("/search", params={"q": query, "kind": "documents"})
    assert document in _documents_linked(only_documents.text)
    assert linked_comments(only_documents.text) == []
    assert '<option value="documents" selected>' in only_documents.text
    assert "kind=documents" in only_documents.text  # its feed and its other pages keep it
    bad = client.get("/search", params={"q": query, "kind": "letters"})
    assert bad.status_code == 400 and "kind=letters is not one of: both, comments, documents" in bad.text


def test_the_search_feed_with_kind_documents_carries_the_document(client, document, query):
    answer = client.get("/feed/search", params={"q": query, "kind": "documents"})
    assert answer.status_code == 200
    feed = feedparser.parse(answer.content)
    assert not feed.bozo and feed.feed.title.startswith("New documents")
    ids = {entry.id: entry.link for entry in feed.entries}
    assert ids[f"https://www.regulations.gov/document/{document}"] == f"http://127.0.0.1/document/{document}"
    assert all("/document/" in entry_id for entry_id in ids)
    comments_only = feedparser.parse(client.get("/feed/search", params={"q": query, "kind": "comments"}).content)
    assert comments_only.entries and all("/comment/" in entry.id for entry in comments_only.entries)


def test_the_document_page_shows_its_facts_and_its_text_by_page(client, document, store):
    item = Item.get_by_id(document)
    page = client.get(f"/document/{document}")
    assert page.status_code == 200
    assert item.title and item.title in page.text
    assert '<dd class="document-type">Proposed Rule</dd>' in page.text
    assert f'href="/docket/{store.dockets[0]}"' in page.text
    assert f'href="https://www.regulations.gov/document/{document}"' in page.text
    assert '<strong class="withdrawn">withdrawn</strong>' in page.text
    # Posted 2026-01-05T05:00:00Z in the corpus: midnight in Washington, the 5th there too;
    # the page shows the Eastern day of whatever the record holds.
    from pipeline.clock import eastern_date

    assert f'<dd class="posted">{eastern_date(item.posted_date)}</dd>' in page.text
    # Its text section by section (the preamble's captions here), each heading with its page,
    # and a page that ends inside a section marked there.
    assert re.findall(r'<h2 class="section-heading">([^<]+) <code', page.text) == ["Front matter", "Agency",
                                                                                   "Action", "Dates"]
    assert '<code class="section-id">action</code> <span class="meta">page 1</span>' in page.text
    assert "Proposed rule." in page.text and '<p class="page-marker">page 2</p>' in page.text


def test_a_document_whose_text_failed_says_so_with_its_state_and_reason(client, store):
    failed = _document_of(store.dockets[1])
    page = client.get(f"/document/{failed}")
    assert page.status_code == 200
    assert f"Its text was not extracted: extract failed ({FAILURE})." in page.text
    assert "page-marker" not in page.text


def test_an_unknown_document_is_a_404_and_each_kind_of_id_goes_to_its_own_page(client, store, document):
    missing = client.get("/document/CMS-2026-9999-0001")
    assert missing.status_code == 404
    assert "This store knows no document <code>CMS-2026-9999-0001</code>." in missing.text
    comment = linked_comments(client.get("/search", params={"q": "comment", "kind": "comments"}).text)[0]
    moved = client.get(f"/document/{comment}", follow_redirects=False)
    assert moved.status_code == 302 and moved.headers["location"] == f"/comment/{comment}"
    back = client.get(f"/comment/{document}", follow_redirects=False)
    assert back.status_code == 302 and back.headers["location"] == f"/document/{document}"


def test_the_docket_page_links_to_its_documents(client, store, document):
    page = client.get(f"/docket/{store.dockets[0]}")
    assert page.status_code == 200
    assert _documents_linked(page.text).count(document) >= 1
    assert re.search(rf'<li><a class="document-link" href="/document/{document}">{document}</a> Proposed Rule: ',
                     page.text)


def test_the_document_page_costs_four_statements_and_no_read_of_its_text(client, document):
    from pipeline.counters import COMBINED_READS, STATE_QUERIES, counters

    with counters.counting_queries(), counters.measure() as io:
        assert client.get(f"/document/{document}").status_code == 200
    # Its record with its type, the state rows of it and its files, its sections, the comments
    # tied to them: none per section, and its text is its sections' (no file read).
    assert io.get(STATE_QUERIES, 0) == 4 and io.get(COMBINED_READS, 0) == 0, io
