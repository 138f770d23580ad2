from datetime import date

import pytest

from pipeline.seals import SealFacts, should_seal

CLOSE = "2026-09-14"
QUIET_END = date(2026, 10, 14)  # close + 30 days


def facts(**kw):
    base = dict(comment_end_date=CLOSE, last_pull_at="2026-10-14T05:00:00.000000Z",
                last_pull_new=0, sealed_at=None)
    base.update(kw)
    return SealFacts(**base)


def test_seals_on_the_quiet_period_end():
    assert should_seal(facts(), QUIET_END, 30)


def test_not_one_day_before_the_quiet_period_end():
    day_before = date(2026, 10, 13)
    assert not should_seal(facts(last_pull_at="2026-10-13T23:00:00.000000Z"), day_before, 30)
    # even if "today" is past, a pull made before the quiet end proves nothing
    assert not should_seal(facts(last_pull_at="2026-10-13T23:00:00.000000Z"), QUIET_END, 30)


@pytest.mark.parametrize(
    "change",
    [
        {"comment_end_date": None},  # missing close date
        {"last_pull_at": None},  # no clean pull (walks that break never stamp it)
        {"last_pull_new": 2},  # that pull found new comments
        {"last_pull_new": None},
        {"sealed_at": "2026-10-01T00:00:00.000000Z"},  # already sealed
    ],
)
def test_does_not_seal(change):
    assert not should_seal(facts(**change), date(2026, 12, 1), 30)


def test_quiet_days_is_honoured():
    assert not should_seal(facts(), QUIET_END, 31)
    assert should_seal(facts(last_pull_at="2026-09-20T00:00:00Z"), QUIET_END, 0)
