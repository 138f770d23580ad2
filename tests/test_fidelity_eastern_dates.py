"""Eastern dates where people read dates (issue #15, Deliver 5): an instant of 03:59:59Z is
the day before in Washington, and every place that shows a date shows that day — search
results (text and JSON, which keeps the UTC instant too), ``explain``, ``dockets`` and the
web pages — through the one helper, ``pipeline.clock.eastern_date``.
"""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from pipeline import cli
from pipeline.clock import eastern_date
from pipeline.index.database import SearchHit
from pipeline.index.search import format_hits
from pipeline.index.search_results import hit_records, search_document
from pipeline.store import dockets
from pipeline.store.models import Docket, Item
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.state_fixtures import sqlite_state  # noqa: F401

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


def test_search_json_keeps_the_instant_and_gives_the_eastern_day(sqlite_state):  # noqa: F811
    [record] = search_document("deadline", 1, None, None, hit_records([hit()]))["results"]
    assert (record["posted_date"], record["posted_day"]) == (LATE, DAY)


def stored_late_item() -> None:
    dockets.ensure_dockets([DOCKET], "list")
    # An older store kept the deadline as the instant itself: it is shown as its Eastern day.
    Docket.update(comment_end_date=LATE, comment_start_date="2025-07-22").where(Docket.id == DOCKET).execute()
    Item.insert(key=KEY, docket=DOCKET, kind="comment", title="A late comment", posted_date=LATE,
                last_modified=LATE, created_at=LATE, updated_at=LATE).execute()


def test_explain_and_dockets_show_the_eastern_day(sqlite_state, capsys):  # noqa: F811
    stored_late_item()
    assert cli.main(["explain", KEY]) == 0
    out = capsys.readouterr().out
    assert f"posted {DAY} ({LATE})  modified {DAY} ({LATE})" in out  # the day, and the instant kept
    assert cli.main(["dockets"]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith(DOCKET)]
    assert DAY in row and UTC_DAY not in row


def test_web_pages_show_the_eastern_day(sqlite_state):  # noqa: F811
    stored_late_item()
    with TestClient(make_app(sqlite_state, pages.WarmSearch(sqlite_state))) as client:
        for path in (f"/comment/{KEY}", f"/docket/{DOCKET}", "/status"):
            page = client.get(path)
            assert page.status_code == 200 and DAY in page.text and UTC_DAY not in page.text, path
