"""The fetch stage against the stand-in regulations.gov over loopback HTTP (issue 3, "Must show").

Every test asserts the work done (requests in the stand-in's log, rows, table dumps, the
run row's counters), never wall time. The 12,000-comment docket is built once per module.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from devtools import corpus_changes, mirror_layout
from devtools.corpus_changes import api_time
from devtools.standin_server import Reply, StandinServer
from pipeline import tasks as task_module
from pipeline.clock import iso
from pipeline.runtime import set_runtime
from pipeline.sources.api_time import to_eastern_filter
from pipeline.store import dockets
from pipeline.store.models import Attachment, Docket, Item, ItemState, Run
from tests.fixtures.fetch_scripted import (
    CLOSED_LONG_AGO,
    SMALL,
    FakeSleep,
    ScriptedServer,
    client,
    fetch,
    small_docket,
)
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import make_runtime
from tests.fixtures.state_fixtures import run_invocation as build

BIG = "CMS-2026-0100"
BIG_COUNT = 12_000
BIG_START = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
BIG_STEP = timedelta(seconds=37)  # one comment per second value: boundaries are exact
PAGE, PAGES = 250, 20
DATA_TABLES = (Item, Attachment, ItemState)


# --------------------------------------------------------------------------- helpers


def dump() -> list[list[tuple]]:
    """The data tables, ordered: equal dumps mean byte-identical tables."""
    out = []
    for model in DATA_TABLES:
        order = [f for f in model._meta.sorted_fields if f.name != "id"] or model._meta.sorted_fields
        out.append(list(model.select().order_by(*order).tuples()))
    return out


class DataTableWrites(logging.Handler):
    """Counts INSERT/UPDATE/DELETE statements on the data tables, from peewee's query log."""

    PATTERN = re.compile(r'^\s*(INSERT INTO|UPDATE|DELETE FROM)\s+"(item|attachment|item_state)"', re.I)

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.writes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        sql = record.msg[0] if isinstance(record.msg, tuple) else str(record.msg)
        if self.PATTERN.match(sql):
            self.writes.append(sql)

    def __enter__(self) -> DataTableWrites:
        logger = logging.getLogger("peewee")
        self._level = logger.level
        logger.setLevel(logging.DEBUG)
        logger.addHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        logger = logging.getLogger("peewee")
        logger.removeHandler(self)
        logger.setLevel(self._level)


def comment_ids(root: Path) -> set[str]:
    return set(mirror_layout.comment_files(root))


def stored_comments(docket_id: str) -> list[str]:
    query = Item.select(Item.key).where((Item.docket == docket_id) & (Item.kind == "comment"))
    return [row.key for row in query]


