"""Luigi's summary names IndexAll once, and truthfully, after a fetch failed under it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.fixtures.paths import ROOT
from tests.fixtures.pipeline_fixtures import built_store


@pytest.fixture
def store(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=2, comments=3, build=False) as built:
        yield built


def luigi(store, *args: str, key: str = "DEMO_KEY") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(store.env(), REGULATIONS_GOV_API_KEY=key, PYTHONPATH=str(ROOT),
               LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"))
    return subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", *args, "--local-scheduler"],
                          env=env, cwd=store.root, capture_output=True, text=True, timeout=300)


def summary(stderr: str) -> str:
    return stderr.split("===== Luigi Execution Summary =====")[1]


def index_all_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if "IndexAll(" in line]


def test_a_failed_fetch_leaves_index_all_named_once_under_failed_dependencies(store):
    assert luigi(store, "DiscoverDockets").returncode == 0
    result = luigi(store, "IndexAll", key="rejected-key")
    assert result.returncode != 0
    text = summary(result.stderr)
    assert "FetchComments" in text.split("* 2 failed:")[1].split("*")[0], text
    [line] = index_all_lines(text)  # once, not also under "missing external dependencies"
    assert line.startswith("- 1 IndexAll(")
    group = [g for g in text.split(line)[0].splitlines() if g.strip().startswith("*")][-1]
    assert "had failed dependencies" in group, text
    assert "missing external dependencies" not in text and "not granted run permission" not in text


def test_named_dockets_with_one_failed_fetch_name_index_all_once(store):
    good, bad = store.dockets
    store.server.path_faults[f"/v4/dockets/{bad}"] = "403"  # this docket's fetch fails
    result = luigi(store, "IndexAll", "--docket", f"{good},{bad}")
    assert result.returncode != 0
    text = summary(result.stderr)
    failed = text.split(" failed:")[1].split("*")[0]
    assert f"FetchComments(docket={bad}," in failed and good not in failed, text
    # Under one heading, the failed dependency's: not also "missing external dependencies"
    # and "not granted run permission", as when the named dockets' tasks were yielded.
    [line] = index_all_lines(text)
    assert line.startswith("- 1 IndexAll(")
    group = [g for g in text.split(line)[0].splitlines() if g.strip().startswith("*")][-1]
    assert "had failed dependencies" in group, text
    assert "missing external dependencies" not in text and "not granted run permission" not in text
    assert f"IndexDocket(docket={good}," in text.split("ran successfully:")[1].split("*")[0], text
