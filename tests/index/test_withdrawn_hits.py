"""A withdrawn item keeps its id and stays findable; every search hit says whether it is
withdrawn: ``search --json``'s records (the warm service sends the same) and the web page."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from pipeline.index.embedders import HashingEmbedder
from pipeline.index.search import search
from pipeline.index.search_results import hit_records, search_document
from pipeline.store.models import Item
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.index_inputs import D, put_item, run

pytestmark = pytest.mark.postgres

KEPT, WITHDRAWN, NOTICE = f"{D}-0001", f"{D}-0002", f"{D}-0003"
TEXT = "Small water systems cannot meet the monitoring schedule."


@pytest.fixture
def indexed(rt):
    put_item(rt, KEPT, TEXT)
    put_item(rt, WITHDRAWN, TEXT + " Withdrawn later.")
    put_item(rt, NOTICE, TEXT + " The notice.", kind="document")
    run(rt)
    # Withdrawn after indexing: the mark is read when searching, no re-index needed.
    Item.update(withdrawn=True).where(Item.key.in_([WITHDRAWN, NOTICE])).execute()
    return rt


def test_search_json_says_which_hits_are_withdrawn(indexed):
    hits = search(indexed.index_db(), HashingEmbedder(), "monitoring schedule", k=10)
    results = search_document("monitoring schedule", 10, None, None, hit_records(hits))["results"]
    assert {r["item_id"]: r["withdrawn"] for r in results} == {KEPT: False, WITHDRAWN: True, NOTICE: True}


def test_the_search_page_marks_a_withdrawn_hit(indexed):
    with TestClient(make_app(indexed, pages.WarmSearch(indexed, HashingEmbedder())), base_url="http://127.0.0.1") as client:
        page = client.get("/search", params={"q": "monitoring schedule"})
    assert page.status_code == 200
    items = re.findall(r'<li class="result">(.*?)</li>', page.text, flags=re.S)
    marked = {re.search(r'href="/(?:comment|document)/([^"]+)"', item)[1]: 'class="withdrawn"' in item
              for item in items}
    assert marked == {KEPT: False, WITHDRAWN: True, NOTICE: True}  # comments and documents, by default
