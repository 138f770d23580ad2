"""Every page of ``docketeer serve`` through Starlette's TestClient, over a store built by
the real pipeline (embedded PostgreSQL index, SQLite state, hashing embedder)."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from pipeline.ops import cli
from pipeline.reading import campaigns, reports
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.web_fixtures import CITATION, CITING_ID, HOSTILE_ID, HOSTILE_TEXT

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def store(read_only_web_store):
    """This file's tests only read the store: the folder's shared one (tests/web/conftest.py)."""
    return read_only_web_store


@pytest.fixture(scope="module")
def client(store):
    with TestClient(make_app(store.runtime, pages.WarmSearch(store.runtime)), base_url="http://127.0.0.1") as test_client:
        yield test_client


def _result_ids(html: str) -> list[str]:
    """The items a page links to as results: comments and the dockets' documents."""
    return re.findall(r'class="(?:comment|document)-link" href="/(?:comment|document)/([^"]+)"', html)


def test_search_page_finds_the_citation_first_with_its_passage_marked(client):
    page = client.get("/search", params={"q": CITATION})
    assert page.status_code == 200
    assert _result_ids(page.text)[0] == CITING_ID
    assert "<mark>1395ww</mark>" in page.text and "<mark>U.S.C</mark>" in page.text
    assert f'href="https://www.regulations.gov/comment/{CITING_ID}"' in page.text
    assert "Pat Citation" in page.text and "Rural Wage Coalition" in page.text
    assert re.search(r'class="date">\d{4}-\d\d-\d\d<', page.text)


def test_unrelated_words_are_no_good_match_on_the_page(client):
    page = client.get("/search", params={"q": "zebra giraffe volcano"})
    assert page.status_code == 200 and _result_ids(page.text) == []
    assert re.search(r"No good match \(best similarity -?0\.\d\d, floor 0\.21\)", page.text)


def test_filters_narrow_the_results(client, store):
    query = {"q": "hospital payment rural"}
    everywhere = _result_ids(client.get("/search", params=query).text)
    assert {key.rsplit("-", 1)[0] for key in everywhere} == set(store.dockets)
    one = _result_ids(client.get("/search", params={**query, "docket": store.dockets[1]}).text)
    assert one and set(one) < set(everywhere) and {k.rsplit("-", 1)[0] for k in one} == {store.dockets[1]}
    by_org = _result_ids(client.get("/search", params={**query, "org": "rural wage"}).text)
    assert by_org == [CITING_ID]
    none = client.get("/search", params={**query, "from": "2001-01-01", "to": "2001-01-31"})
    assert _result_ids(none.text) == [] and "No results" in none.text


def test_date_filters_follow_eastern_days(client, store):
    item = reports.find_item(CITING_ID)
    day = pages.eastern_date(item.posted_date)
    found = _result_ids(client.get("/search", params={"q": CITATION, "from": day, "to": day}).text)
    assert CITING_ID in found
    assert all(pages.eastern_date(reports.find_item(k).posted_date) == day for k in found)


def test_results_are_paged_with_the_query_in_the_url(client, monkeypatch):
    monkeypatch.setattr(pages, "PAGE_SIZE", 3)
    first = client.get("/search", params={"q": "comment"})
    second = client.get("/search", params={"q": "comment", "page": "2"})
    assert len(_result_ids(first.text)) == 3 and 'rel="next" href="/search?q=comment&amp;page=2"' in first.text
    assert not set(_result_ids(first.text)) & set(_result_ids(second.text))
    assert 'rel="prev"' in second.text
    huge = client.get("/search", params={"q": "comment", "page": "999999999"})
    # Bounded: past the last page is page MAX_PAGE, and empty.
    assert huge.status_code == 200 and f"page={pages.MAX_PAGE - 1}\"" in huge.text
    assert "No results on this page" in huge.text


