"""`docketeer show COMMENT_ID` and `docketeer campaigns DOCKET`, on a store the real pipeline
built (IndexAll, campaigns included): what they print agrees with the comment page and the
docket page, their JSON's shape, and the one-line errors of an unknown id."""

from __future__ import annotations

import json

import pytest

from pipeline.campaigns import queries as campaign_rows
from pipeline.clock import eastern_instant
from pipeline.ops import cli
from pipeline.reading import campaigns as web_campaigns
from pipeline.store.models import Docket, Item
from pipeline.web import pages
from tests.fixtures.pipeline_fixtures import built_store

SHOW_KEYS = {"id", "kind", "docket", "title", "document", "phase", "posted_date", "received_date", "last_modified",
             "withdrawn", "submitter", "organization", "organisations_resolved", "record", "campaign", "link",
             "body", "attachments_summary", "extracted", "attachments", "stages"}
ATTACHMENT_KEYS = {"file", "ordinal", "title", "format", "size", "declared_size", "download", "extract", "ocr",
                   "pages"}
STAGE_KEYS = {"stage", "state", "failure", "attempts", "first_failed", "next_attempt", "at", "reason"}
CAMPAIGN_KEYS = {"id", "size", "submissions", "members", "first_seen", "last_seen", "representative", "opening"}


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    with built_store(tmp_path_factory.mktemp("show"), pg_server) as built:
        yield built


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def with_attachment(store) -> str:
    return next(c.id for c in store.manifest.comments if c.attachments)


def a_campaign(store):
    found = [c for d in store.dockets for c in campaign_rows.campaigns_of(d)]
    assert found, "the corpus's form letter (a repeated PDF) makes a campaign once IndexAll groups"
    return found[0]


# --- show ----------------------------------------------------------------------------------------


def test_show_prints_the_comment_pages_facts_body_text_by_page_and_explains_stages(store, capsys):
    key = with_attachment(store)
    item = Item.get_by_id(key)
    page = pages.comment_page(store.runtime, key)
    code, out, err = run(capsys, "show", key)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"comment {key}  docket {item.docket}"
    assert f"posted: {eastern_instant(item.posted_date)}" in lines
    if item.comment_on_document_id:
        assert any(line.startswith(f"answers: {item.comment_on_document_id}") for line in lines)
    assert f"link: {page.url}" in lines
    comment_at = lines.index("== comment")
    assert lines[comment_at + 1] == (item.body or "(no inline text)")
    attachments_at = lines.index("== attachments")
    assert lines[attachments_at + 1] == page.attachments_summary  # the comment page's own line
    for attachment in page.attachments:
        assert any(line.startswith(f"-- {attachment.filename}") for line in lines)
        section = page.section_of(attachment.filename)
        for number, text in section.pages if section else []:
            assert (f"[page {number}]\n{text}" if number is not None else text) in out
    # the stage table is explain's, line for line
    stages = out.split("== stages\n", 1)[1].rstrip("\n")
    assert stages.splitlines()[0].split()[:4] == ["stage", "state", "failure", "attempts"]
    _, explained, _ = run(capsys, "explain", key)
    assert stages in explained


def test_show_json_is_one_document_with_utc_instants_pages_and_stages(store, capsys):
    key = with_attachment(store)
    item = Item.get_by_id(key)
    page = pages.comment_page(store.runtime, key)
    code, out, err = run(capsys, "show", key, "--json")
    assert code == 0, err
    assert code == 0
    document = json.loads(out)
    assert set(document) == SHOW_KEYS
    assert (document["id"], document["docket"], document["kind"]) == (key, item.docket, "comment")
    assert document["posted_date"] == item.posted_date and document["posted_date"].endswith("Z")
    assert document["body"] == item.body and document["attachments_summary"] == page.attachments_summary
    assert document["extracted"] is page.extracted is True
    assert [a["file"] for a in document["attachments"]] == [a.filename for a in page.attachments]
    for shown in document["attachments"]:
        assert set(shown) == ATTACHMENT_KEYS
        section = page.section_of(shown["file"])
        assert shown["pages"] == ([{"page": n, "text": t} for n, t in section.pages] if section else None)
    assert document["stages"] and all(set(s) == STAGE_KEYS for s in document["stages"])
    assert [s["stage"] for s in document["stages"]][:3] == ["fetch", "backfill", "extract"]
    fetched = next(s for s in document["stages"] if s["stage"] == "fetch")
    assert fetched["state"] == "ok" and fetched["at"].endswith("Z") and fetched["failure"] is None


