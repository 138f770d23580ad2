"""An item whose files give no text (missing, failed, not yet
backfilled) is indexed by its title and its abstract or body; when a file's text arrives,
that item alone is re-indexed by it (its content hash decides; nothing else is redone)."""

from __future__ import annotations

import hashlib
import shutil

from pipeline.extract.combined import DOCUMENT_HEADING, INLINE_HEADING, render_combined
from pipeline.extract.readers import AttachmentText
from pipeline.extract.stage import combined_key
from pipeline.index.stage import TITLE_HEADING
from pipeline.store import item_states
from pipeline.store.models import Item
from tests.fixtures.index_inputs import D, chunks_by_item, put_item, run

NOTICE = f"{D}-0001"
TITLE = "Water System Monitoring"
ABSTRACT = "The EPA proposes quarterly monitoring and reporting for small water systems."
RULE_TEXT = "Section 141.21: each system serving fewer than 3,300 persons samples quarterly."


def extracted(rt, key: str, kind: str, inline: str, files: list[AttachmentText], sources: str) -> None:
    """combined.md as extract renders it, with the files' outcomes, and its extract row."""
    data = render_combined(comment_id=key, docket_id=D, inline_text=inline, attachments=files,
                           sources_fingerprint=sources, extractor_version="extract-4", kind=kind)
    rt.blobs.put_bytes(combined_key(D, key), data)
    item_states.transition("extract", key, D, "ok", run_id="seed", fingerprint=sources,
                           content_hash=hashlib.sha256(data).hexdigest())


def titled(key: str, title: str) -> None:
    Item.update(title=title).where(Item.key == key).execute()


def test_a_document_without_file_text_is_found_by_title_and_abstract_until_its_file_arrives(rt):
    put_item(rt, NOTICE, "", kind="document")
    titled(NOTICE, TITLE)
    others = [f"{D}-00{n:02d}" for n in range(2, 5)]
    for key in others:
        put_item(rt, key, f"Plain comment {key} about monitoring costs.")
    missing = AttachmentText("content.pdf", "failed", "the mirror has no content.pdf yet")
    extracted(rt, NOTICE, "document", ABSTRACT, [missing], "s1")
    assert run(rt)[0].counts == {"embedded": 4}
    # The title is a section of its own, then the item's own: its abstract, or a comment's body.
    assert chunks_by_item(rt)[NOTICE] == [(TITLE_HEADING, TITLE), (DOCUMENT_HEADING, ABSTRACT)]
    assert chunks_by_item(rt)[others[0]] == [(TITLE_HEADING, f"Comment {others[0]}"),
                                             (INLINE_HEADING, f"Plain comment {others[0]} about monitoring costs.")]

    arrived = AttachmentText("content.pdf", "ok", "", len(RULE_TEXT), 1, RULE_TEXT)
    extracted(rt, NOTICE, "document", ABSTRACT, [arrived], "s2")
    result, _ = run(rt)
    # The notice alone; the others are skipped by their fingerprints, none of them read.
    assert result.counts == {"embedded": 1, "unchanged": 3}
    assert chunks_by_item(rt)[NOTICE] == [(TITLE_HEADING, TITLE), (DOCUMENT_HEADING, ABSTRACT),
                                          ("content.pdf", RULE_TEXT)]
    assert run(rt)[0].counts == {"unchanged": 4}  # and then nothing is redone


def test_a_comment_whose_attachment_failed_is_found_by_title_and_body(rt):
    key = f"{D}-0009"
    put_item(rt, key, "")
    titled(key, "Wisconsin Department of Children & Families")
    failed = AttachmentText("attachment_1.pdf", "failed", "not a PDF: truncated")
    extracted(rt, key, "comment", "See attached file(s)", [failed], "s1")
    run(rt)
    assert chunks_by_item(rt)[key] == [(TITLE_HEADING, "Wisconsin Department of Children & Families"),
                                       (INLINE_HEADING, "See attached file(s)")]


def test_a_real_notice_without_its_content_file_is_found_by_title_and_abstract(tmp_path, pg_server, realdata):
    """Through the real chain (stand-in API over a copy of the real ACF mirror folder): the
    notice's content PDF is not in the mirror yet. Backfill waits for it, yet stores what the
    record says, so the notice is indexed by its title and its abstract (`docAbstract`) and
    found by a phrase of it. The PDF arrives: the notice alone is redone, found by its text."""
    from devtools.standin_server import StandinServer
    from pipeline.counters import COMBINED_READS, counters
    from pipeline.index.embedders import HashingEmbedder
    from pipeline.index.search import search
    from pipeline.runtime import set_runtime
    from pipeline.store.models import ItemState
    from tests.fixtures.chain_runs import KEY, run_at
    from tests.fixtures.real_records import ACF_ABSTRACT, ITEMS
    from tests.fixtures.state_fixtures import make_runtime, new_pg_database

    acf, notice, comment = "ACF-2025-0038", "ACF-2025-0038-0001", "ACF-2025-0038-0004"
    mirror = tmp_path / "mirror"
    shutil.copytree(realdata / "mirror/raw-data/ACF", mirror / "raw-data/ACF")
    pdf = mirror / f"raw-data/ACF/{acf}/binary-{acf}/documents_attachments/{notice}_content.pdf"
    held = tmp_path / "held.pdf"
    pdf.rename(held)
    with StandinServer(mirror, api_keys=(KEY,)) as server:
        runtime = make_runtime(tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base,
                               api_key=KEY, discover="list", dockets=acf, source="mirror", mirror_url=str(mirror),
                               extract_workers=1, ocr="false", http_attempts=1, embedder="hashing")
        previous = set_runtime(runtime)
        try:
            run_at(1)
            waiting = ItemState.get(ItemState.stage == "backfill", ItemState.item == notice)
            assert (waiting.state, waiting.detail) == ("retry", "transient")
            stored = Item.get_by_id(notice)
            assert (stored.body, stored.received_date) == (ACF_ABSTRACT, ITEMS[notice][3])
            title = ITEMS[notice][1]
            assert chunks_by_item(runtime)[notice] == [(TITLE_HEADING, title), (DOCUMENT_HEADING, ACF_ABSTRACT.strip())]
            hits = search(runtime.index_db(), HashingEmbedder(), "Title IV-E Prevention Services Clearinghouse",
                          collection="documents", k=1)
            assert [h.item_key for h in hits] == [notice]
            before = chunks_by_item(runtime)[comment]
            run_at(3)  # the retry comes due, the file is still missing: the record changes no row
            assert ItemState.get(ItemState.stage == "backfill", ItemState.item == notice).attempts == 2
            assert Item.get_by_id(notice).updated_at == stored.updated_at

            held.rename(pdf)  # the mirror catches up; the retry comes due within the day
            with counters.measure() as io:
                run_at(30)
            assert ItemState.get(ItemState.stage == "backfill", ItemState.item == notice).state == "ok"
            sections = [section for section, _ in chunks_by_item(runtime)[notice]]
            assert sections[:2] == [TITLE_HEADING, DOCUMENT_HEADING] and "content.pdf" in sections
            # The index reads it alone; campaigns reads it too (a document's text is left out of
            # every comment) and places the docket's one comment again against it; sections
            # splits it and links that comment again.
            assert io.get(COMBINED_READS) == 5 and chunks_by_item(runtime)[comment] == before
            with counters.measure() as io:
                run_at(31)
            assert io.get(COMBINED_READS, 0) == 0  # and then nothing is redone
        finally:
            set_runtime(previous)
            runtime.close()
