"""Lineage on the real dockets in ../shared/realdata (skipped without them), through the Luigi
tasks: every real document's type, FR number and window and every docket's RIN as the records
say, every real comment tied to the document it answers, a second run doing nothing, and
``docketeer rule`` / ``docketeer orgs --rule`` reading what the store holds."""

from __future__ import annotations

import json
import shutil

import duckdb
from starlette.testclient import TestClient

from pipeline.counters import ROWS_WRITTEN, STAGE_CALLS, counters
from pipeline.engine import markers
from pipeline.ops import cli, verify
from pipeline.store.models import Docket, DocketDocument, Item, ItemState, LineageComment
from pipeline.tasks import FetchAll, LineageAll, OrganisationsAll
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.state_fixtures import real_mirror_runtime, real_mirror_stack, run_invocation

# document -> (type, FR document number, window start, window end (Eastern), posted (UTC)),
# as the records in ../shared/realdata write them.
DOCUMENTS = {
    "ACF-2025-0038-0001": ("Notice", "2025-13790", "2025-07-22", "2025-09-22", "2025-07-22T04:00:00Z"),
    "DOS-2022-0004-0001": ("Rule", "2022-05629", "2022-03-23", "2022-05-09", "2022-03-23T04:00:00Z"),
    "USTR-2015-0010-0001": ("Notice", "2015-19523", "2015-08-10", "2015-09-23", "2015-08-10T04:00:00Z"),
    "USTR-2015-0010-0015": ("Supporting & Related Material", None, None, None, "2015-10-05T00:00:00Z"),
    "USTR-2015-0010-0016": ("Supporting & Related Material", None, None, None, "2015-10-09T04:00:00Z"),
    "USTR-2015-0010-0017": ("Supporting & Related Material", None, None, None, "2015-12-10T05:00:00Z"),
}
RINS = {"ACF-2025-0038": None, "DOS-2022-0004": "1400-AE27", "USTR-2015-0010": None}
PHASE = {"ACF-2025-0038-0001": "notice", "DOS-2022-0004-0001": "final", "USTR-2015-0010-0001": "notice"}


