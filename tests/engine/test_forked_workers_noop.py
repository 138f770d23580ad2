"""`luigi --module pipeline IndexAll --workers 2` as cron runs it: every task runs in a process
forked from the one that scheduled, so what that process read before the fork (the index
markers its wrapper judged) must not stand for what a sibling process wrote since. After a run
that did new work, the next run in the same freshness window does nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from devtools.corpus_changes import add_comments
from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer
from pipeline.store.models import Docket, DocketStage, Run
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database
from tests.fixtures.windows import SAME_WINDOW_ENV

pytestmark = pytest.mark.postgres

KEY = "test-key"
OLD_PULL = "2000-01-01T00:00:00.000000Z"  # its last pull long past: the next freshness window


def _index_all(env: dict[str, str], tmp_path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "luigi", "--module", "pipeline", "IndexAll",
               "--local-scheduler", "--workers", "2"]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done


def test_a_run_after_new_work_with_two_workers_does_nothing(tmp_path, pg_server):
    root = tmp_path / "corpus"
    manifest = make_corpus(root, dockets=1, comments_per_docket=3, open_comments=4, tombstone=False,
                           corrupt_share=0.0, attachment_share=0.0)
    open_docket = manifest.options["open_docket"]
    dockets = ",".join([*(d.id for d in manifest.dockets if d.id != open_docket), open_docket])
    with StandinServer(root, api_keys=(KEY,)) as server, installed(make_runtime(
            tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base, api_key=KEY,
            discover="list", dockets=dockets, ocr="false")) as runtime:
        runtime.state  # noqa: B018 - open and create the schema
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
        env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
                   DOCKETEER_DATA_DIR=str(runtime.settings.data_path),
                   DOCKETEER_INDEX_URL=runtime.settings.index_url, DOCKETEER_API_BASE=server.api_base,
                   REGULATIONS_GOV_API_KEY=KEY, DOCKETEER_DISCOVER="list", DOCKETEER_DOCKETS=dockets,
                   DOCKETEER_EMBEDDER="hashing", DOCKETEER_PACE_SECONDS="0",
                   DOCKETEER_EXTRACT_WORKERS="1", DOCKETEER_OCR="false", **SAME_WINDOW_ENV)
        _index_all(env, tmp_path)  # everything new; discovery (the list) is current from now on
        # New comments on the open docket, due for a pull: this run's wrapper judges the index
        # and campaigns pending before it forks the workers that do them.
        add_comments(root, open_docket, 2, datetime.now(UTC))
        server.reload()
        Docket.update(last_pull_at=OLD_PULL).where(Docket.id == open_docket).execute()
        before = _grouped_at(open_docket)
        second = _index_all(env, tmp_path)
        # campaigns recorded done for the new comments
        assert _grouped_at(open_docket) > before, second.stderr[-3000:]
        runs = Run.select().count()
        again = _index_all(env, tmp_path)
        ran = [f"{r.stage} {r.docket}" for r in Run.select().offset(runs)]
        assert ran == [], again.stderr[-3000:]  # the campaigns, too, were recorded done
        assert "Did not run any tasks" in again.stderr


def _grouped_at(docket: str) -> str:
    marker = DocketStage.get((DocketStage.docket == docket) & (DocketStage.stage == "campaigns"))
    return marker.completed_at
