"""benchmarks/hnsw_build.py builds the index both ways over the same vectors, and tells a
build that went on on disk from one that did not (its times are never asserted)."""

from __future__ import annotations

import pytest

from benchmarks.hnsw_build import measure

pytestmark = pytest.mark.postgres


def test_the_server_setting_spills_where_the_index_db_sizes_the_build(tmp_path):
    # 1,000 vectors of 384 dimensions need about 2.2 MB of graph: a 1 MB server setting spills.
    figures = measure(tmp_path / "work", 1000, 384, server_memory="1MB")

    assert figures["server_setting"]["spilled"].startswith("NOTICE:  hnsw graph no longer fits")
    assert figures["sized_by_index_db"]["spilled"] is None
    assert figures["vectors"] == 1000 and figures["sized_by_index_db"]["postgres_cpu_s"] >= 0
