"""Progress of a long stage: percentage and status for the visualiser, periodic log lines."""

from __future__ import annotations

import logging
import os
import signal
import time
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


class Progress:
    """Reports ``done of total`` with rate and ETA to Luigi's visualiser and the log.

    ``on_status`` / ``on_percent`` are the task's set_status_message / set_progress_percentage
    (None outside Luigi). Log lines come at most every ``every`` seconds, plus a final one.
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
        # The rate counts from here: time spent before the work proper (loading a model)
        # would otherwise make the first ETA hours long.
        self.rate_since, self.rate_base = self.started, 0

    def start(self, total: int) -> None:
        self.total = total
        self._report(force=True)

    def advance(self, outcome: str, n: int = 1) -> None:
        self.done += n
        self.counts[outcome] = self.counts.get(outcome, 0) + n
        self._report()
        _maybe_kill(self.label)

    def add_total(self, n: int) -> None:
        self.total += n

    def phase(self, name: str | None) -> None:
        """Say what runs before the items move ("loading model"); None: the work proper
        starts, and the rate is measured from now."""
        self.phase_name = name
        if name is None:
            self.rate_since, self.rate_base = self.clock(), self.done
        self._report(force=True)

    def line(self) -> str:
        parts = [f"{self.label}: {self.done}/{self.total}"]
        if self.total:
            parts.append(f"{100 * self.done // self.total}%")
        if self.phase_name:
            parts.append(self.phase_name)
        elif self.done > self.rate_base:  # a rate, and so an ETA, once items have moved
            rate = (self.done - self.rate_base) / max(self.clock() - self.rate_since, 1e-9)
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
