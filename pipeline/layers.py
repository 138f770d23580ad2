"""The layers of the code, lowest first: a module imports only from its own layer or one below.

Each layer names modules and packages (a package stands for every module under it; the
longest name that fits a module places it). ``tests/test_import_graph.py`` reads every
module of ``pipeline/`` and ``targets/`` and fails on an import that runs up this table,
function-local imports included. Plain data: nothing here imports anything.

Within the stages layer a stage package may use another's libraries (backfill asks extract's
readers which formats it can read), but never imports the ``stage`` module of a stage after
it in the pipeline's order (the order ``pipeline.assembly`` registers): a stage's output is
read through the store by whoever comes later.
"""

from __future__ import annotations

# Each layer: (name, what it holds). Order is the rule.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Facts and small tools every part uses; they know no store and no stage.
    ("foundation", (
        "pipeline.clock", "pipeline.collector", "pipeline.config", "pipeline.counters",
        "pipeline.errors", "pipeline.failures", "pipeline.file_locks", "pipeline.fingerprints", "pipeline.html_text",
        "pipeline.ids", "pipeline.layers", "pipeline.seals", "pipeline.stop_signals", "pipeline.text_validity",
        "pipeline.version",
    )),
    # What the outside world says: regulations.gov, the Federal Register, the mirror, HTTP.
    ("sources", ("pipeline.sources",)),
    # The state DB's tables and queries, the blob store, the migrations.
    ("store", ("pipeline.store",)),
    # How a stage runs as a Luigi task and says it is done (its targets with it); it names
    # no stage: the assembly hands it the stages, the discovery task and the runtime.
    ("engine", ("pipeline.engine", "targets")),
    # One package per stage (discovery, which makes the dockets, with them).
    ("stages", (
        "pipeline.discover", "pipeline.fetch", "pipeline.backfill", "pipeline.extract",
        "pipeline.ocr", "pipeline.index", "pipeline.campaigns", "pipeline.organisations",
        "pipeline.lineage", "pipeline.topics", "pipeline.sections", "pipeline.positions",
    )),
    # The pipeline put together: the stages registered in order (the one stage list), and
    # the process's runtime, which opens every store a stage uses (the index DB, the index
    # stage's own, too: so it sits above the stages).
    ("assembly", ("pipeline.assembly", "pipeline.runtime")),
    # The queries behind the pages and the commands; the warm search service answers the
    # command's and the pages' searches (it opens the runtime), though it lives in index/.
    ("read side", ("pipeline.reading", "pipeline.index.search_service")),
    # What people run: the operator commands and the web pages.
    ("ops, web", ("pipeline.ops", "pipeline.web")),
    # Luigi's entry: the task classes users name (``luigi --module pipeline IndexAll``).
    ("entry", ("pipeline.tasks", "pipeline")),
)

# A top-level package named here stands for its ``__init__`` alone: its modules are placed
# by their own entries (every module of pipeline/ must be).
ROOTS = ("pipeline",)


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the layer that holds ``module`` (None: no layer names it)."""
    best, found = -1, None
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            fits = module == name or (module.startswith(name + ".") and name not in ROOTS)
            if fits and len(name) > best:
                best, found = len(name), index
    return found
