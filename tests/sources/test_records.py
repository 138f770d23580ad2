"""The record normaliser on real records and on the older shapes generated from them."""

from __future__ import annotations

import copy
import json

import pytest

from pipeline.errors import BadRecord
from pipeline.sources import records
from tests.fixtures.paths import REALDATA as CONFTEST_REALDATA

USTR = "mirror/raw-data/USTR/USTR-2015-0010/text-USTR-2015-0010"
ACF = "mirror/raw-data/ACF/ACF-2025-0038/text-ACF-2025-0038"


def load(realdata, relative: str) -> dict:
    return json.loads((realdata / relative).read_text())


def test_a_real_html_body_becomes_text_and_the_original_is_kept(realdata):
    fields = records.detail_fields(load(realdata, f"{USTR}/comments/USTR-2015-0010-0004.json"))
    assert fields["body"].startswith("See attached file(s)\n\nNotice of intent to testify:\n\nCraig Thorn\n")
    assert "<br" not in fields["body"] and fields["body_html"].startswith("See attached file(s)<br/>")
    assert fields["submitter"] == "Robert Cummings" and fields["withdrawn"] is False


def test_a_real_documents_docAbstract_is_what_it_says_itself(realdata):
    fields = records.detail_fields(load(realdata, f"{ACF}/documents/ACF-2025-0038-0001.json"))
    assert fields["body"].startswith(" The Administration for Children and Families (ACF), Children’s Bureau")
    assert fields["body_html"] is None  # plain text: nothing else to keep
    dos = load(realdata, "mirror/raw-data/DOS/DOS-2022-0004/text-DOS-2022-0004/documents/DOS-2022-0004-0001.json")
    assert records.detail_fields(dos)["body"] is None  # no abstract in the record: absent


def test_entities_and_paragraphs_are_decoded():
    body = {"data": {"attributes": {"comment": "<p>We&rsquo;re A&amp;B.</p><p>Second&nbsp;one<br/>line</p>"}}}
    assert records.detail_fields(body)["body"] == "We’re A&B.\n\nSecond one\nline"


@pytest.mark.parametrize("removed", ["firstName", "lastName", "organization", "receiveDate", "comment",
                                     "commentOnDocumentId", "withdrawn"])
def test_an_optional_field_removed_is_absent_and_the_rest_is_the_same(realdata, removed):
    body = load(realdata, f"{USTR}/comments/USTR-2015-0010-0003.json")
    full = records.detail_fields(body)
    older = copy.deepcopy(body)
    del older["data"]["attributes"][removed]
    fields = records.detail_fields(older)
    changed = {k for k in full if full[k] != fields[k]}
    assert changed <= {"submitter", "organization", "received_date", "body", "body_html",
                       "comment_on_document_id"}
    assert all(fields[k] in (None, False) or k == "submitter" for k in changed)


@pytest.mark.parametrize(("name", "value"), [("receiveDate", "12345"), ("receiveDate", 12345),
                                             ("comment", ["x"]), ("withdrawn", "maybe"),
                                             ("organization", {"a": 1})])
def test_a_mistyped_field_is_the_items_bad_record(realdata, name, value):
    body = load(realdata, f"{USTR}/comments/USTR-2015-0010-0003.json")
    body["data"]["attributes"][name] = value
    with pytest.raises(BadRecord, match=name):
        records.detail_fields(body)


def test_comment_json_with_only_attachment_links_has_no_included_attachments(realdata):
    body = load(realdata, f"{USTR}/comments/USTR-2015-0010-0004.json")
    assert "included" not in body and "links" in body["data"]["relationships"]["attachments"]
    assert records.included_attachments(body) == []
    acf = load(realdata, f"{ACF}/comments/ACF-2025-0038-0004.json")
    [attachment] = records.included_attachments(acf)
    assert attachment["attributes"]["title"] == "2025-13790 WI Department of Children  Families Comment"


def test_a_list_item_without_lastModifiedDate_or_objectId_is_still_a_record():
    fields = records.comment_summary({"title": "t", "postedDate": "2015-09-30T04:00:00Z"}, "D-1")
    assert fields == {"title": "t", "object_id": None, "posted_date": "2015-09-30T04:00:00Z",
                      "last_modified": None, "withdrawn": False, "comment_on_document_id": "D-1"}
    with pytest.raises(BadRecord, match="postedDate"):
        records.summary_fields({"postedDate": "12345"})


def test_a_document_without_objectId_is_a_window_nothing_is_listed_by(realdata):
    doc = load(realdata, f"{USTR}/documents/USTR-2015-0010-0001.json")["data"]
    window = records.comment_window(doc)
    assert window == {"id": "USTR-2015-0010-0001", "object_id": "0900006481bce624",
                      "start": "2015-08-10", "end": "2015-09-23",  # the Eastern deadline day
                      "opens_at": "2015-08-10T04:00:00Z", "closes_at": "2015-09-24T03:59:59Z"}
    del doc["attributes"]["objectId"]
    assert records.comment_window(doc)["object_id"] is None


@pytest.mark.parametrize(("instant", "day"), [("2025-09-23T03:59:59Z", "2025-09-22"),
                                              ("2025-09-23T04:00:00Z", "2025-09-23"),
                                              ("2025-01-15T04:59:59Z", "2025-01-14"),  # EST: UTC-5
                                              ("2025-01-15T05:00:00Z", "2025-01-15")])
def test_deadlines_are_eastern_calendar_dates(instant, day):
    assert records.eastern_date({"commentEndDate": instant}, "commentEndDate") == day


def test_flags_as_the_mirror_writes_them():
    assert records.flag({"withdrawn": "True"}, "withdrawn") is True
    assert records.flag({"withdrawn": "False"}, "withdrawn") is False
    assert records.flag({}, "withdrawn") is False