def fetch_states(docket_id: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in ItemState.select().where((ItemState.stage == "fetch") & (ItemState.docket == docket_id)):
        counts[row.state] = counts.get(row.state, 0) + 1
    return counts


def expected_list_calls(n: int) -> tuple[int, int]:
    """(list requests, boundary re-yields) for ``n`` comments in distinct seconds.

    A query serves at most 20 pages of 250. Past that the walk re-queries from the last
    record's second, so that record (index start + 4,999) comes back as the new query's first.
    """
    calls, requeries, start = 0, 0, 0
    while n - start > PAGE * PAGES:
        calls, requeries, start = calls + PAGES, requeries + 1, start + PAGE * PAGES - 1
    return calls + max(1, math.ceil((n - start) / PAGE)), requeries


def tree(path: Path, skip: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if skip not in (p, *p.parents)}


# --------------------------------------------------------------------------- the big docket


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """12,000 comments on one document, fetched once through FetchAll (Luigi, in process)."""
    base = tmp_path_factory.mktemp("big")
    times = [BIG_START + i * BIG_STEP for i in range(BIG_COUNT)]
    small_docket(base / "mirror", BIG, times)
    with ScriptedServer(base / "mirror") as server:
        rt = make_runtime(base, api_base=server.api_base, api_key="test-key",
                          discover="list", dockets=BIG)
        rt.state  # noqa: B018
        previous = set_runtime(rt)
        try:
            assert build(task_module.FetchAll())
            facts = {
                "log": list(server.request_log),
                "runs": list(Run.select().dicts()),
                "docket": Docket.get_by_id(BIG),
                "stored": stored_comments(BIG),
                "states": fetch_states(BIG),
                "times": times,
            }
        finally:
            set_runtime(previous)
            rt.close()
        server.reset_log()
        yield server, base / "data", facts


@pytest.fixture
def big_copy(big, tmp_path):
    """A runtime on a copy of the big docket's fetched state DB, for one test to change."""
    server, data, _ = big
    shutil.copytree(data, tmp_path / "data")
    rt = make_runtime(tmp_path, api_base=server.api_base, api_key="test-key",
                      discover="list", dockets=BIG)
    rt.state  # noqa: B018
    previous = set_runtime(rt)
    server.reset_log()
    yield server, rt
    set_runtime(previous)
    rt.close()


def test_cold_fetch_past_the_5000_cap_stores_every_comment_once_with_exact_calls(big):
    server, _, facts = big
    expected_lists, requeries = expected_list_calls(BIG_COUNT)
    assert (expected_lists, requeries) == (49, 2)  # 20 + 20 + 9 pages; two re-queries
    paths = [path for _, path, _ in facts["log"]]
    assert paths.count("/v4/dockets/" + BIG) == 1 and paths.count("/v4/documents") == 1
    assert paths.count("/v4/comments") == expected_lists
    assert len(paths) == expected_lists + 2  # nothing else: the resolve is two calls
    # Every comment exactly once (the primary key would refuse a second row; compare sets).
    assert len(facts["stored"]) == BIG_COUNT == len(set(facts["stored"]))
    assert facts["states"] == {"ok": BIG_COUNT}
    # The re-queries start at the boundary record's second, in US Eastern wall time.
    ges = [q["filter[lastModifiedDate][ge]"][0] for _, p, q in facts["log"]
           if p == "/v4/comments" and "filter[lastModifiedDate][ge]" in q]
    first, second = (to_eastern_filter(api_time(facts["times"][i])) for i in (4999, 9998))
    assert ges == [first] * PAGES + [second] * (expected_lists - 2 * PAGES)
    [run] = facts["runs"]
    counters = json.loads(run["counters"])
    assert counters["created"] == BIG_COUNT and counters["unchanged"] == requeries
    assert counters["api.comments.list"] == expected_lists  # API calls per endpoint in the run row
    assert counters["api.dockets.detail"] == counters["api.documents.list"] == 1
    assert run["clean"] and facts["docket"].pull_watermark == api_time(facts["times"][-1])


def test_second_run_inside_the_window_is_pruned_with_zero_calls(big_copy):
    server, _ = big_copy
    before, runs = dump(), Run.select().count()
    with DataTableWrites() as writes:
        assert build(task_module.FetchAll())
    assert server.request_log == []
    assert Run.select().count() == runs  # the task never ran: its target was complete
    assert writes.writes == [] and dump() == before


def test_second_run_in_a_new_window_makes_one_list_call_and_writes_nothing(big_copy):
    server, _ = big_copy
    Docket.update(last_pull_at="2000-01-01T00:00:00.000000Z").execute()  # an old window
    before, watermark = dump(), Docket.get_by_id(BIG).pull_watermark
    with DataTableWrites() as writes:
        assert build(task_module.FetchAll())
    assert [path for _, path, _ in server.request_log] == ["/v4/comments"]
    assert writes.writes == [] and dump() == before
    run = Run.select().order_by(Run.id.desc()).get()
    counters = json.loads(run.counters)
    assert counters["unchanged"] == 1 and "created" not in counters and "updated" not in counters
    assert counters["api.comments.list"] == 1
    assert Docket.get_by_id(BIG).pull_watermark == watermark


# --------------------------------------------------------------------------- small dockets


def test_changes_upstream_give_created_updated_and_absorbed_boundary(state, small):
    root, server, times = small
    dockets.ensure_dockets([SMALL], "list")
    assert fetch(state, SMALL, client(server)).counts["created"] == 700
    later = datetime(2025, 9, 1, tzinfo=UTC)
    added = corpus_changes.add_comments(root, SMALL, 40, later)
    changed = sorted(comment_ids(root) - set(added))[100:103]
    corpus_changes.modify_comments(root, changed, later + timedelta(hours=1))
    server.reload()
    server.reset_log()
    result = fetch(state, SMALL, client(server))
    assert result.clean
    # The last record of the previous walk comes back at the watermark: absorbed, not rewritten.
    assert {k: v for k, v in result.counts.items() if not k.startswith("api.")} == {
        "created": 40, "updated": 3, "unchanged": 1}
    assert [p for _, p, _ in server.request_log] == ["/v4/comments"]  # no resolve for a known docket
    assert Docket.get_by_id(SMALL).pull_watermark == api_time(later + timedelta(hours=1))
    assert sorted(stored_comments(SMALL)) == sorted(comment_ids(root))
    rows = {i.key: i for i in Item.select().where(Item.key.in_(changed))}
    assert {r.last_modified for r in rows.values()} == {api_time(later + timedelta(hours=1))}


def test_withdrawn_comments_are_recorded_withdrawn_not_deleted(state, small):
    root, server, _ = small
    dockets.ensure_dockets([SMALL], "list")
    fetch(state, SMALL, client(server))
    gone = sorted(comment_ids(root))[:2]
    corpus_changes.withdraw_comments(root, gone, datetime(2025, 9, 2, tzinfo=UTC))
    server.reload()
    result = fetch(state, SMALL, client(server))
    assert result.counts["updated"] == 2 and result.clean
    assert len(stored_comments(SMALL)) == 700
    assert all(Item.get_by_id(key).withdrawn for key in gone)
    assert fetch_states(SMALL) == {"ok": 698, "withdrawn": 2}


def test_5xx_storm_keeps_the_watermark_and_the_next_run_catches_up(state, small):
    root, server, times = small
    dockets.ensure_dockets([SMALL], "list")
    fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO)
    before = Docket.get_by_id(SMALL)
    added = []
    for hour in range(3):  # 600 new comments in three distinct seconds
        added += corpus_changes.add_comments(root, SMALL, 200, datetime(2025, 9, 5, hour, tzinfo=UTC))
    server.reload()
    # After the first list page every request fails: six attempts exhaust the retries.
    server.arm_storm(after_lists=1, size=6)
    sleep = FakeSleep()
    broken = fetch(state, SMALL, client(server, sleep), clock=CLOSED_LONG_AGO + timedelta(days=1))
    assert not broken.clean and "503" in broken.message and len(sleep.waits) == 5
    after = Docket.get_by_id(SMALL)
    assert (after.pull_watermark, after.last_pull_at, after.last_pull_new) == (
        before.pull_watermark, before.last_pull_at, before.last_pull_new)
    assert after.sealed_at is None
    kept = broken.counts["created"]
    assert kept == 249  # the first page: the boundary record plus 249 new ones
    resumed = fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO + timedelta(days=1))
    assert resumed.clean and resumed.counts["created"] == 600 - kept
    assert resumed.counts["unchanged"] == kept + 1  # what the broken walk kept, plus the boundary
    stored = stored_comments(SMALL)
    assert len(stored) == len(set(stored)) == 1300 and set(stored) == comment_ids(root)
    assert fetch_states(SMALL) == {"ok": 1300}
    assert Docket.get_by_id(SMALL).pull_watermark == api_time(datetime(2025, 9, 5, 2, tzinfo=UTC))
    assert Docket.get_by_id(SMALL).sealed_at is None  # it found new comments: not quiet


