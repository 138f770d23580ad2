"""The index stage's markers, kept in the index DB (``index_docket_state``, one row per
collection) beside the chunks they vouch for: a wiped index DB is re-indexed on the next
run, never trusted silently. The same ``MarkerStore`` protocol as the state DB's.

A marker vouches for its input stage's output (extract's) *under one chunker and embedder*:
``expected_input`` folds that configuration in, so a new one invalidates the marker of a
sealed docket too (the sealed rule alone ignores inputs).
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.counters import COMPLETION_READS_INDEX, count_completion_read
from pipeline.store import markers
from pipeline.store.markers import Probe, vouches
from pipeline.store.models import Docket


class IndexMarkers:
    where = "index DB"

    def __init__(self, stage: str, runtime, invocation, *, input_stage: str,
                 collections: tuple[str, ...], probe_collection: str,
                 expected_input: Callable[[str | None], str | None]) -> None:
        self.stage, self.runtime, self.invocation = stage, runtime, invocation
        self.input_stage = input_stage
        self.collections = collections  # a marker row in each, written and cleared together
        self.probe_collection = probe_collection  # the one the targets read
        self.expected_input = expected_input

    @property
    def _shared_key(self) -> tuple[str, str]:
        return ("index markers", self.probe_collection)

    def probe(self, docket_id: str) -> Probe:
        """The docket and the input's output from the state DB, the marker from the index DB."""
        state_side = markers.probe(docket_id, "", self.input_stage)
        if not state_side.docket_exists:
            return state_side
        return self._with_marker(state_side.docket_sealed_at, state_side.last_pull_at,
                                 state_side.upstream_output, state_side.retry_due_at,
                                 self._marker(docket_id))

    def probes(self, docket_ids: list[str] | None = None) -> dict[str, Probe]:
        """Every docket's probe: one state-DB query and one index-DB query (the markers of
        every docket, kept for the rest of the invocation as ``probe`` reads them)."""
        every = self._every_marker()
        if every is None:
            count_completion_read(COMPLETION_READS_INDEX)
            every = self.runtime.index_db().docket_markers(self.probe_collection)
        found = {docket: self._with_marker(sealed_at, last_pull_at, output, retry_due_at,
                                           every.get(docket))
                 for docket, sealed_at, last_pull_at, _, _, _, output, retry_due_at
                 in markers.probe_rows("", self.input_stage, docket_ids)}
        if docket_ids is None:
            return found
        return {d: found.get(d, Probe(docket_exists=False)) for d in docket_ids}

    def _with_marker(self, sealed_at: str | None, last_pull_at: str | None, output: str | None,
                     retry_due_at: str | None, marker) -> Probe:
        """The docket's probe (its state-DB facts, the input stage's ``output``) with this
        store's marker, when it vouches for the input expected now: this chunker and
        embedder over that output. Made field by field: it runs once per known docket."""
        expected = self.expected_input(output)
        if marker is None or marker.input_fingerprint != expected:
            return Probe(True, sealed_at, last_pull_at, None, None, None, expected, retry_due_at)
        return Probe(True, sealed_at, last_pull_at, marker.version, marker.sealed_at, expected,
                     expected, retry_due_at)

    def _marker(self, docket_id: str):
        # A scheduler pass over a thousand sealed dockets costs one index-DB read, not a
        # thousand: every docket's marker, once per invocation (re-read after this process
        # writes one). A wiped index DB is still noticed by the next invocation.
        every = self._every_marker()
        if every is not None:
            return every.get(docket_id)
        count_completion_read(COMPLETION_READS_INDEX)
        return self.runtime.index_db().docket_marker(self.probe_collection, docket_id)

    def _every_marker(self) -> dict | None:
        """Every docket's marker, read once per invocation; None for a task asked alone."""
        if self.invocation is None:
            return None
        index_db = self.runtime.index_db()

        def every_marker():
            count_completion_read(COMPLETION_READS_INDEX)
            return index_db.docket_markers(self.probe_collection)

        return self.invocation.read_shared(self._shared_key, every_marker)

    def input_fingerprint(self, docket_id: str) -> str | None:
        return self.expected_input(markers.output_fingerprint(docket_id, self.input_stage))

    def hold_output(self, docket_id: str) -> str | None:
        return None  # the index's output is read by no stage

    def restore_output(self, docket_id: str, kept_output: str | None) -> None:
        pass

    def write(self, docket_id: str, *, version: int, sealed_at: str | None,
              input_fingerprint: str | None, run_id: str, kept_output: str | None = None) -> None:
        index_db = self.runtime.index_db()
        for collection in self.collections:
            index_db.write_docket_marker(collection, docket_id, sealed_at, version, input_fingerprint)
        self._forget()

    def clear(self, docket_id: str) -> None:
        index_db = self.runtime.index_db()
        for collection in self.collections:
            index_db.clear_docket_marker(collection, docket_id)
        self._forget()

    def _forget(self) -> None:
        if self.invocation is not None:
            self.invocation.forget(self._shared_key)  # this process re-reads what it just wrote

    def max_version(self) -> int:
        return self.runtime.index_db().max_marker_version(self.probe_collection)

    def claims(self, dockets: dict[str, Docket]) -> list[str] | None:
        """Markers that vouch for the input's current output under this chunker and embedder.
        A seal alone does not make one say done: IndexDocket ignores a marker for another
        input even under the docket's seal."""
        index_db = self.runtime.existing_index_db()
        if index_db is None:
            return None
        outputs = {d: m.output_fingerprint for d, m in markers.stage_markers(self.input_stage).items()}
        claimed = set()
        for collection in self.collections:
            for docket, marker in index_db.docket_markers(collection).items():
                if docket in outputs and vouches(marker.input_fingerprint,
                                                 self.expected_input(outputs[docket])):
                    claimed.add(docket)
        return sorted(claimed)
