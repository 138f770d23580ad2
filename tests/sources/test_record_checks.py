"""The shapes and ranges a record may hold, checked once in the normaliser: an impossible
date or a value of the wrong JSON type is that item's BadRecord with a reason."""

from __future__ import annotations

import copy
import json

import pytest

from pipeline.errors import BadRecord
from pipeline.sources import records

ACF_COMMENT = "mirror/raw-data/ACF/ACF-2025-0038/text-ACF-2025-0038/comments/ACF-2025-0038-0004.json"


@pytest.fixture
def detail(realdata) -> dict:
    """A real comment detail with its included attachments."""
    return json.loads((realdata / ACF_COMMENT).read_text())


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00Z", "0002-01-01T00:00:00Z", "1899-12-31T23:59:59Z",
                                   "2200-01-01T00:00:00Z", "9999-12-31T23:59:59Z"])
@pytest.mark.parametrize("name", ["postedDate", "lastModifiedDate"])
def test_an_impossible_date_in_a_list_item_is_its_bad_record(name, value):
    with pytest.raises(BadRecord, match=rf"`{name}` '{value}' is not a possible date \(1900..2199\)"):
        records.summary_fields({"title": "t", name: value})


def test_an_impossible_date_in_a_detail_or_a_comment_period_is_its_bad_record(detail):
    spoilt = copy.deepcopy(detail)
    spoilt["data"]["attributes"]["receiveDate"] = "0001-01-01T00:00:00Z"
    with pytest.raises(BadRecord, match="`data.attributes.receiveDate` '0001-01-01T00:00:00Z' is not a possible date"):
        records.detail_fields(spoilt)
    with pytest.raises(BadRecord, match="commentEndDate"):
        records.comment_window({"id": "ACF-2025-0038-0001", "attributes": {
            "objectId": "0900006400000001", "commentEndDate": "0001-01-01T05:00:00Z"}})


def test_dates_at_the_edges_of_the_range_and_real_records_are_taken(detail):
    assert records.summary_fields({"postedDate": "1900-01-01T00:00:00Z"})["posted_date"] == "1900-01-01T00:00:00Z"
    assert records.summary_fields({"postedDate": "2199-12-31T23:59:59Z"})["posted_date"]
    assert records.detail_fields(detail)["received_date"] == detail["data"]["attributes"]["receiveDate"]
    assert len(records.included_attachments(detail)) == 1


@pytest.mark.parametrize(("where", "value", "reason"), [
    (("included",), {"id": "x", "type": "attachments"}, "`included` is an object, not a list"),
    (("included",), "attachment_1.pdf", "`included` is a string, not a list"),
    (("included", 0), ["attachments"], "`included[0]` is a list, not an object"),
    (("included", 0, "attributes"), [], "`included[0].attributes` is a list, not an object"),
    (("included", 0, "attributes", "fileFormats"), {"fileUrl": "https://x/y.pdf"},
     "`included[0].attributes.fileFormats` is an object, not a list"),
    (("included", 0, "attributes", "fileFormats", 0), "https://x/y.pdf",
     "`included[0].attributes.fileFormats[0]` is a string, not an object"),
    (("included", 0, "attributes", "fileFormats", 0, "fileUrl"), ["https://x/y.pdf"],
     "fileFormats[0].fileUrl` is a list, not a string"),
    (("included", 0, "attributes", "fileFormats", 0, "size"), -1, "size` -1 is out of range"),
    (("data",), [], "`data` is a list, not an object"),
    (("data", "attributes", "duplicateComments"), 1e308, "duplicateComments` is a fraction, not a whole number"),
    (("data", "attributes", "duplicateComments"), -5, "duplicateComments` -5 is out of range"),
    (("data", "attributes", "withdrawn"), {"no": 1}, "withdrawn` is an object, not a boolean"),
    (("data", "attributes", "comment"), {"text": "x"}, "comment` is an object, not a string"),
])
def test_a_wrong_json_type_anywhere_in_a_detail_is_its_bad_record(detail, where, value, reason):
    spoilt = copy.deepcopy(detail)
    holder = spoilt
    for step in where[:-1]:
        holder = holder[step]
    holder[where[-1]] = value
    with pytest.raises(BadRecord) as raised:
        records.detail_fields(spoilt)  # what backfill reads first
    assert reason in str(raised.value)
    if where[0] == "included":  # and the file list, read by itself, says the same
        with pytest.raises(BadRecord, match="included"):
            records.included_attachments(spoilt)


def test_fields_docketeer_does_not_read_are_left_alone(detail):
    spoilt = copy.deepcopy(detail)
    spoilt["data"]["attributes"].update(field1={"any": "thing"}, legacyId=["3"], zip=12345)
    assert records.detail_fields(spoilt) == records.detail_fields(detail)
