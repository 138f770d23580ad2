"""The stages in pipeline order: the one place the order lives.

fetch -> backfill -> extract -> ocr (optional) -> index -> campaigns -> topics, and organisations
and lineage after backfill (they read the records' fields, not their text). Each stage package
declares its ``Stage``; this module lists them once, in order, and answers the questions the
tasks, ``Redrive`` and ``docketeer verify`` ask about the chain. ``register`` adds a stage whose
upstream is known (a plug-in, a test's stage) after the others; ``unregister`` removes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.backfill import stage as backfill
from pipeline.campaigns import stage as campaigns
from pipeline.engine.completion import Completion, join_terms
from pipeline.engine.markers import MarkerStore
from pipeline.engine.stage import Stage
from pipeline.extract import stage as extract
from pipeline.fetch import stage as fetch
from pipeline.index import stage as index
from pipeline.lineage import stage as lineage
from pipeline.ocr import stage as ocr
from pipeline.organisations import stage as organisations
from pipeline.topics import stage as topics

_stages: dict[str, Stage] = {}  # name -> declaration, in pipeline order


def register(stage: Stage) -> Stage:
    if stage.name in _stages:
        raise ValueError(f"stage {stage.name!r} is declared already")
    for read in (stage.upstream, *stage.reads):
        if read is not None and read not in _stages:
            raise ValueError(f"stage {stage.name!r} reads from unknown stage {read!r}")
    _stages[stage.name] = stage
    return stage


def unregister(name: str) -> None:
    readers = [s.name for s in _stages.values() if s.upstream == name or name in s.reads]
    if readers:
        raise ValueError(f"stage {name!r} is read by {', '.join(readers)}")
    del _stages[name]


@contextmanager
def added(*stages: Stage) -> Iterator[None]:
    """The stages registered for the block (a test's stage), then removed again."""
    for stage in stages:
        register(stage)
    try:
        yield
    finally:
        for stage in reversed(stages):
            unregister(stage.name)


def stages() -> list[Stage]:
    return list(_stages.values())


def names() -> list[str]:
    return list(_stages)


def get(name: str) -> Stage:
    return _stages[name]


def upstream_chain(stage: Stage) -> list[str]:
    """The stages ``stage`` reads from, directly or not, nearest first."""
    chain = []
    while stage.upstream is not None:
        stage = _stages[stage.upstream]
        chain.append(stage.name)
    return chain


def downstream(name: str) -> list[Stage]:
    """The stages that read from ``name``, directly or not, in pipeline order."""
    return [s for s in _stages.values() if name in upstream_chain(s)]


def required_upstream(stage: Stage, settings) -> Stage | None:
    """The upstream task this stage's task requires: its upstream, or past an optional
    stage that is off (the index requires extract when OCR is off)."""
    upstream = _stages[stage.upstream] if stage.upstream else None
    while upstream is not None and not upstream.enabled(settings):
        upstream = _stages[upstream.upstream] if upstream.upstream else None
    return upstream


def required_stages(stage: Stage, settings) -> list[Stage]:
    """Every stage whose task this stage's task requires: its upstream (``required_upstream``)
    and each stage it declares it reads (``Stage.reads``) that is on under these settings."""
    required = [up] if (up := required_upstream(stage, settings)) is not None else []
    for name in stage.reads:
        read = _stages[name]
        if read.enabled(settings) and read not in required:
            required.append(read)
    return required


def input_stage(stage: Stage) -> str | None:
    """The stage whose output fingerprint is this stage's input: the one it declares, its
    upstream, or what that merges into (the index reads extract's output, which OCR writes
    into)."""
    name = stage.input or stage.upstream
    if name is None:
        return None
    upstream = _stages[name]
    while upstream.merges_into_upstream:
        upstream = _stages[upstream.upstream]
    return upstream.name


def feeding(stage: Stage) -> list[Stage]:
    """The stages whose output reaches this stage's input, earliest first: its input chain
    and the stages that merge into a stage of it (OCR into extract)."""
    chain, name = [], input_stage(stage)
    while name is not None:
        current = _stages[name]
        merged = [s for s in _stages.values() if s.merges_into_upstream and s.upstream == name]
        chain[:0] = [current, *merged]
        name = input_stage(current)
    return chain


def completion(stage: Stage, settings) -> Completion:
    """What the stage's marker vouches for under these settings: the one definition the
    targets, the wrappers and verify judge "done" by (``pipeline.engine.completion``)."""
    terms = join_terms(s.terms(settings) for s in [*feeding(stage), stage])
    return Completion(stage.name, input_stage(stage), terms, after_fetch=stage.upstream is not None)


def marker_store(stage: Stage, runtime, invocation=None) -> MarkerStore:
    return stage.markers(completion(stage, runtime.settings), runtime, invocation)


for _declared in (fetch, backfill, extract, ocr, index, campaigns, organisations, lineage, topics):
    register(_declared.DECLARATION)