def test_campaign_filter_and_one_result_per_campaign_through_the_hook(client, store, monkeypatch):
    # The CampaignGroups stage is wired through pipeline/reading/campaigns.py; here its answers
    # are given for the first docket's comments, as the stage's tables would give them.
    query = {"q": "proposed rule", "kind": "comments"}
    everywhere = _result_ids(client.get("/search", params=query).text)
    members = [key for key in everywhere if key.startswith(store.dockets[0])]
    assert len(members) >= 2 and len(members) < len(everywhere)
    monkeypatch.setattr(campaigns, "available", lambda: True)
    monkeypatch.setattr(campaigns, "campaign_members", lambda cid: members if cid == "C-1" else [])
    monkeypatch.setattr(campaigns, "campaign_exists", lambda cid: cid == "C-1")
    monkeypatch.setattr(campaigns, "campaign_info",
                        lambda keys: {k: {"id": "C-1", "size": len(members), "submissions": len(members)} for k in keys if k in members})
    page = client.get("/search", params=query).text
    assert 'name="per_campaign"' in page and f"campaign of {len(members)}" in page

    only = _result_ids(client.get("/search", params={**query, "campaign": "C-1"}).text)
    assert sorted(only) == sorted(members)
    assert _result_ids(client.get("/search", params={**query, "campaign": "C-404"}).text) == []
    collapsed = _result_ids(client.get("/search", params={**query, "per_campaign": "1"}).text)
    assert collapsed == [k for k in everywhere if k not in members or k == members[0]]


def test_hostile_comment_text_is_escaped_everywhere(client):
    results = client.get("/search", params={"q": "zanzibar"}).text
    comment = client.get(f"/comment/{HOSTILE_ID}").text
    docket = client.get(f"/docket/{HOSTILE_ID.rsplit('-', 1)[0]}").text
    for html in (results, comment):
        assert "<script>window.pwned" not in html and "<img src=/static/pwned.png" not in html
        assert "&lt;script&gt;window.pwned" in html
    assert "Script Kiddies &lt;b&gt;Inc&lt;/b&gt;" in docket and "<b>Inc</b>" not in docket
    assert HOSTILE_TEXT.split(" <script>")[0] in comment


def test_every_page_forbids_scripts_and_foreign_requests(client):
    for path in ("/search?q=x", "/status", f"/comment/{HOSTILE_ID}", "/docket/CMS-2026-0001"):
        policy = client.get(path).headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src" not in policy


def test_docket_page_counts_equal_docketeer_stats(client, store, capsys):
    docket = store.dockets[0]
    page = client.get(f"/docket/{docket}")
    assert page.status_code == 200
    shown = set(re.findall(r"<tr class=\"state-[^\"]+\"><td>([^<]+)</td><td>([^<]+)</td><td class=\"n\">(\d+)</td>",
                           page.text))
    assert cli.main(["stats", "--docket", docket]) == 0
    stats = {tuple(line.split()[1:4]) for line in capsys.readouterr().out.splitlines()[1:]}
    assert shown == stats and len(shown) > 3
    assert "<svg" in page.text and "comments received per day" in page.text
    assert "Rural Wage Coalition" in page.text  # top organisations
    assert "comment period (Eastern)" in page.text


def test_comment_page_shows_body_attachments_and_page_markers(client, store):
    with_pdf = next(key for key in sorted(reports.item_dockets()) if reports.find_item(key).kind == "comment"
                    and any(a.format == "pdf" for a in reports.attachments_of(key)))
    page = client.get(f"/comment/{with_pdf}")
    assert page.status_code == 200
    attachment = reports.attachments_of(with_pdf)[0]
    assert attachment.filename in page.text and "download ok" in page.text
    assert 'class="page-marker">page 1<' in page.text
    assert f"https://www.regulations.gov/comment/{with_pdf}" in page.text


def test_status_page_lists_every_docket_with_its_progress(client, store):
    page = client.get("/status")
    assert page.status_code == 200
    for docket in store.dockets:
        assert f'href="/docket/{docket}"' in page.text
    rows = re.findall(r'<td class="n">(\d+)</td><td class="n">([^<]+)</td>\s*<td class="n">([^<]+)</td><td class="n">(\d+)</td>',
                      page.text)
    progress = reports.comment_progress()
    # Failed items are said beside the count ("8 (1 failed)"), as docketeer dockets says them.
    assert sorted(rows) == sorted((str(p.get("comments", 0)), reports.progress_cell(p, "detailed"),
                                   reports.progress_cell(p, "extracted"), str(p.get("extracted", 0)))
                                  for p in progress.values())
    assert any("failed)" in row[2] for row in rows)  # the corpus's corrupt file