def test_orders_sizes_and_urls_are_checked_before_the_database():
    assert records.bounded_int({"docOrder": 3}, "docOrder", records.MAX_ORDINAL) == 3
    assert records.bounded_int({"docOrder": "3"}, "docOrder", records.MAX_ORDINAL) is None  # not a number
    with pytest.raises(BadRecord, match="out of range"):
        records.bounded_int({"size": 2**70}, "size", records.MAX_SIZE)
    assert records.file_url({"fileUrl": "https://downloads.regulations.gov/X-1/attachment_1.pdf"})
    with pytest.raises(BadRecord, match="http"):
        records.file_url({"fileUrl": "file:///etc/passwd"})


# Which stored fields each attribute of a real record feeds (any other attribute feeds none).
FEEDS = {
    "firstName": {"submitter"}, "lastName": {"submitter"}, "organization": {"organization"},
    "receiveDate": {"received_date"}, "comment": {"body", "body_html"}, "docAbstract": {"body", "body_html"},
    "commentOnDocumentId": {"comment_on_document_id"}, "withdrawn": {"withdrawn"}, "title": {"title"},
    "objectId": {"object_id"}, "postedDate": {"posted_date"}, "modifyDate": {"last_modified"},
    "commentStartDate": {"start", "opens_at"}, "commentEndDate": {"end", "closes_at"},
    "duplicateComments": {"duplicate_comments"}, "subtype": {"subtype"}, "category": {"category"},
    "stateProvinceRegion": {"state_province_region"}, "country": {"country"}, "govAgency": {"gov_agency"},
    "govAgencyType": {"gov_agency_type"}, "trackingNbr": {"tracking_nbr"}, "city": {"city"},
    "submitterRep": {"submitter_rep"}, "reasonWithdrawn": {"reason_withdrawn"},
    "restrictReason": {"restrict_reason"}, "restrictReasonType": {"restrict_reason_type"},
    "pageCount": {"page_count"},
}
REAL_RECORDS = sorted(f"{p.parent.parent.parent.name}/{p.parent.name}/{p.name}" for p in
                      (CONFTEST_REALDATA / "mirror/raw-data").glob("*/*/text-*/*/*.json")
                      if p.parent.name in ("comments", "documents")) if CONFTEST_REALDATA.is_dir() else []


def stored_fields(body: dict) -> dict:
    """Everything the normaliser makes of a detail record: its detail fields, its fields as a
    list would show them, and (a document) its comment window."""
    data = body["data"]
    fields = {**records.detail_fields(body), **records.summary_fields(records.listed_attributes(data, "data"))}
    if data["type"] == "documents":
        fields.update({k: v for k, v in records.comment_window(data).items() if k != "id"})
    return fields


@pytest.mark.parametrize("record", REAL_RECORDS)
def test_every_attribute_of_every_real_record_may_be_absent(realdata, record):
    """Older shapes generated from each real record: any one attribute removed gives the same
    stored fields but those it feeds, which become absent — never an error."""
    docket, kind, name = record.split("/")
    path = next((realdata / "mirror/raw-data").glob(f"*/{docket}/text-{docket}/{kind}/{name}"))
    body = json.loads(path.read_text())
    full = stored_fields(body)
    for attribute in list(body["data"]["attributes"]):
        older = copy.deepcopy(body)
        del older["data"]["attributes"][attribute]
        fields = stored_fields(older)
        changed = {k for k in full if full[k] != fields[k]}
        assert changed <= FEEDS.get(attribute, set()), (attribute, changed)
        absent = {k: fields[k] for k in changed if k not in ("submitter", "last_modified")}
        assert all(v in (None, False) for v in absent.values()), (attribute, absent)
        if attribute == "modifyDate":  # a detail without it is listed as of its posting
            assert fields["last_modified"] == full["posted_date"]
    without_included = {k: v for k, v in body.items() if k != "included"}
    assert stored_fields(without_included) == full and records.included_attachments(without_included) == []


def test_counts_are_whole_numbers_and_a_record_says_whether_it_lists_its_attachments():
    assert records.count({"duplicateComments": 15851}, "duplicateComments", records.MAX_DUPLICATES) == 15851
    assert records.count({"duplicateComments": "42"}, "duplicateComments", records.MAX_DUPLICATES) == 42
    assert records.count({"duplicateComments": None}, "duplicateComments", records.MAX_DUPLICATES) is None
    assert records.count({}, "duplicateComments", records.MAX_DUPLICATES) is None
    for bad in (1.5, "many", True, -1, 10**12, [3]):
        with pytest.raises(BadRecord, match="duplicateComments"):
            records.count({"duplicateComments": bad}, "duplicateComments", records.MAX_DUPLICATES)
    fields = records.detail_fields({"data": {"attributes": {"duplicateComments": 15851, "subtype": "Mass Mail Campaign",
                                                            "trackingNbr": "l2z-02tq-bsbu"}}})
    assert (fields["duplicate_comments"], fields["subtype"], fields["tracking_nbr"]) == (
        15851, "Mass Mail Campaign", "l2z-02tq-bsbu")
    with pytest.raises(BadRecord, match="country"):
        records.detail_fields({"data": {"attributes": {"country": 1}}})
    links = {"links": {"self": "https://api.regulations.gov/v4/comments/X-1/relationships/attachments"}}
    assert records.lists_attachments({"data": {"relationships": {"attachments": {**links, "data": []}}}})
    assert records.lists_attachments({"data": {"relationships": {"attachments": links}}, "included": []})
    assert not records.lists_attachments({"data": {"relationships": {"attachments": links}}})  # older mirror JSON
    assert not records.lists_attachments({"data": {"attributes": {}}})