def test_show_names_the_campaign_a_member_is_one_of(store, capsys):
    campaign = a_campaign(store)
    member = campaign_rows.members_of(campaign.id)[-1].item
    _, out, _ = run(capsys, "show", member)
    assert f"campaign: one of {campaign.size} (campaign {campaign.id})" in out.splitlines()
    _, out, _ = run(capsys, "show", member, "--json")
    assert json.loads(out)["campaign"]["id"] == campaign.id


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_show_of_an_unknown_comment_is_one_line_exit_2(store, capsys, json_flag):
    code, out, err = run(capsys, "show", "CMS-2026-0001-9876", *json_flag)
    assert (code, out) == (2, "")
    assert err.splitlines() == ["docketeer: unknown comment 'CMS-2026-0001-9876'"]


# --- campaigns -----------------------------------------------------------------------------------


def test_campaigns_lists_them_as_the_docket_page_does(store, capsys):
    campaign = a_campaign(store)
    code, out, err = run(capsys, "campaigns", campaign.docket)
    assert (code, err) == (0, "")
    header, *rows = out.splitlines()
    assert header.split() == ["campaign", "comments", "submissions", "members", "first", "last", "opening"]
    listed = web_campaigns.largest_campaigns(campaign.docket, 10)
    assert [row.split()[0] for row in rows] == [c["id"] for c in listed]
    first = rows[0].split()
    assert first[1:4] == [str(listed[0]["size"]), str(listed[0]["submissions"]), str(listed[0]["size"])]


def test_campaigns_json_has_each_campaigns_size_submissions_members_and_opening(store, capsys):
    campaign = a_campaign(store)
    code, out, _ = run(capsys, "campaigns", campaign.docket, "--json")
    assert code == 0
    document = json.loads(out)
    assert set(document) == {"docket", "campaigns"} and document["docket"] == campaign.docket
    listed = {c["id"]: c for c in web_campaigns.largest_campaigns(campaign.docket, 10)}
    assert [c["id"] for c in document["campaigns"]] == list(listed)
    for shown in document["campaigns"]:
        assert set(shown) == CAMPAIGN_KEYS
        on_page = listed[shown["id"]]
        assert (shown["size"], shown["submissions"], shown["opening"]) == (
            on_page["size"], on_page["submissions"], on_page["opening"])
        assert shown["members"] == len(campaign_rows.members_of(shown["id"]))
        assert shown["first_seen"] == on_page["first_seen"]  # UTC, as stored


def test_campaigns_of_a_docket_without_any_says_so(store, capsys):
    Docket.create(id="CMS-2099-0001", agency="CMS")
    try:
        assert run(capsys, "campaigns", "CMS-2099-0001") == (0, "no campaigns\n", "")
        code, out, _ = run(capsys, "campaigns", "CMS-2099-0001", "--json")
        assert (code, json.loads(out)) == (0, {"docket": "CMS-2099-0001", "campaigns": []})
    finally:
        Docket.delete_by_id("CMS-2099-0001")


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_campaigns_of_an_unknown_docket_is_one_line_exit_2(store, capsys, json_flag):
    code, out, err = run(capsys, "campaigns", "NOPE-2026-0001", *json_flag)
    assert (code, out) == (2, "")
    assert err.splitlines() == ["docketeer campaigns: unknown docket: NOPE-2026-0001"]