def test_unknown_ids_and_bad_parameters_answer_plainly(client):
    assert client.get("/comment/NOPE-0000").status_code == 404
    missing = client.get("/docket/%3Cscript%3E")
    assert missing.status_code == 404 and "&lt;script&gt;" in missing.text
    odd = client.get("/search", params={"q": "%%%"})
    assert odd.status_code == 200 and "nothing to search for" in odd.text
    bad = client.get("/search", params={"q": "rule", "from": "yesterday", "page": "-4"})
    assert bad.status_code == 400 and "from=yesterday is not a date" in bad.text and "page=-4" in bad.text
    assert client.get("/").status_code == 200  # redirected to the search page


def test_serve_refuses_a_bad_port_in_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["serve", "--port", "99999"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_serve_on_a_port_in_use_is_one_line_before_anything_loads(store, capsys):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["serve", "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no "loading", no URL printed for a page that will not be there
    assert err.splitlines() == [f"docketeer: serve: port {port} on 127.0.0.1 is in use: stop what "
                                "listens there, or pass --port with another"]


def test_serve_on_a_store_with_nothing_indexed_is_one_line_and_starts_no_server(tmp_path, capsys):
    from pipeline.runtime import set_runtime
    from tests.fixtures.luigid_server import free_port
    from tests.fixtures.state_fixtures import make_runtime

    runtime = make_runtime(tmp_path)
    runtime.state  # noqa: B018 - a store with its state DB, and no index yet
    previous = set_runtime(runtime)
    try:
        assert cli.main(["serve", "--port", str(free_port())]) == 2
    finally:
        set_runtime(previous)
    assert capsys.readouterr().err.splitlines() == [
        f"docketeer: serve: nothing is indexed yet in {tmp_path / 'data'}: run "
        "`luigi --module pipeline IndexAll` first"]
    assert not (tmp_path / "data" / "index-pg").exists()


def test_search_arguments_are_checked_as_the_command_line_checks_them(client):
    """NUL, the calendar's edges, a day range the wrong way round, an unknown campaign or
    organisation: 400 with the reason on the page, never a 500 or a filter dropped."""
    said = {
        "rural\x00hospitals": ("q", "control character"),
        "0999-01-01": ("from", "outside 1000-01-01 to 9999-12-31"),
    }
    for value, (name, reason) in said.items():
        page = client.get("/search", params={"q": "rural", name: value})
        assert page.status_code == 400 and reason in page.text, page.text[:500]
    wrong_way = client.get("/search", params={"q": "rural", "from": "2026-02-02", "to": "2026-02-01"})
    assert wrong_way.status_code == 400 and "is after" in wrong_way.text
    campaign = client.get("/search", params={"q": "rural", "campaign": "no-such-campaign"})
    assert campaign.status_code == 400 and "no campaign" in campaign.text
    org = client.get("/search", params={"q": "rural", "org": "Nobody Inc of Nowhere"})
    assert org.status_code == 400 and "no submitter or organisation contains" in org.text
    widest = client.get("/search", params={"q": CITATION, "from": "1000-01-01", "to": "9999-12-31"})
    assert widest.status_code == 200 and _result_ids(widest.text)[0] == CITING_ID


def test_a_result_is_a_comment_with_its_other_matching_passages_under_it(client):
    page = client.get("/search", params={"q": "hospital payment rural"})
    ids = _result_ids(page.text)
    assert ids and len(ids) == len(set(ids))
    folded = re.findall(r'<summary>(\d+) more matching passages? in this (?:comment|document)</summary>', page.text)
    assert folded and page.text.count('class="more-passage"') == sum(int(n) for n in folded)
