"""IndexAll runs the campaigns stage after the index when the ``campaigns`` setting is on (the
default), not when it is off; CampaignsAll still runs it alone; a second IndexAll is a no-op;
``IndexAll --force`` re-indexes and leaves the campaigns alone."""

from __future__ import annotations

import pytest

from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer
from pipeline.counters import STAGE_CALLS, counters
from pipeline.store.models import CampaignMember, DocketStage
from pipeline.tasks import CampaignsAll, IndexAll
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database, run_invocation

pytestmark = pytest.mark.postgres


def _grouped() -> tuple[int, int]:
    return (DocketStage.select().where(DocketStage.stage == "campaigns").count(), CampaignMember.select().count())


@pytest.mark.parametrize("setting", ["true", "false"])
def test_index_all_groups_campaigns_as_the_setting_says(tmp_path, pg_server, setting):
    manifest = make_corpus(tmp_path / "mirror", dockets=1, comments_per_docket=5)
    docket = manifest.dockets[0].id
    with StandinServer(tmp_path / "mirror") as server, installed(make_runtime(
            tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base, fr_base=server.fr_base,
            api_key="DEMO_KEY", extract_workers=1, campaigns=setting)) as runtime:
        runtime.state  # noqa: B018 - open and create the schema
        assert run_invocation(IndexAll(docket=docket))
        markers, members = _grouped()
        if setting == "true":
            assert markers == 1 and members == 5  # every comment placed in a group
        else:
            assert (markers, members) == (0, 0)
            assert run_invocation(CampaignsAll(docket=docket))  # the stage alone, as before
            assert _grouped() == (1, 5)
        with counters.measure() as io:
            assert run_invocation(IndexAll(docket=docket))
        assert io.get(STAGE_CALLS, 0) == 0  # the rerun is a no-op, campaigns included


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
        assert ran == ["index"]  # --force on IndexAll re-indexes; the campaigns stay as they were
        assert markers.read_marker(docket, "campaigns") == grouped