def test_auto_seal_after_close_and_quiet_days_with_a_clean_zero_new_pull(state, small):
    _, server, _ = small
    dockets.ensure_dockets([SMALL], "list")
    # Closes 2025-09-23T03:59:59Z: the September 22 deadline in Washington, + 30 quiet days,
    # which end at midnight in Washington (04:00 UTC, EDT): tests/fetch/test_eastern_seal.py.
    quiet_end = datetime(2025, 10, 22, 4, tzinfo=UTC)
    cold = fetch(state, SMALL, client(server), clock=quiet_end - timedelta(days=2))
    assert cold.counts["created"] == 700 and Docket.get_by_id(SMALL).sealed_at is None
    day_before = fetch(state, SMALL, client(server), clock=quiet_end - timedelta(seconds=1))
    assert day_before.clean and "sealed" not in day_before.counts
    assert Docket.get_by_id(SMALL).sealed_at is None  # zero new, but the quiet days are not over
    sealing = fetch(state, SMALL, client(server), clock=quiet_end + timedelta(hours=2))
    docket = Docket.get_by_id(SMALL)
    assert sealing.counts["sealed"] == 1 and docket.seal_reason == "auto"
    assert docket.sealed_at == iso(quiet_end + timedelta(hours=2))
    server.reset_log()
    assert fetch(state, SMALL, client(server)).message == "sealed"
    assert server.request_log == []


