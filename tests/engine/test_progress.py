"""What the visualiser's status line says: a phase while the model loads, and a rate and an
ETA only once a rate is measured (from the first item's end, over recent items), so that a
slow start never makes an ETA of hours."""

from __future__ import annotations

import re

from pipeline.engine.progress import MIN_ITEMS, MIN_SECONDS, RATE_WINDOW, Progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _progress(total: int):
    clock, said = Clock(), []
    progress = Progress("index D", every=0, on_status=said.append, clock=clock)
    progress.start(total)
    return progress, clock, said


def _eta(line: str) -> float | None:
    found = re.search(r"ETA (\d+)s", line)
    return float(found.group(1)) if found else None


def _items(progress, clock, count: int, seconds_each: float) -> None:
    for _ in range(count):
        clock.now += seconds_each
        progress.advance("embedded")


def test_the_first_statuses_have_no_eta_until_a_rate_is_measured():
    progress, clock, said = _progress(100)
    assert said[-1] == "index D: 0/100 0%"  # nothing has moved yet
    _items(progress, clock, 1, 2.0)
    assert said[-1] == "index D: 1/100 1% embedded=1"  # one item: start-up, not a rate
    _items(progress, clock, MIN_ITEMS - 1, 2.0)
    assert _eta(said[-1]) is None  # too few items after the first
    _items(progress, clock, 1, 2.0)
    # MIN_ITEMS items in 2 x MIN_ITEMS s after the first one (>= MIN_SECONDS): 0.5/s
    assert 2.0 * MIN_ITEMS >= MIN_SECONDS
    assert said[-1] == f"index D: {MIN_ITEMS + 1}/100 {MIN_ITEMS + 1}% 0.5/s ETA {2 * (99 - MIN_ITEMS)}s embedded={MIN_ITEMS + 1}"


def test_a_few_fast_items_are_not_a_rate_before_min_seconds():
    progress, clock, said = _progress(1000)
    _items(progress, clock, 50, 0.01)  # 0.5 s: many items, too short a measure
    assert all(_eta(line) is None for line in said)
    _items(progress, clock, 500, 0.01)
    assert abs(_eta(said[-1]) - 450 * 0.01) <= 1  # 100/s


def test_loading_model_is_said_and_not_measured():
    progress, clock, said = _progress(34)
    progress.phase("loading model")
    assert said[-1] == "index D: 0/34 0% loading model"
    clock.now = 120.0  # two minutes of model loading
    progress.phase(None)
    _items(progress, clock, 6, 1.0)
    assert said[-1] == "index D: 6/34 17% 1.0/s ETA 28s embedded=6"


def test_a_slow_start_without_a_phase_makes_no_absurd_estimate():
    """The first item waits 120 s (a model exported inside the first embed call), then items
    take 0.1 s each: every ETA said is within 10 % of the time really left."""
    progress, clock, said = _progress(500)
    _items(progress, clock, 1, 120.0)
    for _ in range(499):
        _items(progress, clock, 1, 0.1)
        eta = _eta(said[-1])
        if eta is not None:
            left = (500 - progress.done) * 0.1
            assert abs(eta - left) <= 0.1 * left + 1, said[-1]
    assert any(_eta(line) for line in said)


def test_the_eta_follows_the_recent_rate():
    progress, clock, said = _progress(2000)
    _items(progress, clock, 600, 0.1)  # 10/s for a minute
    assert _eta(said[-1]) == 140  # 1,400 left at 10/s
    _items(progress, clock, 2 * int(RATE_WINDOW), 1.0)  # then 1/s for two windows
    assert _eta(said[-1]) == 2000 - 600 - 2 * int(RATE_WINDOW)  # at 1/s, the fast minute forgotten
