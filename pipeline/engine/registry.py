"""The stages in pipeline order, and the questions the tasks, ``Redrive`` and ``docketeer
verify`` ask about the chain.

The order itself is the assembly's (``pipeline.assembly``: the one stage list, registered
here in order); the engine imports no stage. ``register`` adds a stage whose upstream is
known (a plug-in, a test's stage) after the others; ``unregister`` removes it. A process
that asks before the assembly was imported (a command that only opened the runtime) has the
pipeline's stages registered on its first question (``fill_with``: ``pipeline.runtime``
hands over the assembly's import).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pipeline.engine.completion import Completion, join_terms
from pipeline.engine.markers import MarkerStore
from pipeline.engine.stage import Stage

_stages: dict[str, Stage] = {}  # name -> declaration, in pipeline order
_fill: Callable[[], None] | None = None  # registers the pipeline's stages, on the first question


def fill_with(register_the_pipeline: Callable[[], None]) -> None:
    """Run ``register_the_pipeline`` before the registry answers (or takes) a stage next."""
    global _fill
    _fill = register_the_pipeline


def _filled() -> dict[str, Stage]:
    global _fill
    if _fill is not None:
        fill, _fill = _fill, None
        fill()
    return _stages


def register(stage: Stage) -> Stage:
    if stage.name in _filled():
        raise ValueError(f"stage {stage.name!r} is declared already")
    for read in (stage.upstream, *stage.reads):
        if read is not None and read not in _filled():
            raise ValueError(f"stage {stage.name!r} reads from unknown stage {read!r}")
    _stages[stage.name] = stage
    return stage


def unregister(name: str) -> None:
    readers = [s.name for s in _filled().values() if s.upstream == name or name in s.reads]
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
    return list(_filled().values())


def names() -> list[str]:
    return list(_filled())


def get(name: str) -> Stage:
    return _filled()[name]


def upstream_chain(stage: Stage) -> list[str]:
    """The stages ``stage`` reads from, directly or not, nearest first."""
    chain = []
    while stage.upstream is not None:
        stage = _filled()[stage.upstream]
        chain.append(stage.name)
    return chain


def downstream(name: str) -> list[Stage]:
    """The stages that read from ``name``, directly or not, in pipeline order."""
    return [s for s in _filled().values() if name in upstream_chain(s)]


def required_upstream(stage: Stage, settings) -> Stage | None:
    """The upstream task this stage's task requires: its upstream, or past an optional
    stage that is off (the index requires extract when OCR is off)."""
    upstream = _filled()[stage.upstream] if stage.upstream else None
    while upstream is not None and not upstream.enabled(settings):
        upstream = _filled()[upstream.upstream] if upstream.upstream else None
    return upstream


def required_stages(stage: Stage, settings) -> list[Stage]:
    """Every stage whose task this stage's task requires: its upstream (``required_upstream``)
    and each stage it declares it reads (``Stage.reads``) that is on under these settings."""
    required = [up] if (up := required_upstream(stage, settings)) is not None else []
    for name in stage.reads:
        read = _filled()[name]
        if read.enabled(settings) and read not in required:
            required.append(read)
    return required


def chain_of(stage: Stage, settings) -> set[str]:
    """The names of this stage and of every stage its task requires, however far up."""
    names, todo = set(), [stage]
    while todo:
        current = todo.pop()
        if current.name not in names:
            names.add(current.name)
            todo.extend(required_stages(current, settings))
    return names


def continuation(stopped: str, asked: set[str], settings) -> list[Stage]:
    """The stages that work on what a stopped stage got, in pipeline order: a spent budget
    stopped ``stopped`` for a docket, and these are the stages after it that a run asked
    for that docket (``asked``), with those between (their tasks require one another). Each
    requires ``stopped``'s task, directly or not: none runs on what it did not reach."""
    reaching = [chain_of(get(name), settings) for name in asked if stopped in chain_of(get(name), settings)]
    between = set().union(*reaching)
    return [s for s in stages() if s.name in between and s.name != stopped and stopped in chain_of(s, settings)]


def continued(stage: Stage, stopped: tuple[str, ...], settings) -> tuple[str, ...]:
    """Of the stages a spent budget stopped for a docket in a run, in the order they
    stopped (each in the continuation of the one before), those ``stage``'s task for it
    continues: up to the last one its task requires, directly or not. () when it requires
    none: its task is the usual one."""
    required = chain_of(stage, settings) - {stage.name}
    for end in range(len(stopped), 0, -1):
        if stopped[end - 1] in required:
            return stopped[:end]
    return ()


def input_stage(stage: Stage) -> str | None:
    """The stage whose output fingerprint is this stage's input: the one it declares, its
    upstream, or what that merges into (the index reads extract's output, which OCR writes
    into)."""
    name = stage.input or stage.upstream
    if name is None:
        return None
    upstream = _filled()[name]
    while upstream.merges_into_upstream:
        upstream = _filled()[upstream.upstream]
    return upstream.name


def feeding(stage: Stage) -> list[Stage]:
    """The stages whose output reaches this stage's input, earliest first: its input chain
    and the stages that merge into a stage of it (OCR into extract)."""
    chain, name = [], input_stage(stage)
    while name is not None:
        current = _filled()[name]
        merged = [s for s in _filled().values() if s.merges_into_upstream and s.upstream == name]
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
