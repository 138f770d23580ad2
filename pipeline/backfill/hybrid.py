"""Backfill's hybrid source (``source = mirror``, ``mirror_fallback = true`` and an API key):
details and files from the mirror, and from the API what the mirror does not hold yet.

The mirror lags regulations.gov by hours to days. Without a key, an item the mirror lacks
waits to retry (``NotMirroredYet``: transient); with one, its detail or file is taken from
the API at once, within the run's request budget (``BudgetSpent`` stops the stage cleanly,
and the rest waits for the next run). A file the mirror marked ``_UNAVAILABLE`` stays gone:
the API is asked only for what the mirror has not tried yet.

The mirror side reads on backfill's pool (``mirror_concurrency``); the API side is paced and
budgeted per key and is asked only from the stage's own thread: a reader thread that finds
an item or file the mirror lacks raises ``ReadInStageThread``, and the stage reads that
item (or file) again itself, in order (``pipeline.backfill.stage``).
"""

from __future__ import annotations

import threading
from dataclasses import replace

from pipeline.backfill.sources import ApiSource, FileRef, MirrorSource, ReadInStageThread
from pipeline.engine.stage import StageResult
from pipeline.errors import NotMirroredYet
from pipeline.store.models import Item


class HybridSource:
    def __init__(self, mirror: MirrorSource, api: ApiSource) -> None:
        self.mirror, self.api = mirror, api
        self.concurrency = mirror.concurrency
        self.record_batch = 1  # what it reads may be the API's: each item recorded when decided
        self._stage_thread = threading.get_ident()  # made in the stage's thread: the API's only one
        self._from_api: set[str] = set()  # items whose detail came from the API

    def expect(self, todo: list[Item]) -> None:
        self.mirror.expect(todo)

    def record_for(self, item: Item) -> str | None:
        return self.mirror.record_for(item)

    def release(self) -> None:
        self.mirror.release()

    def detail(self, item: Item, record: str | None = None) -> dict:
        try:
            return self.mirror.detail(item, record)
        except NotMirroredYet:
            self._in_stage_thread(item.key)
            self._from_api.add(item.key)
            return self.api.detail(item)

    def _in_stage_thread(self, what: str) -> None:
        if threading.get_ident() != self._stage_thread:
            raise ReadInStageThread(f"{what}: from the API, in the stage's thread")

    def files(self, item: Item, body: dict, preference: list[str]) -> list[FileRef]:
        if item.key in self._from_api:
            return self.api.files(item, body, preference)
        by_name = {ref.filename: ref for ref in self.api.files(item, body, preference)}
        refs = self.mirror.files(item, body, preference)
        # A declared file the mirror does not hold (and never marked gone): its API URL.
        return [replace(ref, url=by_name[ref.filename].url)
                if ref.mirror_key is None and not ref.tombstoned and ref.filename in by_name else ref
                for ref in refs]

    def lists_attachments(self, item: Item, body: dict, refs: list[FileRef]) -> bool:
        source = self.api if item.key in self._from_api else self.mirror
        return source.lists_attachments(item, body, refs)

    def fetch_file(self, ref: FileRef, blobs, max_bytes: int, data_dir):
        if ref.mirror_key is None and not ref.tombstoned and ref.url:
            self._in_stage_thread(ref.filename)
            return self.api.fetch_file(ref, blobs, max_bytes, data_dir)
        return self.mirror.fetch_file(ref, blobs, max_bytes, data_dir)

    def add_calls(self, result: StageResult) -> None:
        self.api.add_calls(result)

