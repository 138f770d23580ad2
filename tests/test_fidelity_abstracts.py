"""Issue #15, Deliver 4: an item whose files give no text (missing, failed, not yet
backfilled) is indexed by its title and its abstract or body; when a file's text arrives,
that item alone is re-indexed by it (its content hash decides; nothing else is redone)."""

from __future__ import annotations

import hashlib

from pipeline.extract.combined import DOCUMENT_HEADING, INLINE_HEADING, render_combined
from pipeline.extract.readers import AttachmentText
from pipeline.stages.extract import combined_key
from pipeline.stages.index import TITLE_HEADING
from pipeline.store import item_states
from pipeline.store.models import Item
from tests.test_index_stage import D, put_item, rt, run  # noqa: F401
from tests.test_title_only_index import chunks_by_item

NOTICE = f"{D}-0001"
TITLE = "Water System Monitoring"
ABSTRACT = "The EPA proposes quarterly monitoring and reporting for small water systems."
RULE_TEXT = "Section 141.21: each system serving fewer than 3,300 persons samples quarterly."


def extracted(rt, key: str, kind: str, inline: str, files: list[AttachmentText], sources: str) -> None:  # noqa: F811
    """combined.md as extract renders it, with the files' outcomes, and its extract row."""
    data = render_combined(comment_id=key, docket_id=D, inline_text=inline, attachments=files,
                           sources_fingerprint=sources, extractor_version="extract-4", kind=kind)
    rt.blobs.put_bytes(combined_key(D, key), data)
    item_states.transition("extract", key, D, "ok", run_id="seed", fingerprint=sources,
                           content_hash=hashlib.sha256(data).hexdigest())


def titled(key: str, title: str) -> None:
    Item.update(title=title).where(Item.key == key).execute()


def test_a_document_without_file_text_is_found_by_title_and_abstract_until_its_file_arrives(rt):  # noqa: F811
    put_item(rt, NOTICE, "", kind="document")
    titled(NOTICE, TITLE)
    others = [f"{D}-00{n:02d}" for n in range(2, 5)]
    for key in others:
        put_item(rt, key, f"Plain comment {key} about monitoring costs.")
    missing = AttachmentText("content.pdf", "failed", "the mirror has no content.pdf yet")
    extracted(rt, NOTICE, "document", ABSTRACT, [missing], "s1")
    assert run(rt)[0].counts == {"embedded": 4}
    assert chunks_by_item(rt)[NOTICE] == [(TITLE_HEADING, TITLE), (DOCUMENT_HEADING, ABSTRACT)]
    # A comment without attachments is its body, as always: no title chunk.
    assert [section for section, _ in chunks_by_item(rt)[others[0]]] == [INLINE_HEADING]

    arrived = AttachmentText("content.pdf", "ok", "", len(RULE_TEXT), 1, RULE_TEXT)
    extracted(rt, NOTICE, "document", ABSTRACT, [arrived], "s2")
    result, _ = run(rt)
    # The notice alone; the others are skipped by their fingerprints, none of them read.
    assert result.counts == {"embedded": 1, "unchanged": 3}
    assert chunks_by_item(rt)[NOTICE] == [(DOCUMENT_HEADING, ABSTRACT), ("content.pdf", RULE_TEXT)]
    assert run(rt)[0].counts == {"unchanged": 4}  # and then nothing is redone


def test_a_comment_whose_attachment_failed_is_found_by_title_and_body(rt):  # noqa: F811
    key = f"{D}-0009"
    put_item(rt, key, "")
    titled(key, "Wisconsin Department of Children & Families")
    failed = AttachmentText("attachment_1.pdf", "failed", "not a PDF: truncated")
    extracted(rt, key, "comment", "See attached file(s)", [failed], "s1")
    run(rt)
    assert chunks_by_item(rt)[key] == [(TITLE_HEADING, "Wisconsin Department of Children & Families"),
                                       (INLINE_HEADING, "See attached file(s)")]
