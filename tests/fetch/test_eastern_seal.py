"""The seal's quiet period counts US Eastern calendar days: from the Eastern date of the
deadline, with "today" and the day of the last pull in Eastern time. At 02:00 UTC it is
still the previous day in Washington."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from pipeline.seals import SealFacts, eastern_day, should_seal
from pipeline.store import dockets
from pipeline.store.models import Docket
from tests.fixtures.fetch_scripted import SMALL, client, fetch

# Deadline September 22 (Eastern) + 30 days: the quiet period ends on October 22, Eastern.
CLOSE = "2025-09-22"


def facts(last_pull_at: str, close: str = CLOSE) -> SealFacts:
    return SealFacts(comment_end_date=close, last_pull_at=last_pull_at, last_pull_new=0, sealed_at=None)


def test_at_two_in_the_morning_utc_it_is_still_the_previous_day_in_washington():
    assert eastern_day(datetime(2025, 10, 22, 2, tzinfo=UTC)) == date(2025, 10, 21)  # EDT, UTC-4
    assert eastern_day("2025-12-22T04:30:00Z") == date(2025, 12, 21)  # EST, UTC-5
    assert eastern_day("2025-12-22T05:00:00.000000Z") == date(2025, 12, 22)


def test_no_seal_on_the_utc_date_of_the_quiet_end_while_washington_is_a_day_behind():
    two_am_utc = datetime(2025, 10, 22, 2, tzinfo=UTC)
    assert not should_seal(facts("2025-10-22T02:00:00Z"), two_am_utc, 30)
    just_after_midnight_eastern = datetime(2025, 10, 22, 4, 0, 1, tzinfo=UTC)
    assert should_seal(facts("2025-10-22T04:00:01Z"), just_after_midnight_eastern, 30)


def test_a_pull_made_on_the_eastern_day_before_proves_nothing_even_if_its_utc_date_is_the_quiet_end():
    later = datetime(2025, 11, 1, 12, tzinfo=UTC)
    assert not should_seal(facts("2025-10-22T03:59:59Z"), later, 30)  # 23:59:59 on October 21 in DC
    assert should_seal(facts("2025-10-22T04:00:00Z"), later, 30)


def test_a_deadline_stored_as_an_instant_by_an_older_store_counts_from_its_eastern_day():
    instant = "2025-09-23T03:59:59Z"  # the September 22 deadline
    at = datetime(2025, 10, 22, 12, tzinfo=UTC)
    assert should_seal(facts("2025-10-22T12:00:00Z", close=instant), at, 30)
    assert not should_seal(facts("2025-10-22T12:00:00Z", close=instant), at, 31)


def test_fetch_seals_by_the_eastern_date_not_the_utc_one(state, small):
    _, server, _ = small
    dockets.ensure_dockets([SMALL], "list")
    quiet_end_utc_date = datetime(2025, 10, 22, tzinfo=UTC)
    fetch(state, SMALL, client(server), clock=quiet_end_utc_date - timedelta(days=2))
    assert Docket.get_by_id(SMALL).comment_end_date == CLOSE
    two_am = fetch(state, SMALL, client(server), clock=quiet_end_utc_date + timedelta(hours=2))
    assert two_am.clean and "sealed" not in two_am.counts  # October 21, 22:00 in Washington
    assert Docket.get_by_id(SMALL).sealed_at is None
    five_am = fetch(state, SMALL, client(server), clock=quiet_end_utc_date + timedelta(hours=5))
    assert five_am.counts["sealed"] == 1 and Docket.get_by_id(SMALL).seal_reason == "auto"
