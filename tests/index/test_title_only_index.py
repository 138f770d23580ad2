"""Every item is found by its title: one without readable text by its title alone (a notice
whose content file the mirror lacks, DOS-2022-0004-0001, real; a withdrawn document without
files), one that says something itself by its title opening its body or abstract, one whose
only text is its files' by its title before them."""

from __future__ import annotations

from pipeline.index.embedders import HashingEmbedder
from pipeline.index.search import search
from pipeline.index.stage import TITLE_HEADING
from pipeline.runtime import set_runtime
from pipeline.store.models import Item
from tests.fixtures.chain_runs import KEY, run_at
from tests.fixtures.index_inputs import D, chunks_by_item, put_item, run
from tests.fixtures.state_fixtures import make_runtime, new_pg_database


def test_an_item_whose_combined_md_holds_no_text_is_indexed_by_its_title(rt):
    put_item(rt, f"{D}-0001", "", kind="document")  # no document text, no readable file
    put_item(rt, f"{D}-0002", "Rural clinics need telehealth payment parity.")
    result, _ = run(rt)
    assert result.counts == {"embedded": 2}
    chunks = chunks_by_item(rt)
    assert chunks[f"{D}-0001"] == [(TITLE_HEADING, f"Comment {D}-0001")]
    assert chunks[f"{D}-0002"] == [(TITLE_HEADING, f"Comment {D}-0002"),  # its title, then its body
                                   ("Inline comment", "Rural clinics need telehealth payment parity.")]
    hits = search(rt.index_db(), HashingEmbedder(), f"Comment {D}-0001", collection="documents", k=1)
    assert [h.item_key for h in hits] == [f"{D}-0001"]


def test_a_new_title_re_indexes_a_title_only_item_and_its_text_comes_after_the_title(rt):
    key = f"{D}-0001"
    put_item(rt, key, "", kind="document")
    run(rt)
    Item.update(title="Notice of Proposed Rulemaking: Wetlands Permits").where(Item.key == key).execute()
    assert run(rt)[0].counts == {"embedded": 1}
    assert chunks_by_item(rt)[key] == [(TITLE_HEADING, "Notice of Proposed Rulemaking: Wetlands Permits")]
    # Its content file's text arrives: found by both.
    put_item(rt, key, "", kind="document", sources="s2",
             attachment="The wetlands permit program is revised as follows.")
    Item.update(title="Notice of Proposed Rulemaking: Wetlands Permits").where(Item.key == key).execute()
    run(rt)
    assert [section for section, _ in chunks_by_item(rt)[key]][0] == TITLE_HEADING
    assert len(chunks_by_item(rt)[key]) == 2


def test_real_items_without_text_are_found_by_their_titles(tmp_path, pg_server, realdata):
    """DOS-2022-0004: the mirror lacks the notice's content file and the comment's attachment
    (both wait to retry); USTR-2015-0010-0015 is a withdrawn document without any file."""
    from devtools.standin_server import StandinServer

    mirror = realdata / "mirror"
    with StandinServer(mirror, api_keys=(KEY,)) as server:
        runtime = make_runtime(tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base,
                               api_key=KEY, discover="list", dockets="DOS-2022-0004,USTR-2015-0010",
                               source="mirror", mirror_url=str(mirror), extract_workers=1, ocr="false",
                               http_attempts=1, embedder="hashing")
        previous = set_runtime(runtime)
        try:
            assert run_at(1)
            chunks = chunks_by_item(runtime)
            notice = ("International Traffic in Arms: Consolidation and Restructuring of Purposes and "
                      "Definitions")
            assert chunks["DOS-2022-0004-0001"] == [(TITLE_HEADING, notice)]
            assert chunks["DOS-2022-0004-0003"] == [(TITLE_HEADING, "Comment on DOS-2022-0004-0001"),
                                                    ("Inline comment", "See attached file(s)")]
            assert chunks["USTR-2015-0010-0015"] == [(TITLE_HEADING, "China Public Hearing Agenda")]
            assert [s for s, _ in chunks["USTR-2015-0010-0016"]][:2] == [TITLE_HEADING, "content.pdf"]
            hits = search(runtime.index_db(), HashingEmbedder(), notice, collection="documents", k=1)
            assert [h.item_key for h in hits] == ["DOS-2022-0004-0001"]
        finally:
            set_runtime(previous)
            runtime.close()


def test_a_waiting_item_is_rendered_once_and_an_extracted_one_keeps_its_text_while_it_waits():
    from pipeline.extract import stage as extract
    from pipeline.store.item_states import StateRow

    def row(state, content_hash=None, fingerprint=None):
        return StateRow(item="k", state=state, content_hash=content_hash, fingerprint=fingerprint, reason=None)

    waiting = {"new": row("retry"), "old": row("retry"), "given-up": row("failed"), "done": row("ok", "h1")}
    mine = {"old": row("ok", fingerprint="rendered before"),
            "done": row("ok", fingerprint=extract.item_fingerprint("h1"))}
    assert set(extract.plan(waiting, mine, False)) == {"new", "given-up"}
    arrived = {**waiting, "old": row("ok", "h2")}  # its files came: its text replaces the title
    assert set(extract.plan(arrived, mine, False)) == {"new", "given-up", "old"}
    # A file given up past the retry horizon, its record read: failed with its detail (a content
    # hash), extracted like any item, and again when it changes; with no record, rendered once.
    with_detail = {**waiting, "old": row("failed", "h3"), "given-up": row("failed")}
    mine_then = {**mine, "given-up": row("ok", fingerprint="rendered before")}
    assert set(extract.plan(with_detail, mine_then, False)) == {"new", "old"}
    mine_now = {**mine_then, "old": row("ok", fingerprint=extract.item_fingerprint("h3"))}
    assert set(extract.plan(with_detail, mine_now, False)) == {"new"}
    # Its record stored while a file waits for the mirror (retry with a content hash): extracted
    # like any item, and again when a file arrives (its content hash names every file's bytes).
    done = {"late": row("ok", fingerprint=extract.item_fingerprint("h4"))}
    assert set(extract.plan({"late": row("retry", "h4")}, {}, False)) == {"late"}
    assert set(extract.plan({"late": row("retry", "h4")}, done, False)) == set()
    assert set(extract.plan({"late": row("retry", "h5")}, done, False)) == {"late"}
    assert set(extract.plan({"late": row("ok", "h5")}, done, False)) == {"late"}


def test_a_documents_abstract_is_its_text_and_is_indexed_without_its_content_file(rt):
    from pipeline.sources import records

    record = {"data": {"id": "EPA-HQ-OW-2026-0001-0001", "type": "documents", "attributes": {
        "title": "Water System Monitoring", "abstract": "<p>The EPA proposes quarterly monitoring &amp; "
        "reporting for small water systems.</p>"}}}
    body = records.detail_fields(record)["body"]
    assert body == "The EPA proposes quarterly monitoring & reporting for small water systems."
    comment = {"data": {"id": "X-1", "type": "comments", "attributes": {"comment": "Agreed.", "abstract": "no"}}}
    assert records.detail_fields(comment)["body"] == "Agreed."
    put_item(rt, f"{D}-0001", body, kind="document")  # its content file: none readable
    run(rt)
    # No file text: found by its title and its abstract.
    assert [text for _, text in chunks_by_item(rt)[f"{D}-0001"]] == [f"Comment {D}-0001", body]
