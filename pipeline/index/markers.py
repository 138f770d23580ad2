"""The index stage's markers, kept in the index DB (``index_docket_state``, one row per
collection) beside the chunks they vouch for: a wiped index DB is re-indexed on the next
run, never trusted silently. The same ``MarkerStore`` protocol as the state DB's.

A marker vouches for its input stage's output (extract's) under the stage's terms (the
chunker, the embedder, the caps: ``registry.completion``). An index marker keeps that input
as a digest of the two, and beside it the two in plain terms (``vouched_output``,
``vouched_under``), so a wrapper compares one checksum per database when every docket is
done. The rule is ``pipeline.engine.completion``'s, as for every store.
"""

from __future__ import annotations

import dataclasses
import heapq
import os

from pipeline.counters import COMPLETION_READS_INDEX, count_completion_read
from pipeline.engine import markers
from pipeline.engine.completion import VERIFY_NOW, VERIFY_WINDOW, Completion
from pipeline.engine.markers import Judged, Probe
from pipeline.fingerprints import RECORD, digest, digest_each, postgres_md5
from pipeline.index.database import DocketMarker
from pipeline.store.models import Docket


class IndexMarkers:
    where = "index DB"

    def __init__(self, completion: Completion, runtime, invocation, *,
                 collections: tuple[str, ...], probe_collection: str) -> None:
        # The index's output is read by no stage: there is none to keep, or to hold.
        self.completion = dataclasses.replace(completion, keeps_output=False)
        self.stage, self.input_stage = completion.stage, completion.input_stage
        self.runtime, self.invocation = runtime, invocation
        self.collections = collections  # a marker row in each, written and cleared together
        self.probe_collection = probe_collection  # the one the targets read
        self._inputs: dict[str, str | None] = {}  # docket -> the output input_fingerprint read

    def expected_input(self, output: str | None) -> str | None:
        """The input a marker records for the input stage's ``output`` under the terms."""
        return None if output is None else digest(output, self.completion.terms, sep=RECORD)

    def expected_inputs(self, outputs: list) -> list:
        """``expected_input`` for a wrapper's 100,000 dockets at once."""
        return digest_each(outputs, self.completion.terms, sep=RECORD)

    def vouched_under(self) -> str:
        """The terms a marker's plain ``vouched_under`` must equal to vouch now."""
        return self.completion.terms

    @property
    def _shared_key(self) -> tuple[str, str, int]:
        # Per process: with --workers 2 each task runs in a process forked from the one that
        # judged, and inherits its kept markers; a sibling that indexed a docket since wrote
        # a new marker that copy never hears of (its forget is in the sibling). Keyed by the
        # process, a forked worker reads the index DB afresh instead of the judge's old row.
        return ("index markers", self.probe_collection, os.getpid())

    def probe(self, docket_id: str) -> Probe:
        """The docket and the input's output from the state DB, the marker from the index DB."""
        state_side = markers.probe(docket_id, "", self.input_stage)
        if not state_side.docket_exists:
            return state_side
        return self._with_marker(state_side.docket_sealed_at, state_side.last_pull_at,
                                 state_side.expected_input, state_side.retry_due_at,
                                 self._marker(docket_id))

    def judge(self, docket_ids: list[str] | None, *, version: int, window_start: str, now: str,
              sample: int) -> Judged:
        return markers.judge_together([(self, version)], docket_ids, window_start=window_start,
                                      now=now, sample=sample)[0]

    def state_ask(self, version: int) -> markers.LinesAsk:
        return markers.LinesAsk(self.input_stage)

    def judged_from(self, lines: str | None, docket_ids: list[str] | None, *, version: int,
                    window_start: str, now: str, sample: int) -> Judged:
        """The completion rule over every docket: the state DB's side read already (``lines``:
        each docket's seal and the input's output, None where the docket row already says
        there is work; one statement for every store of a wrapper's run) and one index-DB
        query (over the known set: a checksum of the markers at ``version`` or later; only
        when it differs from the state DB's, every such marker). A docket is done when its
        marker vouches for the input expected now, under the docket's seal when it has one.
        (A forgotten docket's marker, kept in the index DB, makes the checksums differ: such a
        store is judged docket by docket, as before the checksum.)"""
        if docket_ids is None:
            # One checksum per database first: when every known docket's marker vouches for
            # its input, nothing is made per docket at all.
            count_completion_read(COMPLETION_READS_INDEX)
            theirs = self.runtime.index_db().vouching_checksum(self.probe_collection, version,
                                                               self.vouched_under())
            if lines is None or postgres_md5(lines) == theirs:
                self._keep_markers_of({}, [])
                return Judged({}, lines.count(markers.LINE_SEP) + 1 if lines else 0,
                              markers.first_of(lines, sample))
        rows = markers.input_rows_of(lines)  # some docket has work, or named: judged one by one
        count_completion_read(COMPLETION_READS_INDEX)
        current = self.runtime.index_db().current_markers(self.probe_collection, version,
                                                          self.vouched_under())
        # Set operations in C, no Python step per finished docket: a sealed docket matches a
        # marker for its expected input under its own seal, an open one (seal None) under any.
        ids, seals, outputs = zip(*rows, strict=True) if rows else ((), (), ())
        expected = set(zip(ids, seals, self.expected_inputs(outputs), strict=True))
        with_work = expected.difference((d, s, fp) for d, s, _, fp, _ in current)
        if any(s is None for _, s, _ in with_work):  # open dockets whose marker has a seal
            with_work -= {(d, None, fp) for d, _, _, fp, _ in current}
        pending = {d: s for d, s, _ in with_work}  # a None input is in no marker: work
        self._fill_plain_terms(current, pending, rows)
        if docket_ids is not None:  # a named docket without a row: all to do
            known = set(ids)
            pending.update((d, None) for d in docket_ids if d not in known)
        finished = zip(ids, seals, strict=True)
        if pending:
            finished = (row for row in finished if row[0] not in pending)
        first = heapq.nsmallest(sample, finished)
        self._keep_markers_of(pending, current)
        return Judged(dict(sorted(pending.items())), len(expected) - len(with_work), first)

    def _fill_plain_terms(self, current: list[tuple], pending: dict, rows: list[tuple]) -> None:
        """Markers written before the plain terms (an upgraded index DB) that were just found
        vouching get them, once, so the next run's checksums can agree: an upgrade never makes
        the wrapper judge docket by docket for good (sealed dockets' markers are never rewritten)."""
        lacking = {d for d, _, _, _, has_terms in current if not has_terms and d not in pending}
        if not lacking:
            return
        fill = [(d, self.expected_input(output), output) for d, _, output in rows
                if d in lacking and output is not None]
        if fill:
            self.runtime.index_db().fill_vouched(fill, self.vouched_under())

    def _keep_markers_of(self, pending: dict[str, str | None], current: list[tuple]) -> None:
        """The markers of the dockets with work, for their tasks' probes in this invocation
        (a docket without one here has no current marker)."""
        if self.invocation is None:
            return
        kept = {d: DocketMarker(self.probe_collection, d, s, v, fp, None)
                for d, s, v, fp, _ in current if d in pending}
        kept.update((d, None) for d in pending if d not in kept)
        self.invocation.forget(self._shared_key)
        self.invocation.read_shared(self._shared_key, lambda: kept)

    def _with_marker(self, sealed_at: str | None, last_pull_at: str | None, output: str | None,
                     retry_due_at: str | None, marker) -> Probe:
        """The docket's probe (its state-DB facts, the input stage's ``output``) with this
        store's marker and the input expected now (the terms over that output)."""
        expected = self.expected_input(output)
        if marker is None:
            return Probe(True, sealed_at, last_pull_at, None, None, None, expected, retry_due_at)
        return Probe(True, sealed_at, last_pull_at, marker.version, marker.sealed_at,
                     marker.input_fingerprint, expected, retry_due_at)

    def _marker(self, docket_id: str):
        # A wrapper that judged this docket in this process kept its marker for the invocation
        # (re-read after this process writes one); any other docket reads its own row.
        kept = self._kept_markers()
        if kept is not None and docket_id in kept:
            return kept[docket_id]
        count_completion_read(COMPLETION_READS_INDEX)
        return self.runtime.index_db().docket_marker(self.probe_collection, docket_id)

    def _kept_markers(self) -> dict | None:
        if self.invocation is None:
            return None
        return self.invocation.read_shared(self._shared_key, dict)

    def input_fingerprint(self, docket_id: str) -> str | None:
        output = markers.output_fingerprint(docket_id, self.input_stage)
        self._inputs[docket_id] = output  # what a marker written for it vouches for
        return self.expected_input(output)

    def _vouched(self, docket_id: str, input_fingerprint: str | None) -> tuple[str, str] | None:
        """(the output, the configuration) ``input_fingerprint`` digests, in plain terms."""
        if input_fingerprint is None:
            return None
        output = self._inputs.pop(docket_id, None)
        if output is None or self.expected_input(output) != input_fingerprint:
            output = markers.output_fingerprint(docket_id, self.input_stage)
        if output is None or self.expected_input(output) != input_fingerprint:
            return None  # the input changed since: judged by its digest, as an older marker
        return output, self.vouched_under()

    def hold_output(self, docket_id: str) -> str | None:
        return None  # the index's output is read by no stage

    def restore_output(self, docket_id: str, kept_output: str | None) -> None:
        pass

    def write(self, docket_id: str, *, version: int, sealed_at: str | None,
              input_fingerprint: str | None, run_id: str, kept_output: str | None = None) -> None:
        index_db = self.runtime.index_db()
        vouched = self._vouched(docket_id, input_fingerprint)
        for collection in self.collections:
            index_db.write_docket_marker(collection, docket_id, sealed_at, version, input_fingerprint,
                                         vouched)
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
        """The dockets the rule calls done at the base version, whatever the clock says
        (verify sorts out retries and windows itself)."""
        if self.runtime.existing_index_db() is None:
            return None
        judged = self.judge(None, version=1, window_start=VERIFY_WINDOW, now=VERIFY_NOW,
                            sample=max(len(dockets), 1))
        return [d for d, _ in judged.done_sample if d in dockets]
