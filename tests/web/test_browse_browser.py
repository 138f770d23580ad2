"""Browsing in headless Chromium (Debian's, driven by Playwright) against `docketeer serve` run
as users run it: home -> docket -> its comments narrowed by two facets -> a campaign -> a
member comment -> an organisation; a subtype facet, then a search narrowed by a state facet;
a bad date in the address shows a message. Every page is saved as a screenshot under the
test's tmp folder (``docs/serve.png`` is the search page with facets)."""

from __future__ import annotations

import re

import pytest

from pipeline.campaigns import queries as campaign_rows
from pipeline.store.models import Attachment, Item
from tests.fixtures.served_site import chromium, served
from tests.fixtures.web_fixtures import web_store

pytestmark = pytest.mark.postgres


# The records' kept attributes, as the API sends them: two subtypes, three states.
RECORDS = {f"{docket}-{n:04d}": {"subtype": "Mass Mail Campaign" if n % 3 == 0 else "Public Comment",
                                 "stateProvinceRegion": ("IA", "OH", "CA")[n % 3], "country": "United States",
                                 "category": "Hospital"}
           for docket in ("CMS-2026-0001", "EPA-2026-0002") for n in range(2, 10)}


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    with web_store(tmp_path_factory.mktemp("browseb"), pg_server, RECORDS) as built:
        yield built


@pytest.fixture(scope="module")
def site(store):
    with served(store) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser, site):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.requests = []
    tab.on("request", lambda request: tab.requests.append(request.url))
    yield tab
    context.close()


def _count(text: str) -> int:
    return int(text.replace(",", ""))


def test_home_docket_two_facets_campaign_member_organisation(page, site, store, tmp_path):
    campaign = next(c for d in store.dockets for c in campaign_rows.campaigns_of(d))
    docket = campaign.docket

    page.goto(f"{site}/")
    assert page.locator("a.docket-link").all_inner_texts() == sorted(store.dockets)
    assert page.locator("svg.spark").count() == len(store.dockets)
    page.screenshot(path=tmp_path / "home.png", full_page=True)

    page.locator("a.docket-link", has_text=docket).click()
    page.wait_for_selector("svg.chart")
    assert page.locator("h1").inner_text() == docket
    page.screenshot(path=tmp_path / "docket.png", full_page=True)

    page.locator("a.browse-link").click()
    page.wait_for_selector("table.comments")
    total = Item.select().where((Item.docket == docket) & (Item.kind == "comment")).count()
    assert page.locator("tr.comment-row").count() == total
    # Facet one: has attachments = yes; its count is the number of rows it leaves.
    yes = page.locator('ul[data-facet="attachments"] li', has_text="yes")
    expected = _count(yes.locator("span.n").inner_text())
    yes.locator("a").click()
    page.wait_for_selector("p.active-filters")
    assert page.locator("tr.comment-row").count() == expected < total
    # Facet two: the campaign, among the comments with attachments (the form letter is a PDF).
    facet = page.locator('ul[data-facet="campaign"] li', has_text=campaign.id)
    in_both = _count(facet.locator("span.n").inner_text())
    facet.locator("a").first.click()
    page.wait_for_load_state()
    shown = page.locator("a.comment-link").all_inner_texts()
    files = {a.item for a in Attachment.select(Attachment.item)}
    members = [m.item for m in campaign_rows.members_of(campaign.id)]
    assert len(shown) == in_both and set(shown) == {m for m in members if m in files}
    assert page.locator("span.chip").count() == 3  # docket, attachments, campaign
    page.screenshot(path=tmp_path / "browse.png", full_page=True)

    page.locator("a.campaign-link").first.click()
    page.wait_for_selector("table.members")
    assert page.locator("h1").inner_text() == f"Campaign {campaign.id}"
    assert "<!--" not in page.locator("div.representative").inner_text()
    assert page.locator("div.representative p.page-marker").count() >= 1
    assert page.locator("tr.member a.comment-link").all_inner_texts() == members
    page.screenshot(path=tmp_path / "campaign.png", full_page=True)

    page.locator("tr.member a.comment-link").last.click()
    page.wait_for_selector("h1")
    assert page.locator("h1").inner_text() == members[-1]
    assert page.locator("a.campaign-link").count() == 1
    page.screenshot(path=tmp_path / "member.png", full_page=True)

    organisation = Item.get(Item.key == members[-1]).organization
    if organisation:
        page.locator("a.org-link").click()
    else:  # this member names none: the organisation of the docket's first named comment
        page.goto(f"{site}/comments?docket={docket}&sort=organisation")
        organisation = page.locator("a.org-link").first.inner_text()
        page.locator("a.org-link").first.click()
    page.wait_for_selector("h1")
    assert page.locator("h1").inner_text() == organisation
    theirs = Item.select().where((Item.organization == organisation) & (Item.kind == "comment")).count()
    assert page.locator("tr.comment-row").count() == theirs
    page.screenshot(path=tmp_path / "organisation.png", full_page=True)
    assert all(url.startswith(site) for url in page.requests)  # nothing fetched from elsewhere
    for name in ("home", "docket", "browse", "campaign", "member", "organisation"):
        assert (tmp_path / f"{name}.png").stat().st_size > 5000, name


