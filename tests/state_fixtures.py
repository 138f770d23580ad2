"""Fixtures that give a test a real state DB (SQLite file or embedded PostgreSQL)."""

from __future__ import annotations

import pytest

from pipeline.config import load_settings
from pipeline.runtime import Runtime, set_runtime


def make_runtime(tmp_path, state_url: str = "", **overrides) -> Runtime:
    env = {
        "DOCKETEER_DATA_DIR": str(tmp_path / "data"),
        "DOCKETEER_STATE_URL": state_url,
        "DOCKETEER_DISCOVER": "none",
        "DOCKETEER_EMBEDDER": "hashing",
        "DOCKETEER_PACE_SECONDS": "0",
    }
    env.update({f"DOCKETEER_{k.upper()}": str(v) for k, v in overrides.items()})
    return Runtime(load_settings(env))


@pytest.fixture(params=["sqlite", "postgres"])
def state(request, tmp_path):
    """A runtime whose state DB is SQLite or PostgreSQL: core tests run on both."""
    url = ""
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
    runtime = make_runtime(tmp_path, url)
    runtime.state  # noqa: B018 - open and create the schema
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.close()


@pytest.fixture
def sqlite_state(tmp_path):
    runtime = make_runtime(tmp_path)
    runtime.state  # noqa: B018
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.close()