def test_a_broken_pull_never_seals_even_when_due(state, small):
    _, server, _ = small
    dockets.ensure_dockets([SMALL], "list")
    fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO)
    server.fail_next_5xx = 6
    broken = fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO + timedelta(days=1))
    assert not broken.clean and Docket.get_by_id(SMALL).sealed_at is None


# --------------------------------------------------------------------------- Eastern time


FALL_BACK = {  # 2025-11-02: 01:00-01:59 happens twice (EDT, then EST)
    "watermark": datetime(2025, 11, 2, 3, 59, 50, tzinfo=UTC),  # 23:59:50 EDT on Nov 1
    "added": ["2025-11-02T04:00:05Z", "2025-11-02T05:30:00Z"],  # 00:00:05 and 01:30 EDT
    # then, from a watermark inside the repeated hour, wall times *earlier* than 01:30 EDT
    "added_again": ["2025-11-02T05:45:00Z", "2025-11-02T06:10:00Z", "2025-11-02T06:59:59Z",
                    "2025-11-02T07:05:00Z"],  # 01:45 EDT, 01:10 EST, 01:59:59 EST, 02:05 EST
    # 01:30 EDT is ambiguous as a wall time: the filter steps back before the repeated hour.
    "filters": {"added": "2025-11-01 23:59:50", "added_again": "2025-11-02 00:59:59"},
}
SPRING_FORWARD = {  # 2026-03-08: 02:00-02:59 does not exist
    "watermark": datetime(2026, 3, 8, 4, 59, 50, tzinfo=UTC),  # 23:59:50 EST on Mar 7
    "added": ["2026-03-08T05:00:05Z", "2026-03-08T06:59:59Z", "2026-03-08T07:00:00Z",
              "2026-03-08T07:30:00Z"],  # 00:00:05 EST, 01:59:59 EST, 03:00 EDT, 03:30 EDT
    "added_again": ["2026-03-08T08:00:00Z"],
    "filters": {"added": "2026-03-07 23:59:50", "added_again": "2026-03-08 03:30:00"},
}


@pytest.mark.parametrize("case", [FALL_BACK, SPRING_FORWARD], ids=["fall-back", "spring-forward"])
def test_comments_straddling_eastern_midnight_and_dst_are_all_fetched(state, tmp_path, case):
    root = tmp_path / "mirror"
    start = case["watermark"] - timedelta(minutes=30)
    small_docket(root, SMALL, [start + i * timedelta(minutes=5) for i in range(7)])  # ends at the watermark
    with ScriptedServer(root) as server:
        # Ambiguous wall times are read as the *later* instant: the harder case for the client.
        server.dst_fold = 1
        dockets.ensure_dockets([SMALL], "list")
        fetch(state, SMALL, client(server))
        assert Docket.get_by_id(SMALL).pull_watermark == api_time(case["watermark"])
        for key in ("added", "added_again"):
            new = [corpus_changes.add_comments(root, SMALL, 1, when)[0] for when in case[key]]
            server.reload()
            server.reset_log()
            result = fetch(state, SMALL, client(server))
            assert result.clean and result.counts["created"] == len(new), (key, result.counts)
            assert set(new) <= set(stored_comments(SMALL))
            assert Docket.get_by_id(SMALL).pull_watermark == case[key][-1]
            [(_, _, query)] = server.request_log  # one list call, from the watermark
            assert query["filter[lastModifiedDate][ge]"] == [case["filters"][key]]
    assert set(stored_comments(SMALL)) == comment_ids(root)


# --------------------------------------------------------------------------- bad input


def bad_item(item_id, **attributes) -> dict:
    attrs = {"documentType": "Public Submission", "lastModifiedDate": "2025-08-01T00:00:00Z",
             "withdrawn": False, "title": "t", "objectId": "0900006aaaaaaaaa",
             "postedDate": "2025-08-01T00:00:00Z", **attributes}
    return {"id": item_id, "type": "comments", "attributes": attrs}


