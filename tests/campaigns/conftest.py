"""The campaign tests: the text rules, grouping, placement, and the CampaignGroups task (also on
the real dockets)."""

from __future__ import annotations

import pytest

from pipeline.runtime import set_runtime
from tests.fixtures.state_fixtures import make_runtime


@pytest.fixture
def rt(tmp_path):
    """A fresh SQLite store at the default settings, current while the test runs."""
    runtime = make_runtime(tmp_path)
    runtime.state  # noqa: B018 - open and create the schema
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.close()
