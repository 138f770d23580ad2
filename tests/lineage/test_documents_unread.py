"""The way up from a store whose dockets were fetched from the API before their documents were
stored (schema v17), against the stand-in over the real dockets: the upgrade marks them, the
next run asks for each one's documents once and for no comment, lineage ties its comments to
their real phase, and the run after asks nothing. A mirror-fed docket is never asked; a docket
with no documents at all is asked once."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import pytest

from devtools.standin_server import StandinServer
from pipeline.counters import STAGE_CALLS, counters
from pipeline.engine.stage import StageContext
from pipeline.lineage.stage import link_docket
from pipeline.store import db as state_db
from pipeline.store import dockets
from pipeline.store.models import Docket, DocketDocument, Item, LineageComment, Meta, MirrorObject
from pipeline.tasks import FetchAll, LineageAll
from tests.fixtures.state_fixtures import REAL_KEY, installed, make_runtime, run_invocation

API_FED = "DOS-2022-0004"  # fetched from the API before 0.4.0: no documents stored
MIRROR_FED = "ACF-2025-0038"  # its listing is stored: the v15 upgrade read what it had
NO_DOCUMENTS = "USTR-2015-0010"  # upstream it has no documents at all
IDS = sorted((API_FED, MIRROR_FED, NO_DOCUMENTS))
# A freshness window of a year: the runs of the test fall in one, so no walk is due.
YEAR = 365 * 24 * 3600


def _as_stored_before_the_documents(runtime) -> None:
    """The store as 0.4.0 left it (schema 16) for dockets fetched before it."""
    DocketDocument.delete().where(DocketDocument.docket.in_([API_FED, MIRROR_FED])).execute()
    Docket.update(rin=None).where(Docket.id == API_FED).execute()
    # Its comments were tied when no document type was known: phase unknown.
    link_docket(StageContext(runtime=runtime, run_id="0.4.0", force=True), dockets.require_docket(API_FED))
    MirrorObject.insert(key=f"raw-data/ACF/{MIRROR_FED}/text-{MIRROR_FED}/comments/x.json", docket=MIRROR_FED,
                        size=1, modified="1", state="listed", seen_at="x", item="").execute()
    runtime.state.execute_sql("ALTER TABLE docket DROP COLUMN documents_unread")
    Meta.update(value="16").where(Meta.key == "schema_version").execute()


def _documents_asked(server: StandinServer) -> list[str]:
    return sorted(query["filter[docketId]"][0] for _, path, query in server.request_log
                  if path == "/v4/documents")


@pytest.fixture
def upgraded(tmp_path, realdata, request):
    """(runtime, stand-in, DOS's comments -> the document each answers): the three real
    dockets fetched (DOS then sealed when the test's parameter says so, its markers recorded
    under the seal), set back to what 0.4.0 left, then opened at the current schema."""
    mirror = tmp_path / "mirror"
    shutil.copytree(realdata / "mirror", mirror)
    shutil.rmtree(mirror / "raw-data" / "USTR" / NO_DOCUMENTS / f"text-{NO_DOCUMENTS}" / "documents")
    with StandinServer(mirror, api_keys=(REAL_KEY,)) as server:
        runtime = make_runtime(tmp_path, api_base=server.api_base, api_key=REAL_KEY, discover="list",
                               dockets=",".join(IDS), source="mirror", mirror_url=str(mirror),
                               http_attempts=1, freshness_seconds=YEAR)
        with installed(runtime):
            runtime.state  # noqa: B018 - bind the models to this store
            assert run_invocation(LineageAll())
            comments = {i.key: i.comment_on_document_id for i in Item.select().where(
                (Item.kind == "comment") & (Item.docket == API_FED))}
            assert comments
            if getattr(request, "param", False):
                dockets.seal(API_FED, "manual", datetime(2026, 1, 1, tzinfo=UTC))
                assert run_invocation(LineageAll())
            _as_stored_before_the_documents(runtime)
            assert {t.phase for t in LineageComment.select().where(LineageComment.docket == API_FED)} == {"unknown"}
            state_db.ensure_schema(runtime.state)
            assert {d.id: d.documents_unread for d in Docket.select()} == {
                API_FED: 1, MIRROR_FED: None, NO_DOCUMENTS: 1}
            server.reset_log()
            yield runtime, server, comments


def _tied_with_their_phase(comments: dict[str, str]) -> None:
    assert Docket.get_by_id(API_FED).rin == "1400-AE27"
    assert [d.document_type for d in DocketDocument.select().where(DocketDocument.docket == API_FED)] == ["Rule"]
    ties = {t.item: (t.document, t.phase) for t in LineageComment.select().where(LineageComment.docket == API_FED)}
    assert ties == {key: (document, "final") for key, document in comments.items()}
    assert {d.id: d.documents_unread for d in Docket.select()} == dict.fromkeys(IDS)


def _then_nothing(server: StandinServer) -> None:
    server.reset_log()
    with counters.measure() as io:
        assert run_invocation(FetchAll(), LineageAll())
    assert server.request_log == [] and io.get(STAGE_CALLS, 0) == 0


def test_the_first_run_after_upgrading_reads_each_unread_dockets_documents_once(upgraded):
    _, server, comments = upgraded
    assert run_invocation(LineageAll())  # as IndexAll runs it among its follow-ons
    # One docket record (its RIN) and one documents page each; no comment asked.
    assert _documents_asked(server) == [API_FED, NO_DOCUMENTS]
    assert sorted(path for _, path, _ in server.request_log) == sorted(
        [f"/v4/dockets/{API_FED}", f"/v4/dockets/{NO_DOCUMENTS}", "/v4/documents", "/v4/documents"])
    _tied_with_their_phase(comments)
    _then_nothing(server)


@pytest.mark.parametrize("upgraded", [True], indirect=True, ids=["sealed"])
def test_a_sealed_docket_is_read_for_its_documents_by_fetch_all_then_tied(upgraded):
    _, server, comments = upgraded
    assert run_invocation(FetchAll())
    assert _documents_asked(server) == [API_FED, NO_DOCUMENTS]
    assert server.calls("/v4/comments") == 0 and server.calls("/v4/dockets") == 2
    server.reset_log()
    assert run_invocation(LineageAll())
    assert server.request_log == []
    _tied_with_their_phase(comments)
    assert Docket.get_by_id(API_FED).sealed_at is not None
    _then_nothing(server)


def test_a_docket_upstream_no_longer_knows_keeps_what_was_fetched_and_is_asked_once(upgraded):
    _, server, comments = upgraded
    server.gone.add(API_FED)  # withdrawn upstream since it was fetched: 404
    assert run_invocation(FetchAll())
    assert server.calls(f"/v4/dockets/{API_FED}") == 1 and server.calls("/v4/comments") == 0
    docket = Docket.get_by_id(API_FED)
    assert docket.documents_unread is None and dockets.out_of_set(docket) is None
    assert Item.select().where((Item.docket == API_FED) & (Item.kind == "comment")).count() == len(comments)
    server.reset_log()
    assert run_invocation(LineageAll()) and server.request_log == []
    _then_nothing(server)
