"""What every stage function receives and returns; stages are plain functions, not tasks."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from pipeline.clock import utcnow
from pipeline.errors import BudgetSpent
from pipeline.progress import Progress


@dataclass
class StageResult:
    counts: dict[str, int] = field(default_factory=dict)
    clean: bool = True  # every item reached a terminal state without a run-level error
    budget_spent: bool = False
    message: str = ""

    @property
    def complete(self) -> bool:
        """Only a complete result may be vouched for by a marker."""
        return self.clean and not self.budget_spent

    def add(self, outcome: str, n: int = 1) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + n


@dataclass
class StageContext:
    """The stores and run facts a stage function works with."""

    runtime: object  # pipeline.runtime.Runtime (kept loose so stages stay importable alone)
    run_id: str
    force: bool = False
    progress: Progress = field(default_factory=lambda: Progress("stage"))
    clock: Callable[[], datetime] = utcnow
    deadline: float | None = None  # time.monotonic() after which the run stops
    extras: dict = field(default_factory=dict)

    @property
    def settings(self):
        # A run may carry its own budgets (--budget-seconds) on top of the configured ones.
        return self.extras.get("settings") or self.runtime.settings

    @property
    def blobs(self):
        return self.runtime.blobs

    def check_time(self) -> None:
        """Call at item boundaries: stop cleanly once the time budget is spent."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise BudgetSpent("time budget spent")
