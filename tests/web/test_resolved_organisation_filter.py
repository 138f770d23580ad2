"""The ``org`` filter finds a comment by its resolved organisation after the real pipeline
(IndexAll runs the organisations stage): one comment names the American Medical Association
only in its title, another writes it "Amer. Med. Assn."; browsing, the organisation facet,
the search page and ``docketeer search`` all find both."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest

from pipeline.ops import cli
from tests.fixtures.web_fixtures import linked_comments, listed_comments, page_client, web_store

pytestmark = pytest.mark.postgres

D = "CMS-2026-0001"
AMA = "American Medical Association"
IN_TITLE, ABBREVIATED = f"{D}-0002", f"{D}-0003"
RECORDS = {
    IN_TITLE: {"organization": "", "title": f"Comment from {AMA}"},
    ABBREVIATED: {"organization": "Amer. Med. Assn."},
}
QUERY = "comments"  # a word the stored comments hold: a search the filters then narrow


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    with web_store(tmp_path_factory.mktemp("resolved-org"), pg_server, RECORDS) as built:
        yield built


@pytest.fixture(scope="module")
def client(store):
    with page_client(store.runtime) as test_client:
        yield test_client




def _facet(html: str) -> dict[str, int]:
    block = re.search(r'<ul class="facet" data-facet="org">(.*?)</ul>', html, re.S).group(1)
    return {unescape(value): int(n.replace(",", "")) for value, n in
            re.findall(r'<a href="[^"]+">([^<]+)</a> <span class="n">([\d,]+)</span>', block)}


def test_browsing_finds_the_comments_of_the_resolved_organisation(client, store):
    page = client.get("/comments", params={"docket": D, "org": AMA})
    assert page.status_code == 200 and sorted(listed_comments(page.text)) == [IN_TITLE, ABBREVIATED]


def test_the_organisation_facet_counts_what_its_link_shows(client, store):
    facet = _facet(client.get("/comments", params={"docket": D}).text)
    assert facet["Amer. Med. Assn."] == 2  # its link finds the comment named in a title too
    for name, count in facet.items():
        assert len(listed_comments(client.get("/comments", params={"docket": D, "org": name}).text)) == count


def test_the_search_page_finds_the_comments_of_the_resolved_organisation(client, store):
    page = client.get("/search", params={"q": QUERY, "org": AMA})
    assert page.status_code == 200 and sorted(linked_comments(page.text)) == [IN_TITLE, ABBREVIATED]
    in_docket = client.get("/search", params={"q": QUERY, "org": AMA, "docket": "EPA-2026-0002"})
    assert in_docket.status_code == 200 and linked_comments(in_docket.text) == []


def test_the_command_line_finds_the_comments_of_the_resolved_organisation(store, capsys):
    assert cli.main(["search", QUERY, "-k", "50", "--json", "--cold", "--org", AMA]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["org"] == AMA and "org_items" not in document
    assert sorted(r["item_id"] for r in document["results"]) == [IN_TITLE, ABBREVIATED]
