"""Process-wide I/O counters: the work a run did, which tests and benchmarks assert on.

Every place that does real I/O (an API call, a PDF opened, a ``combined.md`` read, an
embed call, a blob read or write, a state row written) increments a named counter here,
so "a no-op run is a no-op" is something a test can count instead of time.
"""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager

# The names benchmarks and tests rely on; anything else is free-form (e.g. "api.comments").
API_CALLS = "api_calls"
PDF_OPENS = "pdf_opens"
COMBINED_READS = "combined_reads"
EMBED_CALLS = "embed_calls"
EMBEDDED_TEXTS = "embedded_texts"  # texts sent to an embedder (a call embeds a batch of them)
ROWS_WRITTEN = "rows_written"
BLOB_READS = "blob_reads"
BLOB_WRITES = "blob_writes"
S3_LIST = "s3_list"
S3_GET = "s3_get"
STAGE_CALLS = "stage_calls"
TEXT_RANKED = "text_ranked"  # chunks the full-text half of search ranked by cover density
MODEL_EXPORTS = "model_exports"  # files made in the model cache (MiniLM's ONNX export)
# Every statement sent to the state DB / the index DB, and those of them that read item-level
# rows (items, attachments, per-item states): what a no-op must not grow with.
STATE_QUERIES = "state_queries"
INDEX_QUERIES = "index_queries"
ITEM_READS = "item_reads"
ITEM_STATE_WRITES = "item_state_writes"  # statements that changed per-item state rows
# Reads of docket completion facts (probes, markers), per store: a wrapper's are one each.
COMPLETION_READS_STATE = "completion_reads.state"
COMPLETION_READS_INDEX = "completion_reads.index"
ITEM_TABLES = ('"item"', '"item_state"', '"attachment"', "index_state ", "index_state\n")


def count_query(sql: str, counter: str) -> None:
    """Count a write of per-item state rows (always: a stage run keeps its recorded output
    when it wrote none) and, while ``counting_queries``, the statement on ``counter`` and
    as an item read when it reads item rows."""
    head = sql.lstrip()[:6].upper()
    if head in ("INSERT", "UPDATE", "DELETE") and '"item_state"' in sql:
        counters.incr(ITEM_STATE_WRITES)
    if not counters.queries:
        return
    counters.incr(counter)
    if head in ("SELECT", "WITH") and any(table in sql for table in ITEM_TABLES):
        counters.incr(ITEM_READS)


_docket_writes = [0]
_docket_writes_lock = threading.Lock()
# Where a statement writes a table a docket's completion is judged by: the docket rows and the
# markers of either database (quotes taken out; a few other writes match too, which costs a read).
_JUDGED_TABLES = ("into docket", "update docket", "from docket", "index_docket_state")


def note_write(sql: str, rowcount: int) -> None:
    """After a statement ran (``rowcount`` rows changed; -1: not said): count it in
    ``docket_writes`` when it changed a table a docket's completion is judged by."""
    if rowcount == 0 or sql.lstrip()[:6].upper() not in ("INSERT", "UPDATE", "DELETE"):
        return
    plain = sql.replace('"', "").lower()
    if any(table in plain for table in _JUDGED_TABLES):
        with _docket_writes_lock:
            _docket_writes[0] += 1


def docket_writes() -> int:
    """How many statements this process sent, ever, that may have changed what a docket's
    completion is judged by (its row, a marker, in either database; some that did not, too:
    erring that way costs a read). Never reset, unlike the counters: a judgement kept for a
    run is good while this is what it was when the judgement was read."""
    with _docket_writes_lock:
        return _docket_writes[0]


def count_completion_read(counter: str) -> None:
    if counters.queries:
        counters.incr(counter)


class Counters:
    """A thread-safe bag of named integer counters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._peaks: dict[str, int] = {}
        # Statements are counted only when asked (benchmarks, the tests of what a no-op
        # reads): other tests assert that a no-op's counters are empty.
        self.queries = False

    @contextmanager
    def counting_queries(self):
        """Count every state-DB and index-DB statement, item reads and completion reads."""
        before, self.queries = self.queries, True
        try:
            yield
        finally:
            self.queries = before

    def incr(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def note_peak(self, name: str, n: int) -> None:
        """Keep the largest ``n`` seen under ``name`` (a batch's size: what a test asserts is
        bounded, where a count would only grow)."""
        with self._lock:
            self._peaks[name] = max(self._peaks.get(name, 0), n)

    @contextmanager
    def peaks(self):
        """Yield a dict that, on exit, holds the peaks noted inside the block."""
        with self._lock:
            before, self._peaks = self._peaks, {}
        seen: dict[str, int] = {}
        try:
            yield seen
        finally:
            with self._lock:
                seen.update(self._peaks)
                for name, n in before.items():
                    self._peaks[name] = max(self._peaks.get(name, 0), n)

    def get(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def merge(self, other: dict[str, int]) -> None:
        """Add counts reported by a worker process."""
        with self._lock:
            self._counts.update(other)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    @contextmanager
    def measure(self):
        """Yield a dict that, on exit, holds the counts added inside the block."""
        before = self.snapshot()
        delta: dict[str, int] = {}
        try:
            yield delta
        finally:
            after = self.snapshot()
            delta.update({k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)})


counters = Counters()
