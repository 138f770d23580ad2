"""DiscoverDockets: a configured list, a Federal Register search, a mirror listing; --docket skips it."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from devtools.mirror_builder import MirrorBuilder
from devtools.standin_server import StandinServer
from pipeline import tasks as task_module
from pipeline.discover import stage as discover
from pipeline.runtime import set_runtime
from pipeline.sources import federal_register
from pipeline.store import dockets
from pipeline.store.models import Docket, Meta
from tests.fixtures.state_fixtures import make_runtime
from tests.fixtures.state_fixtures import run_invocation as build

NOW = datetime(2025, 12, 1, 12, tzinfo=UTC)
EPA = ["EPA-HQ-2025-0001", "EPA-HQ-2025-0002", "EPA-HQ-2025-0003"]
CMS = "CMS-2025-0300"




@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """Three EPA dockets and one CMS docket with a proposed rule and two comments each."""
    root = tmp_path_factory.mktemp("mirror")
    for docket_id in [*EPA, CMS]:
        builder = MirrorBuilder(root, docket_id)
        builder.docket()
        on = builder.document(1)  # posted 2025-07-22, comments close 2025-09-22 Eastern
        builder.comments(on, ["2025-08-01T10:00:00Z", "2025-08-02T10:00:00Z"])
    MirrorBuilder(root, CMS).document(2)  # a second comment window: five rules in all
    return root


@pytest.fixture
def server(mirror):
    with StandinServer(mirror) as srv:
        yield srv


@pytest.fixture
def runtime_for(tmp_path):
    opened = []

    def make(**settings):
        rt = make_runtime(tmp_path, **settings)
        rt.state  # noqa: B018
        opened.append((rt, set_runtime(rt)))
        return rt

    yield make
    for rt, previous in reversed(opened):
        set_runtime(previous)
        rt.close()


def fr_calls(server: StandinServer) -> int:
    return server.calls("/fr/")


def test_configured_list_creates_rows_once(runtime_for):
    rt = runtime_for(discover="list", dockets=f"{EPA[0]}, {CMS}")
    assert not discover.is_current(rt, NOW)
    assert build(task_module.DiscoverDockets())
    rows = {d.id: d.discovered_by for d in Docket.select()}
    assert rows == {EPA[0]: "list", CMS: "list"}
    assert discover.is_current(rt, NOW)
    assert discover.discover(rt, NOW).new == 0  # known rows are left alone


def test_federal_register_search_finds_the_agency_dockets_in_one_call(runtime_for, server):
    rt = runtime_for(discover="fr", fr_base=server.fr_base, fr_agencies="epa", fr_since="2025-01-01")
    found = discover.discover(rt, NOW)
    assert (found.new, found.known) == (3, 3)
    assert fr_calls(server) == 1 and server.calls("/v4/") == 0
    rows = {d.id: (d.discovered_by, d.comment_end_date) for d in Docket.select()}
    # comments_close_on is the Eastern date: the API's 2025-09-23T03:59:59Z is Sept 22, 23:59:59.
    assert rows == {d: ("fr", "2025-09-22") for d in EPA}
    assert discover.is_current(rt, NOW)  # stamped: the window's next runs make no call
    server.reset_log()
    assert discover.is_current(rt, NOW) and fr_calls(server) == 0


def test_federal_register_since_defaults_to_the_injected_year(runtime_for, server):
    rt = runtime_for(discover="fr", fr_base=server.fr_base, fr_agencies="epa")
    assert discover.discover(rt, datetime(2026, 2, 1, tzinfo=UTC)).new == 0  # nothing since 2026-01-01
    assert discover.discover(rt, NOW).new == 3


def test_federal_register_search_stops_after_four_calls(runtime_for, server, monkeypatch, caplog):
    monkeypatch.setattr(federal_register, "PER_PAGE", 1)  # one rule per page: five pages
    rt = runtime_for(discover="fr", fr_base=server.fr_base, fr_since="2025-01-01")
    with caplog.at_level(logging.WARNING):
        found = discover.discover(rt, NOW)
    assert fr_calls(server) == federal_register.MAX_CALLS == 4
    assert 1 <= found.new <= 4 and "truncated after 4 calls" in caplog.text


def test_resolved_dockets_keep_their_own_close_date(runtime_for, server):
    rt = runtime_for(discover="fr", fr_base=server.fr_base, fr_agencies="epa", fr_since="2025-01-01")
    dockets.ensure_dockets([EPA[0]], "list")
    Docket.update(resolved_at="2025-10-01T00:00:00.000000Z", comment_end_date="2025-09-30").execute()
    discover.discover(rt, NOW)
    assert Docket.get_by_id(EPA[0]).comment_end_date == "2025-09-30"
    assert Docket.get_by_id(EPA[1]).comment_end_date == "2025-09-22"


def test_mirror_listing_from_a_local_folder(runtime_for, mirror, tmp_path, caplog):
    # A copy of the mirror's folder names with one unsafe name among them.
    root = tmp_path / "listing"
    for path in mirror.glob("raw-data/*/*"):
        (root / path.relative_to(mirror)).mkdir(parents=True)
    (root / "raw-data" / "EPA" / "..hidden").mkdir()
    rt = runtime_for(discover="mirror", mirror_url=str(root))
    with caplog.at_level(logging.WARNING):
        found = discover.discover(rt, NOW)
    assert found.new == 4
    assert {d.id for d in Docket.select()} == {*EPA, CMS}
    assert "..hidden" in caplog.text
    assert Meta.get_or_none(Meta.key == "discovered_at:mirror") is not None


def test_mirror_discovery_of_one_agency_with_close_dates_from_its_documents(runtime_for, mirror):
    from pipeline.counters import counters
    from pipeline.sources.mirror import MIRROR_READS

    rt = runtime_for(discover="mirror", mirror_url=str(mirror), mirror_agencies="CMS")
    found = discover.discover(rt, NOW)
    assert found.new == 1 and {d.id for d in Docket.select()} == {CMS}
    assert Docket.get_by_id(CMS).comment_end_date == "2025-09-22"  # from its documents, Eastern
    with counters.measure() as again:  # a known docket: its folder name only, no document read
        discover.discover(rt, NOW)
    assert again.get(MIRROR_READS, 0) == 0


def test_docket_on_a_wrapper_filters_before_any_api_call(runtime_for, server):
    runtime_for(discover="fr", fr_base=server.fr_base, fr_agencies="epa", fr_since="2025-01-01",
                api_base=server.api_base, api_key="test-key")
    dockets.ensure_dockets([EPA[1]], "list")  # known, but not named: must not be touched
    assert build(task_module.FetchAll(docket=EPA[0]))
    assert fr_calls(server) == 0  # discovery never ran
    assert Meta.get_or_none(Meta.key == "discovered_at:fr") is None
    paths = [path for _, path, _ in server.request_log]
    assert paths == [f"/v4/dockets/{EPA[0]}", "/v4/documents", "/v4/comments"]
    assert Docket.get_by_id(EPA[0]).last_pull_at is not None
    assert Docket.get_by_id(EPA[1]).resolved_at is None
