"""Hostile query strings on every route and feed: one validation for all of them (ASCII digits,
no control character, ids the store knows), and bounded work per request (a filter over a
100,000-character organisation stays fast; a request that runs out of time is a 503 and the
next page is served)."""

from __future__ import annotations

import time

import pytest

from pipeline.campaigns import queries as campaign_rows
from pipeline.store.models import Item
from tests.fixtures.web_fixtures import CITING_ID, page_client, web_store

pytestmark = pytest.mark.postgres

LONG_ID = "CMS-2026-0001-0003"
LONG_ORGANISATION = "Coalition " + "a" * 100_000


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    records = {LONG_ID: {"organization": LONG_ORGANISATION}}
    with web_store(tmp_path_factory.mktemp("hostile"), pg_server, records) as built:
        yield built


@pytest.fixture(scope="module")
def client(store):
    with page_client(store.runtime) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def routes(store):
    """Every route and feed, each with the parameters it takes filled with good values."""
    docket = CITING_ID.rsplit("-", 1)[0]
    campaign = next(c for d in store.dockets for c in campaign_rows.campaigns_of(d))
    return [("/", {}), ("/comments", {"docket": docket}), ("/search", {"q": "rural"}), ("/status", {}),
            (f"/docket/{docket}", {}), (f"/comment/{CITING_ID}", {}), (f"/campaign/{campaign.id}", {}),
            ("/organisation", {"name": "Rural Wage Coalition"}), (f"/rule/{docket}/organisations", {}),
            (f"/feed/docket/{docket}", {}), ("/feed/search", {"q": "rural"}), ("/feed/search", {"docket": docket}),
            ("/feed/organisation", {"name": "Rural Wage Coalition"}), (f"/feed/campaign/{campaign.id}", {})]


def test_every_route_answers_its_good_parameters(client, routes):
    for path, params in routes:
        assert client.get(path, params=params).status_code == 200, path


@pytest.mark.parametrize("hostile", [
    {"page": "²"}, {"page": "٣"}, {"page": "１"}, {"page": "1\x00"},
    {"docket": "\x00"}, {"q": "rural\x1b]0;pwned\x07"}, {"org": "\x00"}, {"name": "Rural\x00"},
    {"campaign": "\x1b"}, {"topic": "t\x00"}, {"sort": "\x00"}, {"phases": "final\x00"}, {"nonsense\x00": "1"},
    {"subtype": "x" * 5000},
])
def test_hostile_parameters_are_400_on_every_route_and_feed(client, routes, hostile):
    for path, params in routes:
        answer = client.get(path, params={**params, **hostile})
        assert answer.status_code == 400, (path, hostile, answer.status_code)
        assert "cannot be shown" in answer.text or "is not" in answer.text, (path, answer.text[:300])


@pytest.mark.parametrize("path", ["/docket/%00", "/comment/A%00B", "/campaign/%1B", "/feed/docket/%00",
                                  "/feed/campaign/%00", "/rule/%00/organisations"])
def test_a_control_character_in_the_path_is_400(client, path):
    assert client.get(path).status_code == 400


@pytest.mark.parametrize("path", ["/comments", "/feed/search", "/search"])
@pytest.mark.parametrize("params, said", [
    ({"campaign": "NOPE-campaign"}, "no campaign"),
    ({"topic": "NOPE:t1"}, "no topic"),
    ({"docket": "NOPE-0000"}, "no docket"),
])
def test_an_unknown_id_is_400_on_pages_and_feeds_alike(client, path, params, said):
    for query in ({}, {"q": "rural"}):
        answer = client.get(path, params={**query, **params})
        assert answer.status_code == 400 and said in answer.text, (path, query, params, answer.text[:300])


def test_the_search_feed_checks_what_the_search_page_checks(client):
    """An organisation nothing matches: the page says 400, so does its feed (never 50
    unfiltered entries)."""
    params = {"q": "rural", "org": "Nobody Inc of Nowhere"}
    assert client.get("/search", params=params).status_code == 400
    feed = client.get("/feed/search", params=params)
    assert feed.status_code == 400 and "no submitter or organisation contains" in feed.text


def test_filtering_by_organisation_over_a_huge_stored_name_stays_fast(client, store):
    assert Item.get_by_id(LONG_ID).organization == LONG_ORGANISATION  # the store holds it whole
    wildcards = "a%" * 99 + "b"  # a pattern of wildcards, once taken as one, over 100,000 a's
    for path, params in [("/search", {"q": "rural", "org": wildcards}), ("/search", {"q": "rural", "org": "a" * 199 + "b"}),
                         ("/comments", {"org": wildcards}), ("/feed/search", {"org": wildcards}),
                         ("/search", {"q": "rural", "org": "Coalition"})]:
        started = time.monotonic()
        answer = client.get(path, params=params)
        took = time.monotonic() - started
        assert answer.status_code in (200, 400) and took < 2.0, (path, params["org"][:20], answer.status_code, took)
    found = client.get("/comments", params={"org": "Coalition aaaa"})
    assert LONG_ID in found.text  # still found by its name's head


def test_a_request_that_runs_out_of_time_is_503_and_the_next_is_served(client, store, monkeypatch):
    from pipeline.web import pages, request_limits

    def endless(runtime, page=1):  # a statement that would read for minutes
        runtime.state.execute_sql("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
                                  "SELECT count(*) FROM n").fetchall()

    monkeypatch.setattr(request_limits, "STATEMENT_SECONDS", 0.3)
    with monkeypatch.context() as patched:
        patched.setattr(pages, "status_page", endless)
        started = time.monotonic()
        answer = client.get("/status")
        assert answer.status_code == 503 and "took too long" in answer.text
        assert time.monotonic() - started < 5
    assert client.get("/status").status_code == 200
    assert client.get("/comments", params={"docket": CITING_ID.rsplit("-", 1)[0]}).status_code == 200
