"""IndexAll runs every follow-on stage (``follow_on_stages()``: campaigns, organisations, lineage, topics,
sections) after
the index when its setting is on (the default), not when it is off; the stage's own wrapper
still runs it alone; a second IndexAll is a no-op; ``IndexAll --force`` re-indexes and leaves
the follow-ons alone."""

from __future__ import annotations

import pytest

from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer
from pipeline.counters import STAGE_CALLS, counters
from pipeline.store.models import DocketStage, Item, ItemState
from pipeline.tasks import IndexAll, follow_on_stages
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database, run_invocation

pytestmark = pytest.mark.postgres

# What each follow-on leaves per comment: the rows its run is seen by.
ROWS = {"campaigns": lambda: ItemState.select().where(ItemState.stage == "campaigns").count(),  # placed or skipped
        "organisations": lambda: ItemState.select().where(ItemState.stage == "organisations").count(),
        "lineage": lambda: ItemState.select().where(ItemState.stage == "lineage").count(),
        "topics": lambda: ItemState.select().where(ItemState.stage == "topics").count(),
        # its comments' rows (the docket's document has one too: it is split)
        "sections": lambda: ItemState.select().join(Item, on=(Item.key == ItemState.item)).where(
            (ItemState.stage == "sections") & (Item.kind == "comment")).count(),
        "positions": lambda: ItemState.select().where(ItemState.stage == "positions").count()}
FOLLOW_ONS = [(wrapper, names) for wrapper, names in follow_on_stages()]


def _done(stage: str) -> tuple[int, int]:
    return (DocketStage.select().where(DocketStage.stage == stage).count(), ROWS[stage]())


def test_every_follow_on_is_covered():
    assert {wrapper.stage_task.stage.name for wrapper, _ in FOLLOW_ONS} == set(ROWS)


@pytest.mark.parametrize("setting", ["true", "false"])
@pytest.mark.parametrize("follow_on", FOLLOW_ONS, ids=lambda f: f[0].__name__)
def test_index_all_runs_the_follow_on_as_its_setting_says(tmp_path, pg_server, follow_on, setting):
    wrapper, names = follow_on
    stage = wrapper.stage_task.stage.name
    manifest = make_corpus(tmp_path / "mirror", dockets=1, comments_per_docket=5)
    docket = manifest.dockets[0].id
    with StandinServer(tmp_path / "mirror") as server, installed(make_runtime(
            tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base, fr_base=server.fr_base,
            api_key="DEMO_KEY", extract_workers=1, **{name: setting for name in names})) as runtime:
        runtime.state  # noqa: B018 - open and create the schema
        assert run_invocation(IndexAll(docket=docket))
        if setting == "true":
            assert _done(stage) == (1, 5)  # every comment seen by the stage
        else:
            assert _done(stage) == (0, 0)
            assert run_invocation(wrapper(docket=docket))  # the stage alone, as before
            assert _done(stage) == (1, 5)
        with counters.measure() as io:
            assert run_invocation(IndexAll(docket=docket))
        assert io.get(STAGE_CALLS, 0) == 0  # the rerun is a no-op, every follow-on included


def test_index_all_force_reindexes_without_regrouping(tmp_path, pg_server, monkeypatch):
    from pipeline.engine import markers
    from pipeline.engine.docket_task import DocketStageTask

    manifest = make_corpus(tmp_path / "mirror", dockets=1, comments_per_docket=4)
    docket = manifest.dockets[0].id
    with StandinServer(tmp_path / "mirror") as server, installed(make_runtime(
            tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base, fr_base=server.fr_base,
            api_key="DEMO_KEY", extract_workers=1)) as runtime:
        runtime.state  # noqa: B018 - open and create the schema
        assert run_invocation(IndexAll(docket=docket))
        grouped = markers.read_marker(docket, "campaigns")
        ran: list[str] = []
        real_run = DocketStageTask.run

        def noted(task):
            ran.append(task.stage.name)
            real_run(task)

        monkeypatch.setattr(DocketStageTask, "run", noted)
        assert run_invocation(IndexAll(docket=docket, force=True))
        assert ran == ["index"]  # --force on IndexAll re-indexes; the follow-ons stay as they were
        assert markers.read_marker(docket, "campaigns") == grouped
