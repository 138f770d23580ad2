"""Fidelity on the recorded real API exchanges (``../shared/realdata/api-recordings``): the
recorded docket, document list and comment list bodies, served verbatim by the stand-in and
fetched by the real client and walk, are stored as they say; variants made from them by
removing or retyping fields give the same rows, or that item's failure — never the docket's.

The expected values below are written by hand from the recorded bodies.
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from devtools.standin_server import Reply
from pipeline.ops import cli
from pipeline.sources import records
from pipeline.store import dockets
from pipeline.store.models import Docket, Item, ItemState
from tests.fixtures.api_recordings import API, FAA_DOCUMENT, FAA_OBJECT, KEYED, STAGING
from tests.fixtures.fetch_scripted import CLOSED_LONG_AGO, ScriptedServer, client, fetch

EPA = "EPA-HQ-OAR-2003-0129"
FAA = "FAA-2018-1084"

EPA_DOCKET = ("EPA", "Registration of Fuels and Fuels Additives (Application for Registration of "
                     "Manufacturers) (ICR # 0309.10, OMB Control # 2060-0150)")
# key: kind, title, posted, last modified, withdrawn
EPA_DOCUMENTS = {
    "EPA-HQ-OAR-2003-0129-0001": ("document", "Supporting Statement for ICR# 0309.10", "2003-04-24T04:00:00Z",
                                  None, False),
    "EPA-HQ-OAR-2003-0129-0002": ("document", "Form 83-I for ICR # 0309.10", "2003-04-24T04:00:00Z", None, False),
}
FEB19 = "2019-02-19T05:00:00Z"
FAA_COMMENTS = {  # all posted on document 0001 of the docket (the recorded list's commentOnId)
    "FAA-2018-1084-0418": ("Comment from Jeramie Scott", "2019-03-18T04:00:00Z"),
    "FAA-2018-1084-0208": ("Comment from Michael Giovagnoni", FEB19),
    "FAA-2018-1084-0189": ("Comment from Jack Ferland", FEB19),
    "FAA-2018-1084-0186": ("Comment from James Butler", FEB19),
    "FAA-2018-1084-0130": ("Comment from Hiram Roldan", FEB19),
    "FAA-2018-1084-0139": ("Comment from Randy Warkentin", FEB19),
    "FAA-2018-1084-0227": ("Comment from Michael Giovagnoni", FEB19),
    "FAA-2018-1084-0111": ("Comment from Paul Braun", FEB19),
    "FAA-2018-1084-0212": ("Comment from Ronald Gaspard", FEB19),
    "FAA-2018-1084-0281": ("Comment from Al Turner", FEB19),
    "FAA-2018-1084-0315": ("Comment from Gordon Mano", FEB19),
    "FAA-2018-1084-0310": ("Comment from Benjamin Love", FEB19),
    "FAA-2018-1084-0119": ("Comment from Nhan Phu Pham", FEB19),
    "FAA-2018-1084-0299": ("Comment from Drew Kedzie", FEB19),
    "FAA-2018-1084-0295": ("Comment from Matt Lee", FEB19),
    "FAA-2018-1084-0206": ("Comment from Harry Anonymous", FEB19),
    "FAA-2018-1084-0280": ("Comment from Shaun Hautly", FEB19),
    "FAA-2018-1084-0271": ("Comment from Emilio Youmans", FEB19),
    "FAA-2018-1084-0243": ("Comment from Joseph Orsolini", FEB19),
    "FAA-2018-1084-0156": ("Comment from Christopher Henning", FEB19),
    "FAA-2018-1084-0137": ("Comment from jun pena", FEB19),
    "FAA-2018-1084-0234": ("Comment from William Hoenstine", FEB19),
    "FAA-2018-1084-0211": ("Comment from David Hartwig", FEB19),
    "FAA-2018-1084-0217": ("Comment from Lauren Robison", FEB19),
    "FAA-2018-1084-0209": ("Comment from Ernest Vaupel", FEB19),
}
LAST_PAGE = Reply(200, json.dumps({"data": [], "meta": {"hasNextPage": False}}).encode(),
                  "application/vnd.api+json")


def recorded(realdata, name: str, uri_part: str) -> dict:
    """The parsed body of the first recorded 200 exchange whose URI contains ``uri_part``."""
    exchanges = yaml.safe_load((realdata / "api-recordings" / name).read_text(encoding="utf-8"))
    for exchange in exchanges["http_interactions"]:
        if uri_part in exchange["request"]["uri"] and exchange["response"]["status"]["code"] == 200:
            return json.loads(exchange["response"]["body"]["string"])
    raise LookupError(uri_part)


def reply(body: dict) -> Reply:
    return Reply(200, json.dumps(body).encode(), "application/vnd.api+json")


@pytest.fixture
def server(tmp_path):
    (tmp_path / "mirror").mkdir()
    with ScriptedServer(tmp_path / "mirror") as scripted:
        yield scripted


def stored(kind: str) -> dict:
    return {i.key: (i.kind, i.title, i.posted_date, i.last_modified, i.withdrawn)
            for i in Item.select().where(Item.kind == kind)}


def test_the_recorded_docket_and_documents_are_stored_as_they_say(state, server, realdata):
    dockets.ensure_dockets([EPA], "list")
    server.raw_next = [reply(recorded(realdata, "v4_docket_and_documents.yml", "/v4/dockets/")),
                       reply(recorded(realdata, "v4_docket_and_documents.yml", "/v4/documents?"))]
    result = fetch(state, EPA, client(server), clock=CLOSED_LONG_AGO)
    assert result.clean, result.message
    docket = Docket.get_by_id(EPA)
    assert (docket.agency, docket.title) == EPA_DOCKET
    # Neither document has a comment period or is a rule: no window, nothing to list.
    assert (docket.comment_start_date, docket.comment_end_date, json.loads(docket.documents)) == (None, None, [])
    assert stored("document") == EPA_DOCUMENTS


def resolved_faa() -> None:
    dockets.ensure_dockets([FAA], "list")
    window = {"id": FAA_DOCUMENT, "object_id": FAA_OBJECT, "start": None, "end": None,
              "opens_at": None, "closes_at": None}
    dockets.record_resolve(FAA, documents=json.dumps([window]), resolved_at="2026-01-01T00:00:00Z")


def expected_comments(leave_out: tuple[str, ...] = ()) -> dict:
    return {key: ("comment", title, posted, None, False) for key, (title, posted) in FAA_COMMENTS.items()
            if key not in leave_out}


def test_the_recorded_comment_list_is_stored_as_it_says(state, server, realdata):
    resolved_faa()
    server.raw_next = [reply(recorded(realdata, "v4_comments_list.yml", "filter%5BcommentOnId%5D")), LAST_PAGE]
    result = fetch(state, FAA, client(server), clock=CLOSED_LONG_AGO)
    assert result.clean and result.counts["created"] == 25, result.message
    assert stored("comment") == expected_comments()
    assert {i.comment_on_document_id for i in Item.select()} == {FAA_DOCUMENT}
    # The recorded items are older shapes (no lastModifiedDate): stored, the watermark unmoved.
    assert Docket.get_by_id(FAA).pull_watermark is None


FINCEN = "FINCEN-2020-0020"
FINCEN_COMMENT = ("comment", "Comment on FR Doc # 2020-28437", "2021-01-07T05:00:00Z", None, False)


def test_the_older_and_the_newer_recorded_shape_of_one_comment_are_one_record(state, server, realdata):
    """The production recording of FINCEN-2020-0020-5871 lacks `lastModifiedDate` (older),
    the staging one has it: walked by the real fetch, the older gives the stored row, the
    newer the same fields plus the instant."""
    dockets.ensure_dockets([FINCEN], "list")
    window = {"id": f"{FINCEN}-0001", "object_id": "09000064849e0000", "start": None, "end": None,
              "opens_at": None, "closes_at": None}
    dockets.record_resolve(FINCEN, documents=json.dumps([window]), resolved_at="2026-01-01T00:00:00Z")
    older = recorded(realdata, "v4_comments_list.yml", f"{API}/comments{KEYED}filter%5BsearchTerm%5D")
    server.raw_next = [reply(older), LAST_PAGE]
    result = fetch(state, FINCEN, client(server), clock=CLOSED_LONG_AGO)
    assert result.clean and result.counts["created"] == 1, result.message
    assert stored("comment") == {f"{FINCEN}-5871": FINCEN_COMMENT}
    [item] = recorded(realdata, "v4_comments_list.yml", f"{STAGING}/comments")["data"]
    newer = records.comment_summary(item["attributes"], f"{FINCEN}-0001")
    assert newer == {"title": FINCEN_COMMENT[1], "object_id": "09000064849e17d5", "posted_date": FINCEN_COMMENT[2],
                     "last_modified": "2021-01-07T19:57:55Z", "withdrawn": False,
                     "comment_on_document_id": f"{FINCEN}-0001"}
    assert Item.get_by_id(f"{FINCEN}-5871").object_id == newer["object_id"]


def variant(body: dict) -> tuple[dict, dict[str, str]]:
    """The recorded page with items spoilt as broken or older responses have them: what each
    spoilt item's row must say (keyed ones) or its label (ones without a safe id)."""
    page = copy.deepcopy(body)
    data = page["data"]
    data[0]["id"] = "../" + data[0]["id"]  # traversal
    data[1]["id"] = data[1]["id"] + "\x00"  # NUL
    data[2]["id"] = 20181084  # a number where the id's string is due
    del data[3]["id"]  # no id at all
    data[4]["attributes"]["title"] = 5  # mistyped
    data[5]["attributes"]["postedDate"] = "19 Feb 2019"  # unreadable
    data[6]["attributes"]["withdrawn"] = "perhaps"
    data[7]["attributes"] = None  # no attributes object
    del data[8]["attributes"]["title"]  # optional fields removed: the same record without them
    del data[9]["attributes"]["withdrawn"]
    keyed = {data[4]["id"]: "`title` is a whole number", data[5]["id"]: "`postedDate` is not a date",
             data[6]["id"]: "`withdrawn` is not a boolean", data[7]["id"]: "no attributes object"}
    return page, keyed


