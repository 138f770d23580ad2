"""A run's bulk judgements, read once per store for every wrapper of the run.

``IndexAll`` judges the index and each follow-on stage (campaigns, organisations, ...): one
wrapper each, and each wrapper's judgement is a statement over every known docket. The first
wrapper asked reads every stage of its run at once (``markers.judge_together``: one
state-DB statement whatever the number of stages, one read of another database where a
store's markers live) and keeps the verdicts for the run; the others take theirs from here.

Kept per invocation, per store and per terms (the named dockets, the freshness window, how
many finished dockets to name), and per process (a forked worker reads afresh: a sibling's
writes are not seen here). Good only while this process has written nothing a docket's
completion is judged by (``counters.docket_writes``): a run that wrote a marker since is
read again, so a verdict kept from before it neither hides work (a stale "done") nor makes
Luigi redo what the run just did (a stale "not done").
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from pipeline.counters import docket_writes
from pipeline.engine.invocation import Invocation
from pipeline.engine.markers import Judged, MarkerStore, judge_together


@dataclass
class _Kept:
    """The verdicts read under one set of terms: (completion, version) -> Judged."""

    writes: int = -1  # ``docket_writes()`` when they were read
    judged: dict[tuple, Judged] = field(default_factory=dict)


def judged(invocation: Invocation, store_key: str, asked: list[tuple[MarkerStore, int]],
           docket_ids: list[str] | None, *, window_start: str, now: str, sample: int) -> Judged:
    """The verdict of ``asked[0]`` (a marker store, the version its wrapper asks), read with
    those of the rest of ``asked`` (the run's other stages) when this run has none kept.
    ``now`` is that of the first read: the stages are judged at one instant."""
    terms = ("judged together", store_key, os.getpid(),
             None if docket_ids is None else tuple(docket_ids), window_start, sample)
    kept = invocation.read_shared(terms, _Kept)
    if kept is None:  # no wrapper scheduled dockets in this run: nothing is kept
        return judge_together(asked[:1], docket_ids, window_start=window_start, now=now, sample=sample)[0]
    wanted = _key(*asked[0])
    if kept.writes != docket_writes():  # this process wrote since: every verdict is read again
        kept.judged.clear()
    if wanted not in kept.judged:
        read = judge_together(asked, docket_ids, window_start=window_start, now=now, sample=sample)
        kept.judged.update((_key(*ask), verdict) for ask, verdict in zip(asked, read, strict=True))
        kept.writes = docket_writes()  # after the read: what it wrote itself (plain terms) judged
    return kept.judged[wanted]


def _key(store: MarkerStore, version: int) -> tuple:
    return (store.where, store.completion, version)

