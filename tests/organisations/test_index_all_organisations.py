"""IndexAll resolves organisations through Luigi (the organisations setting, on by default):
every comment the stage saw has its state row, each one naming an organisation its member
rows; a second IndexAll runs no stage."""

from __future__ import annotations

import pytest

from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer
from pipeline.counters import STAGE_CALLS, counters
from pipeline.store.models import ItemState, OrganisationMember
from pipeline.tasks import IndexAll
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database, run_invocation

pytestmark = pytest.mark.postgres


def test_index_all_resolves_organisations_through_luigi(tmp_path, pg_server):
    """The corpus's comments name organisations: IndexAll leaves each its member row."""
    manifest = make_corpus(tmp_path / "mirror", dockets=1, comments_per_docket=6)
    docket = manifest.dockets[0].id
    with StandinServer(tmp_path / "mirror") as server, installed(make_runtime(
            tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base, fr_base=server.fr_base,
            api_key="DEMO_KEY", extract_workers=1, campaigns="false")) as runtime:
        runtime.state  # noqa: B018 - open and create the schema
        assert run_invocation(IndexAll(docket=docket))
        states = {s.state for s in ItemState.select().where(ItemState.stage == "organisations")}
        assert states and states <= {"ok", "skipped"}
        named = {m.item for m in OrganisationMember.select()}
        assert len(named) == ItemState.select().where(
            (ItemState.stage == "organisations") & (ItemState.state == "ok")).count()
        with counters.measure() as io:
            assert run_invocation(IndexAll(docket=docket))
        assert io.get(STAGE_CALLS, 0) == 0
