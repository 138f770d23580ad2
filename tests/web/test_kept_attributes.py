"""The record's kept attributes on the pages and the command line: subtype, category, state
and country as facets with counts and as filters (browse, search page, ``docketeer search``,
checked by one rule), the organisation facet counting what its link shows, and a campaign's
submissions (its records and the duplicates they stand for) beside its records."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest

from pipeline.campaigns import queries as campaign_rows
from pipeline.ops import cli
from pipeline.store.models import Item
from tests.fixtures.web_fixtures import linked_comments, listed_comments, page_client, web_store

pytestmark = pytest.mark.postgres

QUERY = "proposed rule"  # words most stored comments hold: a search the filters then narrow
# Set in the records as the API sends them, before the pipeline reads them: two subtypes,
# states in two countries, duplicates on every comment of the first docket (its campaign's
# members among them), and two organisations one of whose names holds the other's.
RECORDS = {
    **{f"CMS-2026-0001-{n:04d}": {"subtype": "Mass Mail Campaign" if n % 2 else "Public Comment",
                                  "category": "Hospital", "duplicateComments": n,
                                  "stateProvinceRegion": "IA" if n <= 3 else "OH", "country": "United States"}
       for n in range(2, 10)},
    "EPA-2026-0002-0002": {"subtype": "Public Comment", "country": "Canada", "stateProvinceRegion": "Ontario"},
    "CMS-2026-0001-0006": {"organization": "Hospital Alliance", "subtype": "Public Comment",
                           "stateProvinceRegion": "OH", "country": "United States", "duplicateComments": 6},
    "CMS-2026-0001-0007": {"organization": "Hospital Alliance of Ohio", "subtype": "Mass Mail Campaign",
                           "stateProvinceRegion": "OH", "country": "United States", "duplicateComments": 7},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    with web_store(tmp_path_factory.mktemp("kept"), pg_server, RECORDS) as built:
        yield built


@pytest.fixture(scope="module")
def client(store):
    with page_client(store.runtime) as test_client:
        yield test_client




def _facet(html: str, name: str) -> dict[str, int]:
    block = re.search(rf'<ul class="facet" data-facet="{name}">(.*?)</ul>', html, re.S).group(1)
    return {unescape(value): int(n.replace(",", "")) for value, n in
            re.findall(r'<a href="[^"]+">([^<]+)</a> <span class="n">([\d,]+)</span>', block)}


def _comments(docket: str, **where) -> set[str]:
    query = Item.select(Item.key).where((Item.docket == docket) & (Item.kind == "comment"))
    for column, value in where.items():
        query = query.where(getattr(Item, column) == value)
    return {key for (key,) in query.tuples()}


def test_the_pipeline_kept_the_attributes_set_in_the_records(store):
    assert _comments("CMS-2026-0001", subtype="Mass Mail Campaign") == {f"CMS-2026-0001-{n:04d}" for n in (3, 5, 7, 9)}
    assert _comments("EPA-2026-0002", country="Canada") == {"EPA-2026-0002-0002"}


@pytest.mark.parametrize("name, column", [("subtype", "subtype"), ("category", "category"),
                                          ("state", "state_province_region"), ("country", "country")])
def test_attribute_facets_count_what_their_links_show(client, store, name, column):
    docket = "CMS-2026-0001"
    page = client.get("/comments", params={"docket": docket}).text
    facet = _facet(page, name)
    expected = {}
    for (value,) in Item.select(getattr(Item, column)).where((Item.docket == docket) & (Item.kind == "comment")).tuples():
        if value:
            expected[value] = expected.get(value, 0) + 1
    assert facet == expected and facet
    for value, count in facet.items():
        narrowed = client.get("/comments", params={"docket": docket, name: value}).text
        assert sorted(listed_comments(narrowed)) == sorted(_comments(docket, **{column: value})) and len(listed_comments(narrowed)) == count
        assert f'class="chip">{"state or province" if name == "state" else name}: {value}' in narrowed


def test_two_attribute_filters_combine_across_dockets(client, store):
    page = client.get("/comments", params={"subtype": "Public Comment", "state": "OH"}).text
    assert sorted(listed_comments(page)) == ["CMS-2026-0001-0004", "CMS-2026-0001-0006", "CMS-2026-0001-0008"]
    assert _facet(page, "subtype") == {"Public Comment": 3}
    assert listed_comments(client.get("/comments", params={"country": "Canada"}).text) == ["EPA-2026-0002-0002"]


def test_attribute_filters_narrow_a_search_and_the_search_page_shows_facets(client, store):
    every = linked_comments(client.get("/search", params={"q": QUERY}).text)
    assert every
    page = client.get("/search", params={"q": QUERY, "subtype": "Mass Mail Campaign"})
    assert page.status_code == 200
    narrowed = linked_comments(page.text)
    mass_mail = _comments("CMS-2026-0001", subtype="Mass Mail Campaign")
    assert narrowed and set(narrowed) <= mass_mail and set(narrowed) < set(every)
    # The facets count the comments this search looks in; a facet's link keeps the query.
    assert _facet(page.text, "subtype") == {"Mass Mail Campaign": 4}
    assert _facet(page.text, "state") == {"IA": 1, "OH": 3}
    assert 'href="/search?q=proposed+rule&amp;subtype=Mass+Mail+Campaign&amp;state=IA"' in page.text
    both = linked_comments(client.get("/search", params={"q": QUERY, "subtype": "Mass Mail Campaign", "state": "IA"}).text)
    assert set(both) <= {"CMS-2026-0001-0003"} and both
    # Without a query, the same filters open the browse page.
    moved = client.get("/search", params={"state": "Ontario"}, follow_redirects=False)
    assert moved.status_code == 302 and moved.headers["location"] == "/comments?state=Ontario"


@pytest.mark.parametrize("path, params, said", [
    ("/search", {"q": QUERY, "subtype": "Carrier Pigeon"}, "no comment has subtype 'Carrier Pigeon' in this store"),
    ("/search", {"q": QUERY, "state": "Atlantis"}, "no comment has state or province 'Atlantis' in this store"),
    ("/search", {"q": QUERY, "country": "x\x00y"}, "control character"),
    ("/comments", {"category": "x\x01y"}, "control character"),
    ("/feed/search", {"subtype": "x\x00y"}, "control character"),
])
def test_a_bad_attribute_value_is_said_with_400(client, path, params, said):
    answer = client.get(path, params=params)
    assert answer.status_code == 400 and said in answer.text.replace("&#39;", "'")


def test_the_organisation_facet_counts_what_its_filter_matches(client, store):
    """The ``org`` filter matches a part of a name: the facet of "Hospital Alliance" counts
    "Hospital Alliance of Ohio" too, as its link shows."""
    page = client.get("/comments", params={"docket": "CMS-2026-0001"}).text
    facet = _facet(page, "org")
    assert facet["Hospital Alliance"] == 2 and facet["Hospital Alliance of Ohio"] == 1
    for name, count in facet.items():
        assert len(listed_comments(client.get("/comments", params={"docket": "CMS-2026-0001", "org": name}).text)) == count


def _submissions(campaign_id: str) -> int:
    members = [m.item for m in campaign_rows.members_of(campaign_id)]
    return sum(1 + (i.duplicate_comments or 0) for i in Item.select().where(Item.key.in_(members)))


def test_campaigns_show_their_submissions_beside_their_records(client, store):
    campaigns = campaign_rows.campaigns_of("CMS-2026-0001")
    assert campaigns, "the corpus's form letter makes a campaign"
    campaign = campaigns[0]
    submissions = _submissions(campaign.id)
    assert submissions > campaign.size  # its members' records stand for duplicates
    page = client.get(f"/campaign/{campaign.id}").text
    assert f'class="submissions">{submissions:,} (each record' in page
    docket = client.get("/docket/CMS-2026-0001").text
    assert f'<strong>{campaign.size}</strong> comments</a>, <span class="submissions">{submissions:,} submissions' in docket
    # The export counts the same.
    from pipeline.reading.campaigns import campaign_info

    member = campaign_rows.members_of(campaign.id)[0].item
    assert campaign_info([member])[member]["submissions"] == submissions


def test_one_result_per_campaign_shows_the_campaigns_submissions(client, store):
    campaign = campaign_rows.campaigns_of("CMS-2026-0001")[0]
    members = {m.item for m in campaign_rows.members_of(campaign.id)}
    page = client.get("/search", params={"q": "comments", "per_campaign": "1", "docket": "CMS-2026-0001"}).text
    shown = linked_comments(page)
    assert len([k for k in shown if k in members]) == 1
    assert (f'campaign of {campaign.size}</a> <span class="submissions">({_submissions(campaign.id):,} submissions)'
            in page)


def test_the_command_line_narrows_by_attributes_checked_by_the_same_rule(store, capsys):
    code = cli.main(["search", QUERY, "-k", "50", "--json", "--subtype", "Mass Mail Campaign", "--state", "IA"])
    out, _ = capsys.readouterr()
    assert code == 0
    document = json.loads(out)
    assert (document["subtype"], document["state"], document["country"]) == ("Mass Mail Campaign", "IA", None)
    found = {r["item_id"] for r in document["results"]}
    assert found and found <= {"CMS-2026-0001-0003"}
    assert cli.main(["search", QUERY, "--country", "Atlantis"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no comment has country 'Atlantis' in this store" in err
    assert cli.main(["search", QUERY, "--category", "a\x00b"]) == 2
    assert "control character" in capsys.readouterr().err


def test_a_long_narrowing_is_sent_as_the_keys_it_leaves_out_with_the_same_results(client, store, monkeypatch,
                                                                                    capsys):
    from pipeline.reading import browsing

    ohio = _comments("CMS-2026-0001", state_province_region="OH")
    params = {"q": QUERY, "state": "OH", "docket": "CMS-2026-0001"}
    as_list = linked_comments(client.get("/search", params=params).text)
    argv = ["search", QUERY, "-k", "50", "--json", "--state", "OH", "--docket", "CMS-2026-0001"]
    assert cli.main(argv) == 0
    by_cli = [r["item_id"] for r in json.loads(capsys.readouterr().out)["results"]]
    filters = browsing.BrowseFilters(docket="CMS-2026-0001", state="OH")
    only, excluded = browsing.narrowing(filters)
    assert set(only) == ohio and excluded is None  # short: sent as it is
    monkeypatch.setattr(browsing, "SHORT_LIST", 1)  # every narrowing is "long" now
    only, excluded = browsing.narrowing(filters)
    assert only is None and set(excluded) == _comments("CMS-2026-0001") - ohio
    assert linked_comments(client.get("/search", params=params).text) == as_list and set(as_list) <= ohio
    assert cli.main(argv) == 0
    assert [r["item_id"] for r in json.loads(capsys.readouterr().out)["results"]] == by_cli and by_cli