BAD_BODIES = {
    "malformed JSON": (Reply(200, b'{"data": [{"id": "x"', "application/vnd.api+json"), "not JSON"),
    "HTML page with status 200": (Reply(200, b"<!DOCTYPE html><html><body>Error</body></html>",
                                        "text/html"), "HTML page instead of JSON"),
    "no meta": (Reply(200, b'{"data": []}'), "meta.hasNextPage"),
    "data not a list": (Reply(200, b'{"data": {}, "meta": {"hasNextPage": false}}'), "no `data` list"),
}


@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_a_bad_response_body_stops_the_walk_cleanly_with_the_reason(state, small, tmp_path, case):
    _, server, _ = small
    dockets.ensure_dockets([SMALL], "list")
    fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO)
    before, docket = dump(), Docket.get_by_id(SMALL)
    outside = tree(tmp_path, tmp_path / "data")
    reply, reason = BAD_BODIES[case]
    server.raw_next = [reply]
    result = fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO + timedelta(days=1))
    assert not result.clean and reason in result.message and SMALL in result.message
    assert dump() == before
    after = Docket.get_by_id(SMALL)
    assert (after.pull_watermark, after.last_pull_at, after.sealed_at) == (
        docket.pull_watermark, docket.last_pull_at, None)
    assert tree(tmp_path, tmp_path / "data") == outside


def test_bad_list_items_are_their_own_failures_the_docket_goes_on_and_the_next_run_repairs(
        state, small, tmp_path):
    root, server, _ = small
    ids = sorted(comment_ids(root))
    server.replace = {
        ids[0]: bad_item("CMS-2026-0200-0010/../../../evil"),
        ids[1]: bad_item(".."),
        ids[2]: bad_item("CMS\x00evil"),
        ids[3]: bad_item(ids[3], lastModifiedDate="soon"),  # unreadable
        ids[4]: bad_item(ids[4], title=["not", "a", "string"]),  # mistyped
        ids[5]: bad_item(ids[5], withdrawn="yes"),
        ids[6]: bad_item(ids[6], postedDate=20250801),
        ids[7]: {"id": ids[7], "type": "comments"},  # no attributes at all
        ids[8]: bad_item(12345),  # a number where the id's string is due
        ids[9]: {"type": "comments", "attributes": bad_item("x")["attributes"]},  # no id at all
    }
    dockets.ensure_dockets([SMALL], "list")
    outside = tree(tmp_path, tmp_path / "data")
    result = fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO)
    # The docket's fetch is clean: every other item of the page and of the next pages is taken.
    assert result.clean and result.counts["malformed"] == 5 and result.counts["failed"] == 5
    assert result.counts["created"] == 690 and len(stored_comments(SMALL)) == 690
    assert result.message.startswith("bad list items (the docket goes on): ")
    assert "id 'CMS\\x00evil'" in result.message and "\x00" not in result.message
    failed = {s.item: s.reason for s in ItemState.select().where(ItemState.state == "failed",
                                                                 ItemState.stage == "fetch")}
    assert sorted(failed) == ids[3:8]
    assert "lastModifiedDate" in failed[ids[3]] and "`title` is a list" in failed[ids[4]]
    assert "`withdrawn` is not a boolean" in failed[ids[5]] and "no attributes" in failed[ids[7]]
    # Without a safe id: counted and named, one row each for stats and explain.
    unkeyed = [s for s in ItemState.select().where(ItemState.stage == "fetch.unkeyed")]
    assert len(unkeyed) == 5 and {s.docket for s in unkeyed} == {SMALL}
    assert all(s.item.startswith(f"{SMALL}/list-item-") and s.state == "failed" for s in unkeyed)
    labels = sorted(s.reason.split("(", 1)[1].split(")", 1)[0] for s in unkeyed)
    assert labels == ["id '..'", "id 'CMS-2026-0200-0010/../../../evil'", "id 'CMS\\x00evil'", "id 12345",
                      "no id"]
    assert not any("\x00" in s.reason for s in unkeyed)
    # The watermark is held at the earliest bad item's time: the next run lists them again.
    assert Docket.get_by_id(SMALL).pull_watermark == "2025-08-01T00:00:00Z"
    assert not any("evil" in key or ".." in key for key in stored_comments(SMALL))
    assert tree(tmp_path, tmp_path / "data") == outside
    data_files = {p.name for p in (tmp_path / "data").rglob("*")}
    assert not any("evil" in name for name in data_files)

    server.replace = {}  # upstream fixed its records (a fix moves their lastModifiedDate)
    corpus_changes.modify_comments(root, ids[:10], CLOSED_LONG_AGO - timedelta(days=30))
    server.reload()
    repaired = fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO)
    assert repaired.clean and repaired.counts["created"] == 10, repaired.counts
    assert fetch_states(SMALL) == {"ok": 700} and set(stored_comments(SMALL)) == set(ids)
    assert Docket.get_by_id(SMALL).pull_watermark > "2025-08-01T00:00:00Z"