def test_real_documents_resolved_and_every_comment_tied(tmp_path, pg_server, realdata, capsys):
    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, ids):
        assert run_invocation(LineageAll())
        stored = {d.document: (d.document_type, d.fr_doc_num, d.start, d.end, d.posted_at)
                  for d in DocketDocument.select()}
        assert stored == DOCUMENTS
        assert {d.id: d.rin for d in Docket.select()} == RINS
        comments = {i.key: i.comment_on_document_id for i in Item.select().where(Item.kind == "comment")}
        ties = {t.item: (t.document, t.phase) for t in LineageComment.select()}
        assert comments and ties == {k: (doc, PHASE[doc]) for k, doc in comments.items()}
        for docket in ids:
            assert markers.read_marker(docket, "lineage").version == 1

        with counters.measure() as io:
            assert run_invocation(LineageAll())
        assert io.get(STAGE_CALLS, 0) == 0 and io.get(ROWS_WRITTEN, 0) == 0
        report = verify.run_checks(runtime)
        assert report.passed and "lineage markers" in [c.name for c in report.checks], "\n".join(report.lines())
        with counters.measure() as io:
            assert run_invocation(LineageAll(force=True))
        assert io[STAGE_CALLS] == len(ids) and markers.read_marker(ids[0], "lineage").version == 2
        assert {t.item: (t.document, t.phase) for t in LineageComment.select()} == ties  # redone, the same

        capsys.readouterr()
        assert cli.main(["rule", "1400-AE27", "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["dockets"] == ["DOS-2022-0004"]
        assert [(d["document"], d["phase"], d["window_end"], d["comments"]) for d in shown["documents"]] == \
            [("DOS-2022-0004-0001", "final", "2022-05-09", 1)]
        assert shown["phases"] == [{"phase": "final", "comments": 1}]
        assert cli.main(["rule", "USTR-2015-0010"]) == 0
        text = capsys.readouterr().out
        assert "2015-08-10  notice" in text and "comments per phase: notice 4" in text
        assert cli.main(["rule", "9999-ZZ99"]) == 2
        assert capsys.readouterr().err.count("\n") == 1

        assert run_invocation(OrganisationsAll())
        capsys.readouterr()
        assert cli.main(["orgs", "--rule", "DOS-2022-0004", "--phases", "final", "--json"]) == 0
        found = json.loads(capsys.readouterr().out)
        assert [o["organisation"] for o in found["organisations"]] == ["Raytheon Technologies Corporation"]
        assert cli.main(["orgs", "--rule", "DOS-2022-0004", "--phases", "proposed,final", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["organisations"] == []
        assert cli.main(["orgs", "--rule", "DOS-2022-0004", "--phases", "draft"]) == 2
        assert "unknown phase draft" in capsys.readouterr().err

        with TestClient(make_app(runtime, pages.WarmSearch(runtime)), base_url="http://127.0.0.1") as client:
            page = client.get("/docket/DOS-2022-0004")
            assert page.status_code == 200
            assert "Rule timeline (RIN 1400-AE27)" in page.text and "2022-03-23 – 2022-05-09" in page.text
            assert "2022-05629" in page.text
            both = client.get("/rule/1400-AE27/organisations?phases=final")
            assert both.status_code == 200 and "Raytheon Technologies Corporation" in both.text
            assert client.get("/rule/1400-AE27/organisations?phases=draft").status_code == 400
            assert client.get("/rule/9999-ZZ99/organisations").status_code == 404

        dest = tmp_path / "export"
        assert cli.main(["export", str(dest)]) == 0
        with duckdb.connect() as con:
            phases = con.execute(f"SELECT document_id, rin, phase, comment_end_date, fr_doc_num, comments "
                                 f"FROM read_parquet('{dest}/*/rule_phases.parquet') ORDER BY 1").fetchall()
            answers = dict(con.execute(f"SELECT comment_id, answers_phase FROM "
                                       f"read_parquet('{dest}/*/comments.parquet')").fetchall())
        assert phases[1] == ("DOS-2022-0004-0001", "1400-AE27", "final", "2022-05-09", "2022-05629", 1)
        assert [p[0] for p in phases] == sorted(DOCUMENTS)
        assert answers == {k: PHASE[doc] for k, doc in comments.items()}


def test_a_document_retyped_upstream_reties_its_comments_alone(tmp_path, pg_server, realdata):
    """The agency recategorises a document after its comments were tied: the next resolve
    reads the new type, and the next lineage run re-ties that document's comments alone,
    although backfill's output (lineage's other input) did not change."""
    copy = tmp_path / "realdata"
    shutil.copytree(realdata / "mirror", copy / "mirror")
    with real_mirror_stack(tmp_path / "run", pg_server, copy) as (runtime, ids, server):
        assert run_invocation(LineageAll())
        before = {t.item: (t.document, t.phase) for t in LineageComment.select()}
        assert before["DOS-2022-0004-0003"] == ("DOS-2022-0004-0001", "final")

        record = copy / "mirror/raw-data/DOS/DOS-2022-0004/text-DOS-2022-0004/documents/DOS-2022-0004-0001.json"
        document = json.loads(record.read_text())
        document["data"]["attributes"]["documentType"] = "Proposed Rule"
        document["data"]["attributes"]["modifyDate"] = "2026-12-01T15:00:00Z"
        record.write_text(json.dumps(document))
        server.reload()
        assert run_invocation(FetchAll(force=True))
        assert DocketDocument.get_by_id("DOS-2022-0004-0001").document_type == "Proposed Rule"

        written = {t.item: t.written_at for t in ItemState.select().where(ItemState.stage == "lineage")}
        assert run_invocation(LineageAll())
        after = {t.item: (t.document, t.phase) for t in LineageComment.select()}
        assert after == before | {"DOS-2022-0004-0003": ("DOS-2022-0004-0001", "proposed")}
        rewritten = {t.item for t in ItemState.select().where(ItemState.stage == "lineage")
                     if t.written_at != written[t.item]}
        assert rewritten == {"DOS-2022-0004-0003"}  # that document's comments alone
        with counters.measure() as io:
            assert run_invocation(LineageAll())
        assert io.get(STAGE_CALLS, 0) == 0 and io.get(ROWS_WRITTEN, 0) == 0
