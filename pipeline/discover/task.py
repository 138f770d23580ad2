"""``DiscoverDockets``: discovery as the Luigi task every wrapper runs first (the assembly
hands it to the engine as ``DocketWrapper.discovery``)."""

from __future__ import annotations

import logging

import luigi

from pipeline.clock import utcnow
from pipeline.discover import stage as discover
from pipeline.engine.command_line import CheckedParameters
from pipeline.engine.docket_task import runtime_or_exit
from pipeline.engine.store_scope import OfOneStore

log = logging.getLogger("docketeer")


class DiscoverDockets(OfOneStore, CheckedParameters, luigi.Task):
    """Docket rows from the configured list, a Federal Register search, or a mirror listing."""

    def complete(self) -> bool:
        rt = runtime_or_exit()
        return discover.is_current(rt, utcnow())

    def run(self) -> None:
        rt = runtime_or_exit()
        found = discover.discover(rt, utcnow())
        log.info("discover (%s): %d dockets known, %d new", rt.settings.discover, found.known, found.new)
