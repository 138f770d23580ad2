"""Progress of a long stage: percentage and status for the visualiser, periodic log lines."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections import deque
from collections.abc import Callable

log = logging.getLogger("docketeer")

# A test hook, never set in production: "STAGE:N" makes this process SIGKILL itself after
# the N-th item of STAGE (counted per process), so crash tests land at a chosen item boundary.
KILL_HOOK = "DOCKETEER_TEST_KILL_AFTER"
_advanced: dict[str, int] = {}


def _maybe_kill(label: str) -> None:
    hook = os.environ.get(KILL_HOOK)
    if not hook:
        return
    stage, _, count = hook.partition(":")
    if label.split(" ", 1)[0] != stage:
        return
    _advanced[stage] = _advanced.get(stage, 0) + 1
    if _advanced[stage] >= int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)


# When a rate is known, and so an ETA said: measured from the first item's end (what comes
# before it, a model loaded or exported, workers started, is start-up, not the rate), over at
# least MIN_ITEMS more items and MIN_SECONDS. A first ETA from one item after a slow start once
# said 3 hours for a task that took 79 s.
MIN_ITEMS = 3
MIN_SECONDS = 5.0
# The rate is that of the last RATE_WINDOW seconds (or a little more), so an early slow or fast
# spell stops counting; sampled at most once per SAMPLE_SECONDS.
RATE_WINDOW = 60.0
SAMPLE_SECONDS = 1.0


class Rate:
    """Items per second over a recent window, from the first item's end; None until known."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.samples: deque[tuple[float, int]] = deque()  # (time, items done), oldest first

    def restart(self) -> None:
        """The work proper starts (again): what came before is not measured."""
        self.samples.clear()

    def observe(self, done: int) -> None:
        now = self.clock()
        if self.samples and now - self.samples[-1][0] < SAMPLE_SECONDS:
            return
        self.samples.append((now, done))
        # Kept: the newest sample at least RATE_WINDOW old (the window's start) and those after.
        while len(self.samples) > 1 and now - self.samples[1][0] >= RATE_WINDOW:
            self.samples.popleft()

    def per_second(self, done: int) -> float | None:
        if not self.samples:
            return None
        now = self.clock()
        first_time, first_done = self.samples[0]
        if done - first_done < MIN_ITEMS or now - first_time < MIN_SECONDS:
            return None
        return (done - first_done) / (now - first_time)


class Progress:
    """Reports ``done of total`` with rate and ETA to Luigi's visualiser and the log.

    ``on_status`` / ``on_percent`` are the task's set_status_message / set_progress_percentage
    (None outside Luigi). Log lines come at most every ``every`` seconds, plus a final one.
    The rate and ETA are said once known (``Rate``), never guessed from start-up.
    """

    def __init__(
        self,
        label: str,
        *,
        every: float = 10.0,
        on_status: Callable[[str], None] | None = None,
        on_percent: Callable[[int], None] | None = None,
        on_tick: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.every = every
        self.on_status = on_status
        self.on_percent = on_percent
        self.on_tick = on_tick
        self.clock = clock
        self.started = clock()
        self.last_report = self.started
        self.total = 0
        self.done = 0
        self.counts: dict[str, int] = {}
        self.phase_name: str | None = None  # "loading model": said instead of a rate
        self.rate = Rate(clock)

    def start(self, total: int) -> None:
        self.total = total
        self._report(force=True)

    def advance(self, outcome: str, n: int = 1) -> None:
        self.done += n
        self.counts[outcome] = self.counts.get(outcome, 0) + n
        self.rate.observe(self.done)
        self._report()
        _maybe_kill(self.label)

    def add_total(self, n: int) -> None:
        self.total += n

    def phase(self, name: str | None) -> None:
        """Say what runs before the items move ("loading model"); None: the work proper
        starts, and the rate is measured from its first item on."""
        self.phase_name = name
        if name is None:
            self.rate.restart()
        self._report(force=True)

    def line(self) -> str:
        parts = [f"{self.label}: {self.done}/{self.total}"]
        if self.total:
            parts.append(f"{100 * self.done // self.total}%")
        if self.phase_name:
            parts.append(self.phase_name)
        elif (rate := self.rate.per_second(self.done)) is not None:
            parts.append(f"{rate:.1f}/s")
            if self.total > self.done:
                parts.append(f"ETA {(self.total - self.done) / rate:.0f}s")
        if self.counts:
            parts.append(" ".join(f"{k}={v}" for k, v in sorted(self.counts.items())))
        return " ".join(parts)

    def finish(self) -> None:
        """The last report of a run: 100 % and the final counts in the visualiser."""
        if self.done:
            self._report(force=True, final=True)

    def _report(self, force: bool = False, final: bool = False) -> None:
        # Throttled: a status update is a call to luigid, and a log line per item is noise.
        now = self.clock()
        if not force and now - self.last_report < self.every:
            return
        self.last_report = now
        line = self.line()
        if self.on_percent and self.total:
            self.on_percent(min(100, 100 * self.done // self.total))
        if self.on_status:
            self.on_status(line)
        if self.on_tick:
            self.on_tick()
        if not force or final:
            log.info(line)
