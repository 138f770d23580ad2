"""The sections stage on the real dockets (../shared/realdata, skipped without them), through
IndexAll: every extracted document split, the ACF notice's parts stored, its comment tied to
it; a second run reads and writes nothing; a document whose text changed is split again with
its comments linked again, and nothing else is touched."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from starlette.testclient import TestClient

from pipeline.counters import ROWS_WRITTEN, counters
from pipeline.engine.stage import StageContext
from pipeline.extract.stage import COMBINED_READS
from pipeline.ops import cli
from pipeline.sections.stage import STAGE, section_docket, unfinished
from pipeline.store import dockets, item_states
from pipeline.store.models import (
    DocumentSection,
    ItemState,
    PositionMember,
    SectionLink,
    Topic,
    TopicMember,
)
from pipeline.tasks import DocumentSectionsAll, IndexAll
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.state_fixtures import (
    installed,
    make_runtime,
    new_pg_database,
    real_mirror_runtime,
    run_invocation,
)

pytestmark = pytest.mark.postgres
ACF = "ACF-2025-0038"
NIST = "NIST-2021-0006"


def sections_of(document: str) -> dict[str, DocumentSection]:
    return {s.section: s for s in DocumentSection.select().where(DocumentSection.document == document)}


def test_real_documents_are_split_and_a_rerun_does_nothing(tmp_path, pg_server, realdata):
    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, ids):
        assert runtime.settings.sections
        assert run_invocation(IndexAll())  # sections is one of its follow-ons
        acf = sections_of(f"{ACF}-0001")
        assert {"I", "II", "III", "IV", "I.a", "IV.b"} <= set(acf)
        assert acf["II"].heading == "II. Reducing Administrative Burden" and acf["II"].page == 2
        states = item_states.states_for_docket(STAGE, ACF)
        assert states[f"{ACF}-0001"].state == "ok" and states[f"{ACF}-0004"].state == "ok"
        assert all(unfinished(runtime, d) == 0 for d in ids)
        before = sorted(ItemState.select(ItemState.item, ItemState.fingerprint, ItemState.written_at)
                        .where(ItemState.stage == STAGE).tuples())
        links = sorted(SectionLink.select(SectionLink.comment, SectionLink.section, SectionLink.kind).tuples())
        with counters.measure() as io:
            assert run_invocation(DocumentSectionsAll())
        assert io.get(COMBINED_READS, 0) == 0 and io.get(ROWS_WRITTEN, 0) == 0
        with counters.measure() as io:
            for docket in ids:
                assert section_docket(StageContext(runtime=runtime, run_id="again"),
                                      dockets.require_docket(docket)).counts == {}
        assert io.get(COMBINED_READS, 0) == 0 and io.get(ROWS_WRITTEN, 0) == 0
        assert sorted(ItemState.select(ItemState.item, ItemState.fingerprint, ItemState.written_at)
                      .where(ItemState.stage == STAGE).tuples()) == before

        # The notice's text extracted again (its content hash changed): it alone is split
        # again, and the comment answering it linked again; nothing else is read.
        ItemState.update(content_hash="changed").where(
            (ItemState.stage == "extract") & (ItemState.item == f"{ACF}-0001")).execute()
        assert unfinished(runtime, ACF) == 2
        with counters.measure() as io:
            result = section_docket(StageContext(runtime=runtime, run_id="changed"), dockets.require_docket(ACF))
        assert result.counts["split"] == 1 and result.counts["linked"] == 1
        assert io.get(COMBINED_READS, 0) == 2  # the notice and its one comment
        assert sections_of(f"{ACF}-0001").keys() == acf.keys()
        assert sorted(SectionLink.select(SectionLink.comment, SectionLink.section, SectionLink.kind).tuples()) == links
        assert all(section_docket(StageContext(runtime=runtime, run_id="x"),
                                  dockets.require_docket(d)).counts == {} for d in ids)
        # --force: every document split again and every comment linked again, to the same rows.
        forced = section_docket(StageContext(runtime=runtime, run_id="forced", force=True), dockets.require_docket(ACF))
        assert (forced.counts["split"], forced.counts["linked"]) == (1, 1)
        assert sorted(SectionLink.select(SectionLink.comment, SectionLink.section, SectionLink.kind).tuples()) == links


def test_the_rfis_comments_are_tied_to_its_questions_and_read_as_such(tmp_path, pg_server, realdata, capsys):
    """NIST-2021-0006 (no docket record: listed from the mirror) beside ACF-2025-0038: the RFI's
    five questions, the comments that answer them by number, those nearest each; ``docketeer
    sections``, the document page and its section's page, and the export say the same."""
    runtime = make_runtime(tmp_path, index_url=new_pg_database(pg_server), api_base="http://127.0.0.1:9/v4",
                           api_key="", source="mirror", list_source="mirror", mirror_url=str(realdata / "mirror"),
                           discover="list", dockets=f"{NIST},{ACF}", extract_workers=1, ocr="false", http_attempts=1)
    with installed(runtime):
        runtime.state  # noqa: B018
        assert run_invocation(IndexAll())
        questions = {k: s for k, s in sections_of(f"{NIST}-0001").items() if k.startswith("q")}
        assert sorted(questions) == ["q1", "q2", "q3", "q4", "q5"] and {s.page for s in questions.values()} == {2}
        states = item_states.states_for_docket(STAGE, NIST)
        assert sum(1 for r in states.values() if r.state == "ok") == 41  # the notice and its 40 comments
        links = list(SectionLink.select().where(SectionLink.docket == NIST))
        nearest = [link for link in links if link.kind == "nearest"]
        assert nearest and all(link.similarity >= runtime.settings.section_nearest_floor for link in nearest)
        assert {link.document for link in links} == {f"{NIST}-0001"}
        # Never the other notices printed on the same pages.
        assert not any(link.section.startswith("other-") for link in nearest)
        cited = {(link.comment, link.section) for link in links if link.kind == "cited" and link.section}
        # NIST-2021-0006-0013 answers the five questions under their numbers and text.
        assert {s for c, s in cited if c == f"{NIST}-0013"} == {"q1", "q2", "q3", "q4", "q5"}

        capsys.readouterr()
        assert cli.main(["sections", f"{NIST}-0001", "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        by_id = {s["id"]: s for s in shown["sections"]}
        assert shown["document"] == f"{NIST}-0001"
        assert by_id["q1"]["cited_by"] == len({c for c, s in cited if s == "q1"}) >= 3
        assert sum(s["nearest"] for s in shown["sections"]) == len({(x.comment, x.section) for x in nearest})
        # The comments answering the questions by their numbers, counted per question.
        assert {q: by_id[q]["cited_by"] for q in questions} == {"q1": 5, "q2": 4, "q3": 3, "q4": 2, "q5": 6}
        # A citation of no section of the notice is kept as written, with its sentence.
        assert [(u["comment"], u["citation"]) for u in shown["unmatched_citations"]] == [(f"{NIST}-0025", "Part II")]
        assert shown["unmatched_citations"][0]["sentence"].startswith("As discussed in Part II, reliable")
        # Beside each section, the main topics of the comments tied to it (either way), as
        # the topics stage left them, and their positions once the positions stage has some.
        tied_q1 = {x.comment for x in links if x.section == "q1"}
        labels = dict(Topic.select(Topic.id, Topic.label).tuples())
        main = Counter(labels[t] for (t,) in TopicMember.select(TopicMember.topic).where(
            TopicMember.item.in_(tied_q1) & TopicMember.topic.is_null(False)).tuples())
        assert main, "the RFI's comments have a topic map"
        assert by_id["q1"]["topics"] == [{"label": label, "comments": n}
                                         for label, n in sorted(main.items(), key=lambda kv: (-kv[1], kv[0]))[:3]]
        assert by_id["q1"]["positions"] == {}  # nothing coded: no positions yet
        assert cli.main(["verify"]) == 0, capsys.readouterr().out  # the rows agree with the item states
        # Positions as the stage leaves them for coded comments (written here: the read side's test).
        coded = sorted(tied_q1)[:2]
        PositionMember.insert_many([{"item": key, "docket": NIST, "position": "oppose", "source": "coded",
                                     "probability": 1.0, "unit": key, "submissions": 1} for key in coded]).execute()
        capsys.readouterr()
        assert cli.main(["sections", f"{NIST}-0001", "--json"]) == 0
        assert {s["id"]: s for s in json.loads(capsys.readouterr().out)["sections"]}["q1"]["positions"] == {"oppose": 2}
        assert cli.main(["sections", "NO-SUCH-0001"]) == 2
        assert "unknown document: NO-SUCH-0001" in capsys.readouterr().err

        with TestClient(make_app(runtime, pages.WarmSearch(runtime)), base_url="http://127.0.0.1") as client:
            page = client.get(f"/document/{NIST}-0001").text
            assert re.findall(r'<section class="rule-section depth-\d" id="section-(q\d)"', page) == list(questions)
            assert f'href="/document/{NIST}-0001/section/q1">cited by {by_id["q1"]["cited_by"]} (' in page
            assert "positions (submissions): oppose 2" in page and "their main topics: " in page
            section = client.get(f"/document/{NIST}-0001/section/q1").text
            assert f'href="/comment/{NIST}-0013"' in section and "cites “1.”" in section
            acf = client.get(f"/document/{ACF}-0001").text
            headings = re.findall(r'<h2 class="section-heading">([^<]+) <code', acf)
            assert headings[headings.index("Background") + 1:][:4] == [
                "I. Technical Assistance Related to ICWA", "II. Reducing Administrative Burden",
                "III. The Court Improvement Program",
                "IV. Increasing Studies of Programs and Services Eligible for Review by the Title IV–E Prevention "
                "Services Clearinghouse"]
            assert client.get(f"/document/{NIST}-0001/section/q9").status_code == 404
            # The notices printed beside it are shown folded, said not to be its text.
            assert acf.count("not this document's text</summary>") == 1

        assert cli.main(["export", str(tmp_path / "out"), "--docket", NIST, "--format", "parquet"]) == 0
        import pyarrow.parquet as pq

        table = pq.read_table(tmp_path / f"out/{NIST}/sections.parquet").to_pylist()
        assert [r["section_id"] for r in table if r["section_id"].startswith("q")] == list(questions)
        comments = {r["comment_id"]: r for r in pq.read_table(tmp_path / f"out/{NIST}/comments.parquet").to_pylist()}
        assert comments[f"{NIST}-0013"]["sections"].splitlines() == ["q1", "q2", "q3", "q4", "q5"]

        # A document's sections lost while its state says split: verify names it.
        DocumentSection.delete().where(DocumentSection.document == f"{NIST}-0001").execute()
        capsys.readouterr()
        assert cli.main(["verify"]) == 1
        assert f"{NIST}-0001: sections state ok but no section rows" in capsys.readouterr().out