def test_a_subtype_facet_then_a_search_narrowed_by_a_state_facet(page, site, store, tmp_path):
    docket = store.dockets[0]
    page.goto(f"{site}/comments?docket={docket}")
    facet = page.locator('ul[data-facet="subtype"] li', has_text="Mass Mail Campaign")
    expected = _count(facet.locator("span.n").inner_text())
    facet.locator("a").click()
    page.wait_for_selector("p.active-filters")
    mass_mail = {k for (k,) in Item.select(Item.key).where((Item.docket == docket) & (Item.kind == "comment")
                                                            & (Item.subtype == "Mass Mail Campaign")).tuples()}
    assert sorted(page.locator("tr.comment-row a.comment-link").all_inner_texts()) == sorted(mass_mail)
    assert len(mass_mail) == expected > 0
    assert "subtype: Mass Mail Campaign" in page.locator("p.active-filters").inner_text()
    page.screenshot(path=tmp_path / "browse-subtype.png", full_page=True)

    page.goto(f"{site}/search")
    page.fill("input[name=q]", "hospital payment rural wage")
    page.press("input[name=q]", "Enter")
    page.wait_for_selector("aside.facets")
    everywhere = page.locator("a.comment-link").all_inner_texts()
    page.screenshot(path=tmp_path / "search-facets.png")  # docs/serve.png
    state = page.locator('ul[data-facet="state"] li').first
    value = state.locator("a").inner_text()
    state.locator("a").click()
    page.wait_for_selector(f'input[name=state][value="{value}"]')
    narrowed = page.locator("a.comment-link").all_inner_texts()
    in_state = {k for (k,) in Item.select(Item.key).where(Item.state_province_region == value).tuples()}
    assert narrowed and set(narrowed) <= in_state and set(narrowed) <= set(everywhere)
    assert page.locator("input[name=q]").input_value() == "hospital payment rural wage"  # the query kept
    page.screenshot(path=tmp_path / "search-narrowed.png")
    assert (tmp_path / "search-facets.png").stat().st_size > 5000 < (tmp_path / "search-narrowed.png").stat().st_size
    assert all(url.startswith(site) for url in page.requests)


def test_a_bad_date_shows_a_message(page, site, store, tmp_path):
    answer = page.goto(f"{site}/comments?docket={store.dockets[0]}&from=2026-13-40")
    assert answer.status == 400
    message = page.locator("ul.error").inner_text()
    assert re.search(r"from=2026-13-40 is not a date", message)
    page.screenshot(path=tmp_path / "bad-date.png", full_page=True)
    page.locator("main a").first.click()  # the way back: the page without the bad parameters
    page.wait_for_load_state()
    assert page.url.endswith("/comments")
