"""The index tests (pipeline.index and the index stage: the index DB, chunking, embedders,
search, indexing by title and abstract, Eastern dates in results). ``rt``: a runtime on a
fresh index database (hashing embedder) with the docket D known; it overrides, in this
folder, the extract tests' ``rt`` (tests/fixtures/extract_inputs.py)."""

from __future__ import annotations

import pytest

from pipeline.runtime import set_runtime
from pipeline.store import dockets
from tests.fixtures.index_inputs import D, open_runtime


@pytest.fixture
def rt(tmp_path, pg_url):
    runtime = open_runtime(tmp_path, pg_url)
    dockets.ensure_dockets([D], "list")
    yield runtime
    set_runtime(None)
    runtime.close()