def test_a_bad_document_is_its_own_failure_and_a_bad_docket_record_stops_the_resolve(state, small):
    _, server, _ = small
    dockets.ensure_dockets([SMALL], "list")
    doc = f"{SMALL}-0001"
    server.replace = {doc: {"id": doc, "type": "documents",
                            "attributes": {"objectId": "../x", "commentEndDate": "2025-09-23T03:59:59Z"}}}
    result = fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO)
    assert result.clean and result.counts["documents.failed"] == 1 and "'../x'" in result.message
    assert Docket.get_by_id(SMALL).resolved_at is not None and Docket.get_by_id(SMALL).sealed_at is None
    row = ItemState.get(ItemState.stage == "fetch", ItemState.item == doc)
    assert row.state == "failed" and "`objectId` is not a safe id: '../x'" in row.reason
    assert "comments.list" not in str(result.counts)  # nothing is listed by an unsafe objectId

    # A document list item without an id: counted, named, skipped; the docket resolves.
    server.replace = {doc: {"type": "documents", "attributes": {"title": "x"}}}
    result = fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO, force=True)
    assert result.clean and result.counts["malformed"] == 1
    assert "document list item without a safe id: no id" in result.message
    server.replace = {}
    server.raw_next = [Reply(200, json.dumps({"data": {"id": SMALL, "attributes": {"title": 7}}}).encode())]
    result = fetch(state, SMALL, client(server), force=True)
    assert not result.clean and "`title` is a int" in result.message  # the docket's own record
    assert fetch(state, SMALL, client(server), force=True).clean  # and once the server behaves, it resolves


def test_older_list_items_without_lastModifiedDate_are_stored_and_only_dated_ones_move_the_watermark(
        state, small):
    root, server, _ = small
    ids = sorted(comment_ids(root))
    undated = bad_item(ids[0])
    del undated["attributes"]["lastModifiedDate"]
    server.replace = {ids[0]: undated}
    dockets.ensure_dockets([SMALL], "list")
    result = fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO)
    assert result.clean and result.counts["created"] == 700 and "failed" not in result.counts
    assert fetch_states(SMALL) == {"ok": 700}
    assert Item.get_by_id(ids[0]).last_modified is None
    watermark = Docket.get_by_id(SMALL).pull_watermark
    dated = [i.last_modified for i in Item.select().where(Item.kind == "comment", Item.last_modified.is_null(False))]
    assert watermark == max(dated, key=lambda v: datetime.fromisoformat(v.replace("Z", "+00:00")))


def test_a_document_without_objectId_is_stored_and_its_comments_are_not_listed(state, small):
    _, server, _ = small
    doc = f"{SMALL}-0001"
    server.replace = {doc: {"id": doc, "type": "documents",
                            "attributes": {"title": "Notice", "documentType": "Proposed Rule",
                                           "commentEndDate": "2025-09-23T03:59:59Z"}}}
    dockets.ensure_dockets([SMALL], "list")
    result = fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO)
    assert result.clean, result.message
    assert Item.get_by_id(doc).kind == "document" and Item.get_by_id(doc).object_id is None
    docket = Docket.get_by_id(SMALL)
    assert docket.resolved_at is not None and docket.comment_end_date == "2025-09-22"
    assert json.loads(docket.documents)[0]["object_id"] is None


def test_comment_periods_are_stored_as_eastern_dates(state, small):
    _, server, _ = small
    dockets.ensure_dockets([SMALL], "list")
    fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO)
    docket = Docket.get_by_id(SMALL)
    windows = json.loads(docket.documents)
    # 2025-09-23T03:59:59Z is 23:59:59 on September 22 in Washington: the deadline's day.
    assert docket.comment_end_date == "2025-09-22" and {w["end"] for w in windows} == {"2025-09-22"}


