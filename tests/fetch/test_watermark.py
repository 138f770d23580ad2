"""The fetch watermark as a value: parsing, instants, the cap, the Eastern filter value."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta

import pytest

from pipeline.clock import EASTERN
from pipeline.fetch.watermark import Watermark
from pipeline.sources.api_time import next_filter_second


def test_str_is_the_text_it_was_made_from_so_stored_values_read_back_the_same():
    for text in ("2025-09-11T17:58:29Z", "2025-09-11T13:58:29-04:00", "2026-09-08T12:00:00.123456Z"):
        assert str(Watermark(text)) == text
        assert str(Watermark.of(text)) == text
    mark = Watermark("2025-09-11T17:58:29Z")
    assert Watermark.of(mark) is mark
    assert pickle.loads(pickle.dumps(mark)) == mark


@pytest.mark.parametrize("text", ["yesterday", "", "2025-13-01T00:00:00Z", None, 1757613509])
def test_anything_but_an_api_time_is_refused(text):
    with pytest.raises(ValueError):
        Watermark(text)


def test_instants_are_compared_not_strings():
    utc, eastern = Watermark("2025-09-11T17:58:29Z"), Watermark("2025-09-11T13:58:29-04:00")
    assert utc == eastern and hash(utc) == hash(eastern) and len({utc, eastern}) == 1
    assert str(utc) > str(eastern)  # as strings the order is wrong ...
    earlier = Watermark("2025-09-11T17:58:28Z")
    assert earlier < eastern and eastern > earlier  # ... as instants it is right
    # "+00:00" sorts before "Z" as a string, though it is the later instant here.
    assert Watermark("2025-09-11T17:58:30+00:00") > Watermark("2025-09-11T17:58:29Z")
    assert Watermark("2025-09-11T17:58:29.5Z") > utc


def test_later_keeps_the_later_instant_and_on_a_tie_the_first():
    first, same, after = (Watermark("2025-09-11T17:58:29Z"),
                          Watermark("2025-09-11T13:58:29-04:00"), Watermark("2025-09-11T17:58:30Z"))
    assert first.later(after) is after and after.later(first) is after
    assert str(first.later(same)) == "2025-09-11T17:58:29Z"  # the stored string does not churn
    assert first.later(None) is first


def test_capped_at_now():
    now = datetime(2026, 11, 29, 12, 0, 0, 750000, tzinfo=UTC)
    past = Watermark("2026-11-29T11:00:00Z")
    assert past.capped(now) is past
    exactly = Watermark("2026-11-29T12:00:00.750Z")
    assert exactly.capped(now) is exactly
    future = Watermark("2027-03-01T00:00:00Z")  # a record dated in the future
    assert str(future.capped(now)) == "2026-11-29T12:00:00Z"  # whole seconds, as the API writes
    # A clock in another zone caps at the same instant, still written in UTC.
    assert str(future.capped(now.astimezone(EASTERN))) == "2026-11-29T12:00:00Z"


@pytest.mark.parametrize(
    ("utc", "eastern"),
    [
        ("2026-01-15T12:00:00Z", "2026-01-15 07:00:00"),  # EST, UTC-5
        ("2026-07-01T12:00:00Z", "2026-07-01 08:00:00"),  # EDT, UTC-4
        ("2026-01-15T05:00:00Z", "2026-01-15 00:00:00"),  # Eastern midnight
        ("2026-01-15T04:59:59Z", "2026-01-14 23:59:59"),  # a second before: the day before
        ("2026-01-01T04:59:59Z", "2025-12-31 23:59:59"),  # the year before
        ("2026-03-08T06:59:59Z", "2026-03-08 01:59:59"),  # last EST second before spring-forward
        ("2026-03-08T07:00:00Z", "2026-03-08 03:00:00"),  # first EDT second: 02:xx does not exist
        ("2025-11-02T04:59:59Z", "2025-11-02 00:59:59"),  # just before the repeated hour
        ("2025-11-02T05:00:00Z", "2025-11-02 00:59:59"),  # first 01:00 (EDT): stepped back
        ("2025-11-02T05:59:59Z", "2025-11-02 00:59:59"),  # last second of the first 01:xx
        ("2025-11-02T06:00:00Z", "2025-11-02 01:00:00"),  # second 01:00 (EST): itself
        ("2025-11-02T07:00:00Z", "2025-11-02 02:00:00"),
        ("2026-09-08T12:00:00.999999Z", "2026-09-08 08:00:00"),  # fractions are dropped
        ("2026-09-08T08:00:00-04:00", "2026-09-08 08:00:00"),  # an offset, not only Z
    ],
)
def test_eastern_filter(utc, eastern):
    assert Watermark(utc).eastern_filter() == eastern


def test_eastern_filter_is_a_lower_bound_and_never_goes_backwards_across_dst():
    """Every filter value, read back as Eastern wall time either way round the fold, is at or
    before its instant; and a later instant never gives a smaller value."""
    for start in (datetime(2025, 11, 2, 3, tzinfo=UTC), datetime(2026, 3, 8, 5, tzinfo=UTC)):
        marks = [Watermark((start + timedelta(seconds=s)).isoformat()) for s in range(0, 4 * 3600, 59)]
        values = [m.eastern_filter() for m in marks]
        assert values == sorted(values)
        for mark, value in zip(marks, values, strict=True):
            wall = datetime.strptime(value, "%Y-%m-%d %H:%M:%S")
            for fold in (0, 1):
                read = wall.replace(tzinfo=EASTERN, fold=fold).astimezone(UTC)
                assert read <= mark.instant, (mark, value, fold)


@pytest.mark.parametrize(
    ("eastern", "following"),
    [
        ("2025-12-31 23:59:59", "2026-01-01 00:00:00"),  # across midnight and the year
        ("2026-02-03 10:00:00", "2026-02-03 10:00:01"),  # the boundary second, stepped once
        ("2026-03-08 01:59:59", "2026-03-08 03:00:00"),  # over the spring-forward gap
        ("2025-11-02 00:59:59", "2025-11-02 01:00:00"),  # into the repeated hour
        ("2025-11-02 01:59:59", "2025-11-02 02:00:00"),
    ],
)
def test_next_filter_second(eastern, following):
    assert next_filter_second(eastern) == following
    assert following > eastern
