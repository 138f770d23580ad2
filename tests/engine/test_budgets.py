"""A run stopped by its request budget, resumed by later runs, ends equal to an uninterrupted run."""

from __future__ import annotations

import pytest

from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer
from pipeline import IndexAll, IndexDocket
from pipeline.runtime import set_runtime
from pipeline.store.models import Attachment, Item, ItemState, Run
from tests.fixtures.state_fixtures import make_runtime, new_pg_database, run_invocation


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    manifest = make_corpus(root, dockets=1, comments_per_docket=12)
    with StandinServer(root) as server:
        yield server, [d.id for d in manifest.dockets]


def _build(budget: int) -> bool:
    return run_invocation(IndexAll(request_budget=budget))


def _dump() -> dict:
    """The data tables without the columns that say when or by which run a row was written."""
    return {
        "items": list(Item.select(Item.key, Item.summary_hash, Item.detail_hash, Item.body,
                                  Item.submitter, Item.withdrawn).order_by(Item.key).tuples()),
        "attachments": list(Attachment.select(Attachment.item, Attachment.filename, Attachment.sha256,
                                              Attachment.size).order_by(Attachment.item, Attachment.filename).tuples()),
        "states": list(ItemState.select(ItemState.stage, ItemState.item, ItemState.state,
                                        ItemState.fingerprint, ItemState.content_hash)
                       .order_by(ItemState.stage, ItemState.item).tuples()),
    }


def _run_to_completion(tmp_path, server, dockets, index_url, budget: int) -> tuple[dict, str, list, int]:
    runtime = make_runtime(tmp_path, api_base=server.api_base, api_key="test-key", discover="list",
                           dockets=",".join(dockets), index_url=index_url)
    previous = set_runtime(runtime)
    try:
        runs = 0
        for runs in range(1, 30):  # noqa: B007 - the count is the result
            assert _build(budget)
            if all(IndexDocket(docket=d).output().exists() for d in dockets):
                break
        spent = Run.select().where(Run.budget_spent == True).count()  # noqa: E712
        blobs = sorted(runtime.blobs.list(""))
        return _dump(), runtime.index_db().dump_chunks(), blobs, spent
    finally:
        set_runtime(previous)
        runtime.close()


def test_budget_stopped_runs_resume_to_the_uninterrupted_result(tmp_path, corpus, pg_url, pg_server):
    server, dockets = corpus
    whole = _run_to_completion(tmp_path / "whole", server, dockets, pg_url, budget=0)
    budgeted = _run_to_completion(tmp_path / "budgeted", server, dockets,
                                  new_pg_database(pg_server), budget=6)
    assert whole[3] == 0 and budgeted[3] > 0  # the budget really stopped runs
    for table in whole[0]:
        extra = set(budgeted[0][table]) ^ set(whole[0][table])
        assert not extra, (table, sorted(extra, key=str)[:6])
    assert budgeted[1] == whole[1]
    assert budgeted[2] == whole[2]