def test_a_document_with_an_unreadable_date_is_its_own_failure_not_the_dockets(state, small):
    root, server, _ = small
    doc = f"{SMALL}-0001"
    server.replace = {doc: {"id": doc, "type": "documents",
                            "attributes": {"objectId": "0900006aaaaaaaaa", "postedDate": "12345",
                                           "commentEndDate": "2025-09-23T03:59:59Z"}}}
    dockets.ensure_dockets([SMALL], "list")
    result = fetch(state, SMALL, client(server), clock=CLOSED_LONG_AGO)
    assert result.counts["documents.failed"] == 1 and Item.get_or_none(Item.key == doc) is None
    row = ItemState.get((ItemState.stage == "fetch") & (ItemState.item == doc))
    assert row.state == "failed" and "postedDate" in row.reason and row.detail == "permanent"
    assert Docket.get_by_id(SMALL).resolved_at is not None


# --------------------------------------------------------------------------- secrets, CLI


SECRET = "sEcReT-kEy-4242-do-not-log"


def test_the_api_key_never_appears_in_run_rows_logs_or_task_parameters(tmp_path, small, caplog):
    root, _, _ = small
    with ScriptedServer(root, api_keys=(SECRET,)) as server:
        rt = make_runtime(tmp_path, api_base=server.api_base, api_key=SECRET,
                          discover="list", dockets=SMALL)
        rt.state  # noqa: B018
        previous = set_runtime(rt)
        try:
            caplog.set_level(logging.DEBUG)
            assert build(task_module.FetchAll())
            server.gone.add(SMALL)  # a docket answered 404: its message is stored
            Docket.update(last_pull_at=None, resolved_at=None).execute()
            assert build(task_module.FetchAll())  # recorded as not found, not a failure
            rows = [json.dumps(r, default=str) for r in Run.select().dicts()]
            params = task_module.FetchComments(docket=SMALL).to_str_params()
            task_id = task_module.FetchComments(docket=SMALL).task_id
        finally:
            set_runtime(previous)
            rt.close()
    assert len(rows) == 2 and "HTTP 404" in rows[1]
    for text in (*rows, caplog.text, json.dumps(params), task_id, repr(server.request_log)):
        assert SECRET not in text
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def sealed_docket_store(tmp_path: Path) -> None:
    rt = make_runtime(tmp_path)
    rt.state  # noqa: B018
    previous = set_runtime(rt)
    try:
        dockets.ensure_dockets([SMALL], "list")
        dockets.seal(SMALL, "manual")
    finally:
        set_runtime(previous)
        rt.close()


def luigi_cli(tmp_path: Path, server: StandinServer, *args: str, **env_extra: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(
        PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
        DOCKETEER_DATA_DIR=str(tmp_path / "data"), DOCKETEER_API_BASE=server.api_base,
        REGULATIONS_GOV_API_KEY="test-key", DOCKETEER_PACE_SECONDS="0",
        # Discovery would call the stand-in's Federal Register search: --docket must skip it.
        DOCKETEER_DISCOVER="fr", DOCKETEER_FR_BASE=server.fr_base, DOCKETEER_EMBEDDER="hashing",
        **env_extra,
    )
    return subprocess.run(
        [sys.executable, "-m", "luigi", "--module", "pipeline", *args, "--local-scheduler"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )


def sealed_notices(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if f"{SMALL}: sealed" in line]


@pytest.mark.parametrize("wrapper", ["FetchAll", "IndexAll"])
def test_a_sealed_docket_named_with_docket_makes_zero_calls(tmp_path, small, wrapper, request):
    _, server, _ = small
    extra = {"DOCKETEER_INDEX_URL": request.getfixturevalue("pg_url")} if wrapper == "IndexAll" else {}
    sealed_docket_store(tmp_path)
    server.reset_log()
    done = luigi_cli(tmp_path, server, wrapper, "--docket", SMALL, **extra)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(sealed_notices(done.stderr)) == 1, done.stderr[-3000:]
    assert server.request_log == []  # not even discovery: --docket filters before any call


def test_watermark_is_capped_at_the_end_of_the_walk():
    from datetime import UTC, datetime

    from pipeline.fetch.walk import _not_after

    now = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
    assert _not_after("2026-11-29T11:00:00Z", now) == "2026-11-29T11:00:00Z"
    assert _not_after("2027-03-01T00:00:00Z", now) == "2026-11-29T12:00:00Z"  # dated in the future
    assert _not_after(None, now) is None
