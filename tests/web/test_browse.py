"""Browsing without a query, through Starlette's TestClient over a store the real pipeline
built (IndexAll, campaigns included): the home page's dockets, a docket's comments paged,
sorted and faceted, filters with and without a query, bad parameters answered with 400, the
campaign and organisation pages."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from pipeline.campaigns import queries as campaign_rows
from pipeline.clock import eastern_date
from pipeline.reading import reports
from pipeline.store.models import Attachment, Item
from pipeline.web import browse
from tests.fixtures.web_fixtures import CITING_ID, listed_comments, page_client

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def store(read_only_web_store):
    """This file's tests only read the store: the folder's shared one (tests/web/conftest.py)."""
    return read_only_web_store


@pytest.fixture(scope="module")
def client(store):
    with page_client(store.runtime) as test_client:
        yield test_client



def _comments(docket: str) -> list[Item]:
    return list(Item.select().where((Item.docket == docket) & (Item.kind == "comment")))


def _with_files() -> set[str]:
    return {a.item for a in Attachment.select(Attachment.item)}


def _campaign(store):
    found = [c for d in store.dockets for c in campaign_rows.campaigns_of(d)]
    assert found, "the corpus's form letter (a repeated PDF) makes a campaign once IndexAll groups"
    return found[0]


def test_home_page_lists_every_docket_with_counts_period_state_and_sparkline(client, store):
    page = client.get("/")
    assert page.status_code == 200
    rows = re.findall(r'<a class="docket-link" href="/docket/([^"]+)">.*?<td class="n"><a href="[^"]+">([\d,]+)</a>',
                      page.text, re.S)
    assert dict(rows) == {d: str(len(_comments(d))) for d in store.dockets}
    assert page.text.count('<svg class="spark"') == len(store.dockets)
    docket = reports.find_docket(store.dockets[0])
    assert f"{eastern_date(docket.comment_start_date) or '?'} – {eastern_date(docket.comment_end_date)}" in page.text
    assert ">open<" in page.text or ">sealed<" in page.text


def test_the_home_page_is_paged(client, store, monkeypatch):
    monkeypatch.setattr(browse, "HOME_PAGE_SIZE", 1)
    shown = [re.findall(r'<a class="docket-link" href="/docket/([^"]+)"', client.get("/", params={"page": n}).text)
             for n in (1, 2, 3)]
    assert shown == [[store.dockets[0]], [store.dockets[1]], []]
    assert 'rel="next" href="/?page=2"' in client.get("/").text
    assert "there are 2 pages" in client.get("/", params={"page": 3}).text
    assert client.get("/", params={"page": "x"}).status_code == 400


def test_a_dockets_comments_without_a_query_are_paged_and_cover_the_docket(client, store, monkeypatch):
    docket = store.dockets[0]
    monkeypatch.setattr(browse, "BROWSE_PAGE_SIZE", 3)
    seen, number = [], 1
    while True:
        page = client.get("/comments", params={"docket": docket, "page": number})
        assert page.status_code == 200
        keys = listed_comments(page.text)
        if not keys:
            break
        seen += keys
        number += 1
    assert sorted(seen) == sorted(i.key for i in _comments(docket)) and len(seen) == len(set(seen))
    assert "No comments on this page" in page.text
    first = client.get("/comments", params={"docket": docket}).text
    assert f"of {len(seen)}" in first and 'rel="next"' in first


def test_sort_orders_by_posted_date_and_organisation(client, store):
    docket = store.dockets[0]
    posted = {i.key: i.posted_date or "" for i in _comments(docket)}
    oldest = listed_comments(client.get("/comments", params={"docket": docket, "sort": "oldest"}).text)
    newest = listed_comments(client.get("/comments", params={"docket": docket}).text)
    assert [posted[k] for k in oldest] == sorted(posted[k] for k in oldest)
    assert [posted[k] for k in newest] == sorted((posted[k] for k in newest), reverse=True)
    by_org = listed_comments(client.get("/comments", params={"docket": docket, "sort": "organisation"}).text)
    orgs = [reports.find_item(k).organization for k in by_org]
    named = [o.lower() for o in orgs if o]
    assert named == sorted(named) and orgs[:len(named)] == [o for o in orgs if o]  # named first


def test_sort_by_campaign_size_puts_the_campaign_first(client, store):
    campaign = _campaign(store)
    keys = listed_comments(client.get("/comments", params={"docket": campaign.docket, "sort": "campaign"}).text)
    members = {m.item for m in campaign_rows.members_of(campaign.id)}
    assert set(keys[:len(members)]) == members


def test_facets_count_what_their_links_show_and_two_facets_combine(client, store):
    docket = store.dockets[0]
    page = client.get("/comments", params={"docket": docket}).text
    files = _with_files()
    total = len(_comments(docket))
    facet = dict(re.findall(r'<a href="/comments\?docket=[^"]*attachments=(yes|no)">[^<]+</a> <span class="n">(\d+)</span>', page))
    expected_yes = sum(1 for i in _comments(docket) if i.key in files)
    assert facet == {k: str(v) for k, v in {"yes": expected_yes, "no": total - expected_yes}.items() if v}
    for value, count in facet.items():
        narrowed = listed_comments(client.get("/comments", params={"docket": docket, "attachments": value}).text)
        assert len(narrowed) == int(count) and all((k in files) == (value == "yes") for k in narrowed)
    # Two facets at once: an organisation and has-attachments.
    both = client.get("/comments", params={"docket": docket, "org": "rural wage", "attachments": "no"})
    cited = reports.find_item(CITING_ID)
    expected = [CITING_ID] if cited.docket == docket and CITING_ID not in files else []
    assert listed_comments(both.text) == expected
    assert 'class="chip">organisation or name: rural wage' in both.text and "has attachments: no" in both.text


def test_organisation_and_withdrawn_facets(client, store):
    docket = reports.find_item(CITING_ID).docket
    page = client.get("/comments", params={"docket": docket}).text
    assert re.search(r'org=Rural\+Wage\+Coalition">Rural Wage Coalition</a> <span class="n">1</span>', page)
    withdrawn = dict(re.findall(r'withdrawn=(yes|no)">[^<]+</a> <span class="n">(\d+)</span>', page))
    assert sum(map(int, withdrawn.values())) == len(_comments(docket))
    assert int(withdrawn.get("yes", 0)) == sum(1 for i in _comments(docket) if i.withdrawn)


def test_filters_work_with_a_query_too(client, store):
    files = _with_files()
    query = {"q": "hospital payment rural"}
    # The floor set off (the search_floor setting as a user may set it): every comment is a
    # result to narrow, those with files and those without.
    index_db = store.runtime.index_db()
    index_db.search_floor = -1.0
    try:
        every = re.findall(r'class="comment-link" href="/comment/([^"]+)"', client.get("/search", params=query).text)
        without = re.findall(r'class="comment-link" href="/comment/([^"]+)"',
                             client.get("/search", params={**query, "attachments": "no"}).text)
        assert without and set(without) < set(every) and not set(without) & files
        with_files = re.findall(r'class="comment-link" href="/comment/([^"]+)"',
                                client.get("/search", params={**query, "attachments": "yes"}).text)
        assert with_files and set(with_files) <= files
    finally:
        index_db.search_floor = None


def test_filters_without_a_query_open_the_browse_page(client, store):
    answer = client.get("/search", params={"docket": store.dockets[1]}, follow_redirects=False)
    assert answer.status_code == 302 and answer.headers["location"] == f"/comments?docket={store.dockets[1]}"
    followed = client.get("/search", params={"docket": store.dockets[1]})
    assert sorted(listed_comments(followed.text)) == sorted(i.key for i in _comments(store.dockets[1]))
    docket_page = client.get(f"/docket/{store.dockets[1]}").text
    assert f'href="/comments?docket={store.dockets[1]}"' in docket_page


@pytest.mark.parametrize("path", ["/comments", "/search", "/feed/search"])
@pytest.mark.parametrize("params, said", [
    ({"from": "2026-13-40"}, "from=2026-13-40 is not a date"),
    ({"to": "yesterday"}, "to=yesterday is not a date"),
    ({"from": "2026-03-02", "to": "2026-03-01"}, "is after to=2026-03-01"),
    ({"page": "0"}, "page=0 is not a page number"),
    ({"page": "-4"}, "page=-4 is not a page number"),
    ({"sort": "size; drop table"}, "sort=size; drop table is not one of"),
    ({"attachments": "maybe"}, "attachments=maybe is not one of: yes, no"),
])
def test_bad_parameters_are_said_with_400(client, path, params, said):
    answer = client.get(path, params={"q": "rule", **params} if path == "/search" else params)
    assert answer.status_code == 400
    assert said.replace("<", "&lt;") in answer.text


def test_campaign_page_shows_size_dates_clean_text_and_members(client, store):
    campaign = _campaign(store)
    page = client.get(f"/campaign/{campaign.id}")
    assert page.status_code == 200
    assert f"{campaign.size:,} comment records" in page.text
    assert eastern_date(campaign.first_seen) in page.text and eastern_date(campaign.last_seen) in page.text
    assert "<!--" not in page.text.split("<main>")[1] and "&lt;!--" not in page.text
    assert "<!-- page" in campaign.representative_text  # the stored text has markers: the page shows breaks
    assert 'class="page-marker">page 1<' in page.text
    members = re.findall(r'<tr class="member">\s*<td><a class="comment-link" href="/comment/([^"]+)"', page.text)
    assert members == [m.item for m in campaign_rows.members_of(campaign.id)]


def test_campaign_page_is_reachable_from_a_comment_the_docket_and_search(client, store):
    campaign = _campaign(store)
    member = campaign_rows.members_of(campaign.id)[-1].item
    comment = client.get(f"/comment/{member}").text
    assert f'class="campaign-link" href="/campaign/{campaign.id}"' in comment
    docket = client.get(f"/docket/{campaign.docket}").text
    assert f'href="/campaign/{campaign.id}"' in docket and "&lt;!-- page" not in docket and "<!-- page" not in docket
    browse_page = client.get("/comments", params={"docket": campaign.docket}).text
    assert f'href="/campaign/{campaign.id}">one of {campaign.size}' in browse_page


def test_campaign_members_are_paged(client, store, monkeypatch):
    campaign = _campaign(store)
    monkeypatch.setattr(browse, "MEMBERS_PAGE_SIZE", 1)
    members = [m.item for m in campaign_rows.members_of(campaign.id)]
    shown = [re.findall(r'<tr class="member">\s*<td><a class="comment-link" href="/comment/([^"]+)"',
                        client.get(f"/campaign/{campaign.id}", params={"page": n}).text) for n in (1, 2)]
    assert shown == [[members[0]], [members[1]]]
    assert client.get(f"/campaign/{campaign.id}", params={"page": "x"}).status_code == 400
    assert client.get("/campaign/NOPE-0000").status_code == 404


def test_organisation_page_lists_its_comments_by_docket(client, store):
    page = client.get("/organisation", params={"name": "Rural Wage Coalition"})
    assert page.status_code == 200
    assert listed_comments(page.text) == [CITING_ID]
    assert f'<h2 class="docket-heading"><a href="/docket/{CITING_ID.rsplit("-", 1)[0]}">' in page.text
    comment = client.get(f"/comment/{CITING_ID}").text
    assert 'href="/organisation?name=Rural%20Wage%20Coalition"' in comment
    assert client.get("/organisation", params={"name": "Nobody At All"}).status_code == 404
    assert client.get("/organisation").status_code == 400


def test_every_new_page_keeps_the_security_headers_and_links_its_feed(client, store):
    campaign = _campaign(store)
    for path in ("/", f"/comments?docket={store.dockets[0]}", f"/campaign/{campaign.id}",
                 "/organisation?name=Rural+Wage+Coalition", f"/docket/{store.dockets[0]}", "/search?q=rule"):
        answer = client.get(path)
        assert "default-src 'none'" in answer.headers["content-security-policy"], path
        feed = re.search(r'<link rel="alternate" type="application/atom\+xml" [^>]*href="([^"]+)"', answer.text)
        assert feed, path
        href = feed.group(1).replace("&amp;", "&")
        assert client.get(href).status_code == 200, href
        assert urlsplit(href).path.startswith("/feed/")
        assert f'href="{feed.group(1)}"' in answer.text.split("</head>")[1], path  # and linked on the page
        if path.startswith("/comments"):
            assert parse_qs(urlsplit(href).query) == {"docket": [store.dockets[0]]}


def test_docket_and_status_pages_show_failed_and_waiting_rows_with_reasons(client, store):
    from pipeline.store.models import ItemState

    everything = list(ItemState.select())
    read_by_ocr = {r.item for r in everything if r.stage == "ocr" and r.state not in ("pending", "retry", "stale")}
    bad = [r for r in everything if r.state in ("failed", "gone", "too_large", "unsupported", "retry", "pending", "stale")
           or (r.state == "ocr_needed" and r.item not in read_by_ocr
               and not any(o.startswith(f"{r.item}/") for o in read_by_ocr))]
    assert any(r.state in ("failed", "gone") for r in bad)  # the corpus has a corrupt PDF and a missing file
    # Its scan was read by OCR: extract's ocr_needed rows of it wait no more, and are not listed.
    assert read_by_ocr and any(r.state == "ocr_needed" for r in everything) and not any(
        r.state == "ocr_needed" for r in bad)
    pattern = re.compile(r'<tr class="problem (failed|waiting)">\s*(?:<td><a href="/docket/[^"]+#problems">([^<]+)</a></td>\s*)?'
                         r'<td>([^<]+)</td>\s*<td>(?:<strong class="state-failed">|<span class="state-waiting">)([a-z_]+)'
                         r'.*?<td class="reason">([^<]*)</td>\s*<td class="n">([\d,]+)</td>', re.S)
    for docket in store.dockets:
        shown = pattern.findall(client.get(f"/docket/{docket}").text)
        expected: dict[tuple, int] = {}
        for r in bad:
            if r.docket == docket:
                key = (r.stage, r.state, r.reason or "—")
                expected[key] = expected.get(key, 0) + 1
        assert {(stage, state, reason.replace("&#39;", "'").replace("&#34;", '"').replace("&amp;", "&")
                 .replace("&lt;", "<").replace("&gt;", ">")): int(n)
                for _, _, stage, state, reason, n in shown} == expected
    status = pattern.findall(client.get("/status").text)
    assert sum(int(n) for *_, n in status) == len(bad)
    assert {d for _, d, *_ in status} == {r.docket for r in bad}


@pytest.mark.parametrize("path", ["/", "/comments?docket={docket}", "/comments?docket={docket}&sort=campaign",
                                  "/comments?docket={docket}&position=support",
                                  "/campaign/{campaign}", "/organisation?name={organisation}",
                                  "/feed/docket/{docket}"])
def test_a_page_costs_the_same_statements_however_many_rows_it_shows(client, store, monkeypatch, path):
    from pipeline.counters import STATE_QUERIES, counters
    from pipeline.web import feeds

    campaign = _campaign(store)
    busiest = max(store.dockets, key=lambda d: len(_comments(d)))
    organisation = Item.select(Item.organization).where(Item.organization.is_null(False)).first().organization
    url = path.format(docket=busiest, campaign=campaign.id, organisation=organisation)
    statements = []
    for rows in (1, 50):  # one row a page, then every row on one page
        for name in ("BROWSE_PAGE_SIZE", "MEMBERS_PAGE_SIZE"):
            monkeypatch.setattr(browse, name, rows)
        monkeypatch.setattr(feeds, "FEED_ENTRIES", rows)
        with counters.counting_queries(), counters.measure() as io:
            assert client.get(url).status_code == 200
        statements.append(io.get(STATE_QUERIES, 0))
    # 16: the page's own statements (the position facet's one among them), the topic facet's
    # two (the store's dockets have topic maps) and the check that the docket filtered by
    # exists (app.py's one check of every request's values).
    assert 0 < statements[0] == statements[1] <= 16, statements
