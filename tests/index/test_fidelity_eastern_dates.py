"""Eastern dates where people read dates: an instant of 03:59:59Z is
the day before in Washington, and every place that shows a date shows that day — search
results (text and JSON, which keeps the UTC instant too), ``explain``, ``dockets`` and the
web pages — through the one helper, ``pipeline.clock.eastern_date``.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from starlette.testclient import TestClient

from pipeline.clock import eastern_date, eastern_day_bounds, eastern_instant
from pipeline.index.database import SearchHit
from pipeline.index.search import format_hits
from pipeline.index.search_results import hit_records, search_document
from pipeline.ops import cli
from pipeline.store import dockets
from pipeline.store.models import Docket, Item
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.index_inputs import D, put_item, run

LATE = "2025-09-23T03:59:59Z"  # 23:59:59 on September 22 in Washington (EDT, UTC-4)
DAY = "2025-09-22"
UTC_DAY = "2025-09-23"
DOCKET, KEY = "ACF-2025-0038", "ACF-2025-0038-0004"


@pytest.mark.parametrize(("stamp", "day"), [
    (LATE, DAY), ("2025-09-23T04:00:00Z", UTC_DAY),
    ("2025-01-15T04:59:59.999999Z", "2025-01-14"),  # EST, UTC-5, as the store writes instants
    ("2025-09-22", DAY),  # already a date (a comment period's end): itself
    ("", ""), (None, ""), ("soon", ""),  # absent or unreadable: nothing shown, never a crash
])
def test_the_one_helper(stamp, day):
    assert eastern_date(stamp) == day


def hit() -> SearchHit:
    return SearchHit(KEY, "comments", DOCKET, 0, "The deadline was the 22nd.", None, 0.5,
                     {"posted_date": LATE, "submitter": "Pat Doe", "kind": "comment"})


def test_search_text_shows_the_eastern_day():
    [header, _] = format_hits([hit()]).splitlines()
    assert f"{KEY}  [{DOCKET}]  {DAY}  — Pat Doe" in header and UTC_DAY not in header


def test_search_json_keeps_the_instant_and_gives_the_eastern_day(sqlite_state):
    [record] = search_document("deadline", 1, None, None, hit_records([hit()]))["results"]
    assert (record["posted_date"], record["posted_day"]) == (LATE, DAY)


def stored_late_item() -> None:
    dockets.ensure_dockets([DOCKET], "list")
    # An older store kept the deadline as the instant itself: it is shown as its Eastern day.
    Docket.update(comment_end_date=LATE, comment_start_date="2025-07-22").where(Docket.id == DOCKET).execute()
    Item.insert(key=KEY, docket=DOCKET, kind="comment", title="A late comment", posted_date=LATE,
                last_modified=LATE, created_at=LATE, updated_at=LATE).execute()


def test_explain_and_dockets_show_the_eastern_day(sqlite_state, capsys):
    stored_late_item()
    assert cli.main(["explain", KEY]) == 0
    out = capsys.readouterr().out
    assert f"posted {DAY} 23:59 EDT  modified {DAY} 23:59 EDT" in out  # Washington's time, zone named
    assert cli.main(["dockets"]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith(DOCKET)]
    assert DAY in row and UTC_DAY not in row


def test_web_pages_show_the_eastern_day(sqlite_state):
    stored_late_item()
    with TestClient(make_app(sqlite_state, pages.WarmSearch(sqlite_state)), base_url="http://127.0.0.1") as client:
        for path in (f"/comment/{KEY}", f"/docket/{DOCKET}", "/status"):
            page = client.get(path)
            assert page.status_code == 200 and DAY in page.text and UTC_DAY not in page.text, path


# Posted instants on both sides of Washington's midnight, in summer (EDT) and winter (EST).
BOUNDARY = {
    "0001": "2025-09-22T03:59:59Z",  # 21 September, 23:59:59 EDT
    "0002": "2025-09-22T04:00:00Z",  # 22 September, 00:00 EDT
    "0003": "2025-09-23T03:59:59Z",  # 22 September, 23:59:59 EDT
    "0004": "2025-09-23T04:00:00Z",  # 23 September
    "0005": "2025-01-15T04:59:59Z",  # 14 January, 23:59:59 EST
    "0006": "2025-01-15T05:00:00Z",  # 15 January, 00:00 EST
}


@pytest.mark.parametrize(("first", "last", "bounds"), [
    ("2025-09-22", "2025-09-22", ("2025-09-22T04:00:00Z", "2025-09-23T04:00:00Z")),
    ("2025-01-15", None, ("2025-01-15T05:00:00Z", None)),
    (None, "2025-03-08", (None, "2025-03-09T05:00:00Z")),  # the day before summer time: EST
    ("2025-03-09", "2025-03-09", ("2025-03-09T05:00:00Z", "2025-03-10T04:00:00Z")),  # a 23-hour day
])
def test_eastern_days_as_utc_bounds(first, last, bounds):
    assert eastern_day_bounds(first, last) == bounds


@pytest.mark.postgres
def test_the_search_pages_date_filter_takes_eastern_days_at_the_utc_boundary(rt):
    """People give the dates they read: from=to=September 22 is what was posted that day in
    Washington, not the UTC day (which would take 0001 and leave 0003 out)."""
    keys = {f"{D}-{n}": posted for n, posted in BOUNDARY.items()}
    for key, posted in keys.items():
        put_item(rt, key, f"Small water systems cannot meet the monitoring schedule ({key}).")
        Item.update(posted_date=posted).where(Item.key == key).execute()
    run(rt)
    with TestClient(make_app(rt, pages.WarmSearch(rt)), base_url="http://127.0.0.1") as client:
        def found(since: str, until: str) -> set[str]:
            page = client.get("/search", params={"q": "monitoring schedule", "from": since, "to": until})
            assert page.status_code == 200
            return {k.rsplit("-", 1)[1] for k in re.findall(r'class="comment-link" href="/comment/([^"]+)"',
                                                            page.text)}

        assert found("", "") == set(BOUNDARY)  # no dates: all of them
        assert found("2025-09-22", "2025-09-22") == {"0002", "0003"}
        assert found("2025-09-21", "2025-09-21") == {"0001"}
        assert found("2025-09-23", "") == {"0004"}
        assert found("2025-01-14", "2025-01-14") == {"0005"}
        assert found("", "2025-01-15") == {"0005", "0006"}
        page = client.get("/search", params={"q": "monitoring schedule", "from": "2025-09-22", "to": "2025-09-22"})
        assert page.text.count('class="date">2025-09-22<') == 2  # each shown by its Eastern day


@pytest.mark.parametrize(("stamp", "shown"), [
    ("2026-12-02T05:12:00.000000Z", "2026-12-02 00:12 EST"),  # winter: UTC-5
    ("2026-07-04T16:30:00Z", "2026-07-04 12:30 EDT"),  # summer: UTC-4
    ("2026-03-08T06:59:00Z", "2026-03-08 01:59 EST"),  # a minute before summer time begins
    ("2026-03-08T07:00:00Z", "2026-03-08 03:00 EDT"),  # 02:00 EST became 03:00 EDT
    ("2026-11-01T05:30:00Z", "2026-11-01 01:30 EDT"),  # the hour that happens twice: first
    ("2026-11-01T06:30:00Z", "2026-11-01 01:30 EST"),  # ... and second, told apart by the zone
    (datetime(2026, 12, 2, 5, 12), "2026-12-02 00:12 EST"),  # a naive datetime is UTC
    (None, ""), ("", ""), ("soon", ""),  # absent or unreadable: nothing, never a crash
])
def test_an_instant_as_people_read_it(stamp, shown):
    assert eastern_instant(stamp) == shown


def test_dockets_and_pages_name_the_zone_of_the_last_pull(sqlite_state, capsys):
    stored_late_item()
    Docket.update(last_pull_at="2026-12-02T05:12:00.000000Z").where(Docket.id == DOCKET).execute()
    assert cli.main(["dockets"]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith(DOCKET)]
    assert "2026-12-02 00:12 EST" in row and "05:12" not in row
    with TestClient(make_app(sqlite_state, pages.WarmSearch(sqlite_state)), base_url="http://127.0.0.1") as client:
        for path in (f"/docket/{DOCKET}", "/status"):
            page = client.get(path)
            assert "2026-12-02 00:12 EST" in page.text and "05:12" not in page.text, path
