"""The fetch tests (the fetch stage over the API and the mirror, the watermark,
the seal's Eastern days, mirror listings). ``small``: the 700-comment docket behind the
scripted stand-in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.fixtures.fetch_scripted import SMALL, ScriptedServer, small_docket


@pytest.fixture
def small(tmp_path):
    """700 comments, a minute apart, on a docket whose comment period closed 2025-09-23."""
    root = tmp_path / "mirror"
    times = [datetime(2025, 8, 1, tzinfo=UTC) + i * timedelta(minutes=1) for i in range(700)]
    small_docket(root, SMALL, times)
    with ScriptedServer(root) as server:
        yield root, server, times
