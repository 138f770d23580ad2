"""The web corpus's store built once for the folder: the page tests that only read it (the
search, browse and browser tests) share one build through the real pipeline instead of one
each; a test file that changes its store (feeds, document pages, ...) builds its own with
``web_fixtures.web_store``."""

from __future__ import annotations

import pytest

from pipeline import runtime
from pipeline.runtime import set_runtime
from tests.fixtures.web_fixtures import web_store


@pytest.fixture(scope="package")
def _built_web_store(tmp_path_factory, pg_server):
    outside = runtime._current  # put back at once: each module installs the store for itself
    with web_store(tmp_path_factory.mktemp("web-read-only"), pg_server) as built:
        set_runtime(outside)
        yield built


@pytest.fixture(scope="module")
def read_only_web_store(_built_web_store):
    """The shared store, its runtime the current one while the module's tests run."""
    previous = set_runtime(_built_web_store.runtime)
    yield _built_web_store
    set_runtime(previous)
