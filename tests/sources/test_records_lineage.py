"""The record normaliser's reading of a rule's facts: a docket's RIN and a document's type,
Federal Register number, posted date and comment window, in every shape records give them."""

from __future__ import annotations

import pytest

from pipeline.errors import BadRecord
from pipeline.sources import records


@pytest.mark.parametrize("given, expected", [
    ("1400-AE27", "1400-AE27"), (" 0938-at12 ", "0938-AT12"), (None, None), ("", None),
    ("Not Assigned", None), ("N/A", None)])
def test_a_dockets_rin_as_the_record_writes_it(given, expected):
    assert records.docket_fields({"attributes": {"rin": given}})["rin"] == expected
    assert records.rin({}) is None


def test_a_documents_lineage_fields_and_their_eastern_window():
    doc = {"id": "DOS-2022-0004-0001", "attributes": {
        "documentType": "Rule", "frDocNum": "2022-05629", "postedDate": "2022-03-23T04:00:00Z",
        "commentStartDate": "2022-03-23T04:00:00Z", "commentEndDate": "2022-05-10T03:59:59Z"}}
    assert records.document_lineage(doc) == {
        "document_type": "Rule", "fr_doc_num": "2022-05629", "posted_at": "2022-03-23T04:00:00Z",
        "opens_at": "2022-03-23T04:00:00Z", "closes_at": "2022-05-10T03:59:59Z",
        "start": "2022-03-23", "end": "2022-05-09"}
    older = records.document_lineage({"id": "X-1", "attributes": {"documentType": "Supporting & Related Material"}})
    assert older["fr_doc_num"] is None and older["end"] is None
    with pytest.raises(BadRecord):
        records.document_lineage({"id": "X-1", "attributes": {"frDocNum": 2022}})
