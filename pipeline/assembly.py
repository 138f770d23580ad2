"""The pipeline put together: its stages, registered with the engine in pipeline order, and
discovery before them. This is the one stage list.

fetch -> backfill -> extract -> ocr (optional) -> index -> campaigns -> topics -> sections -> positions, and
organisations and lineage after backfill (they read the records' fields, not their text).
Each stage package declares its ``Stage``; ``STAGES`` lists them here once, in order, and
the engine's registry (``pipeline.engine.registry``) answers the questions about the chain
from it. A new stage is one package and one line here (and its two Luigi tasks written out
in ``pipeline/tasks.py``, which a test asks for).
"""

from __future__ import annotations

from pipeline.backfill import stage as backfill
from pipeline.campaigns import stage as campaigns
from pipeline.discover.task import DiscoverDockets
from pipeline.engine import registry
from pipeline.engine.stage import Stage
from pipeline.engine.wrapper import DocketWrapper
from pipeline.extract import stage as extract
from pipeline.fetch import stage as fetch
from pipeline.index import stage as index
from pipeline.lineage import stage as lineage
from pipeline.ocr import stage as ocr
from pipeline.organisations import stage as organisations
from pipeline.positions import stage as positions
from pipeline.sections import stage as sections
from pipeline.topics import stage as topics

STAGES: tuple[Stage, ...] = tuple(package.DECLARATION for package in (
    fetch, backfill, extract, ocr, index, campaigns, organisations, lineage, topics, sections, positions))

for _stage in STAGES:
    registry.register(_stage)
DocketWrapper.discovery = DiscoverDockets