def test_spoilt_variants_of_the_recorded_list_are_each_items_own_failure(state, server, realdata, capsys):
    resolved_faa()
    body = recorded(realdata, "v4_comments_list.yml", "filter%5BcommentOnId%5D")
    page, keyed = variant(body)
    unkeyed = [item["id"] for item in body["data"][:4]]
    server.raw_next = [reply(page), LAST_PAGE]
    result = fetch(state, FAA, client(server), clock=CLOSED_LONG_AGO)
    # The docket goes on: clean, every other item stored exactly as the recording says.
    assert result.clean and result.counts["malformed"] == 4 and result.counts["failed"] == 4, result.counts
    expected = expected_comments(leave_out=(*unkeyed, *keyed))
    title_removed = body["data"][8]["id"]
    expected[title_removed] = ("comment", None, *expected[title_removed][2:])
    assert stored("comment") == expected
    failed = {s.item: s.reason for s in ItemState.select().where(ItemState.stage == "fetch")
              if s.state == "failed"}
    assert set(failed) == set(keyed) and all(keyed[k] in failed[k] for k in keyed)
    labels = {s.reason.split("(", 1)[1].split(")", 1)[0]
              for s in ItemState.select().where(ItemState.stage == "fetch.unkeyed", ItemState.docket == FAA)}
    assert labels == {f"id '../{unkeyed[0]}'", f"id '{unkeyed[1]}\\x00'", "id 20181084", "no id"}
    assert "bad list items (the docket goes on)" in result.message and "\x00" not in result.message
    assert_stats_and_explain_name_them(capsys, keyed)


def assert_stats_and_explain_name_them(capsys, keyed: dict[str, str]) -> None:
    capsys.readouterr()
    assert cli.main(["stats", "--docket", FAA]) == 0
    rows = {tuple(line.split()[1:4]) for line in capsys.readouterr().out.splitlines()}
    assert ("fetch", "failed", "4") in rows and ("fetch.unkeyed", "failed", "4") in rows
    unkeyed = ItemState.select().where(ItemState.stage == "fetch.unkeyed", ItemState.docket == FAA).first()
    assert cli.main(["explain", unkeyed.item]) == 0
    assert "without a safe id" in capsys.readouterr().out
    key = sorted(keyed)[0]
    assert cli.main(["explain", key]) == 0
    assert keyed[key] in capsys.readouterr().out
