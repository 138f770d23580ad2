"""Sections: each rule document's text split by its structure, and each comment tied to the
sections of the document it answers.

Runs after the index (IndexAll runs it, after topics, when ``sections`` is on). Its items are
the docket's documents and comments:

* a document's fingerprint is its extracted text's content hash and the splitter's version:
  only a document whose text changed is read and split again
  (``pipeline.sections.splitter``), its sections replacing its old ones;
* a comment's is its text's hash, its index fingerprint, the document it answers (its
  ``commentOnDocumentId``, else the docket's rule document: ``queries.primary_document``) with
  that document's fingerprints, the linker's version and ``section_nearest_floor``: a comment
  is linked again when it or its document changed (``pipeline.sections.linking``).

A run with nothing new reads nothing and writes nothing.
"""

from __future__ import annotations

import logging

from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.extract.combined import DOCUMENT_HEADING, combined_sections
from pipeline.extract.stage import read_combined
from pipeline.fingerprints import digest
from pipeline.index.chunking import PAGE_MARKER
from pipeline.sections import consistency, queries
from pipeline.sections.splitter import SPLITTER_VERSION, Section, split_sections
from pipeline.store import item_states
from pipeline.store.models import Docket

log = logging.getLogger("docketeer")
STAGE = "sections"
INPUT = "extract"
LINKER_VERSION = "section-links-1"
UNDECIDED = (None, item_states.PENDING, "stale")  # extract has not decided these yet
NO_TEXT = "no text to split"


def terms(settings) -> str:
    return f"{SPLITTER_VERSION}:{LINKER_VERSION}:{settings.section_nearest_floor:g}"


def document_fingerprint(extract_hash: str | None, extract_state: str | None) -> str:
    return digest(SPLITTER_VERSION, extract_hash or "", extract_state or "")


def comment_fingerprint(extract_hash: str | None, index_fingerprint: str | None, document: str | None,
                        document_fingerprints: str, floor: float) -> str:
    return digest(LINKER_VERSION, f"{floor:g}", extract_hash or "", index_fingerprint or "", document or "",
                  document_fingerprints)


class Plan:
    """What a run of one docket does: the documents to split, the comments to link (each with
    its fingerprint and the document it answers)."""

    def __init__(self) -> None:
        self.documents: dict[str, tuple[str, str | None]] = {}  # to split: key -> (fingerprint, extract state)
        self.comments: dict[str, tuple[str, str | None]] = {}  # to link: key -> (fingerprint, document)
        self.split: set[str] = set()  # every document whose text is (or will be) split

    @property
    def empty(self) -> bool:
        return not self.documents and not self.comments


def plan(runtime, docket_id: str, floor: float, force: bool) -> Plan:
    """The run's work, from the state rows (extract's beside this stage's) and the index state."""
    out = Plan()
    rows = item_states.beside_upstream(STAGE, INPUT, docket_id, ("kind", "comment_on_document_id"))
    document_fps, comments = {}, []
    for key, extract_hash, extract_state, done_fp, done_state, kind, answers in rows:
        if kind == "document":
            if extract_state in UNDECIDED:
                continue
            fingerprint = document_fingerprint(extract_hash, extract_state)
            document_fps[key] = fingerprint
            if extract_state == "ok":
                out.split.add(key)
            if force or done_state in (None, "stale") or done_fp != fingerprint:
                out.documents[key] = (fingerprint, extract_state)
        elif kind == "comment" and extract_state not in UNDECIDED:
            comments.append((key, extract_hash, done_fp, done_state, answers))
    if not comments:
        return out
    index_db = runtime.existing_index_db()
    indexed = {c: index_db.state_for_docket(c, docket_id) if index_db is not None else {}
               for c in ("comments", "documents")}
    primary = queries.primary_document(docket_id, out.split)
    for key, extract_hash, done_fp, done_state, answers in comments:
        document = answers if answers in out.split else primary
        doc_state = indexed["documents"].get(document)
        fingerprint = comment_fingerprint(
            extract_hash, getattr(indexed["comments"].get(key), "fingerprint", None), document,
            digest(document_fps.get(document, ""), getattr(doc_state, "fingerprint", None) or ""), floor)
        if force or done_state in (None, "stale") or done_fp != fingerprint:
            out.comments[key] = (fingerprint, document)
    return out


def unfinished(runtime, docket_id: str) -> int:
    work = plan(runtime, docket_id, runtime.settings.section_nearest_floor, False)
    return len(work.documents) + len(work.comments)


def section_docket(ctx: StageContext, docket: Docket) -> StageResult:
    result = StageResult()
    work = plan(ctx.runtime, docket.id, ctx.settings.section_nearest_floor, ctx.force)
    if work.empty:
        return result
    ctx.check_time()
    ctx.progress.start(len(work.documents) + len(work.comments))
    _split_documents(ctx, docket.id, work, result)
    if work.comments:
        _link_comments(ctx, docket.id, work, result)
    return result


def document_pages(body: str) -> list[tuple[int | None, str]]:
    """The pages of a document's text to split: its content files' (the record's own text only
    when no file has any), each file's page numbers as written."""
    found = combined_sections(body, skip_placeholders=True)
    files = [(h, t) for h, t in found if h != DOCUMENT_HEADING and t.strip()]
    return [page for _, text in (files or found) for page in _pages(text)]


def _pages(text: str) -> list[tuple[int | None, str]]:
    """A file's text split at its page markers: (page number, or None before the first, text)."""
    parts = PAGE_MARKER.split(text)  # [before, n1, text1, n2, text2, ...]
    found = [(None, parts[0])] if parts[0].strip() else []
    return found + [(int(parts[i]), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def _split_documents(ctx: StageContext, docket_id: str, work: Plan, result: StageResult) -> None:
    rows = []
    for key, (fingerprint, extract_state) in sorted(work.documents.items()):
        ctx.check_time()
        state, reason = "ok", None
        if extract_state == "ok":
            _, body = read_combined(ctx.blobs, docket_id, key)
            sections = split_sections(document_pages(body))
            queries.save_sections(docket_id, key, sections)
            result.add("sections", len(sections))
            result.add("split")
        else:
            queries.clear_document(key)
            state, reason = "skipped", f"{NO_TEXT}: extract {extract_state}"
            result.add("no_text")
        rows.append({"stage": STAGE, "item": key, "docket": docket_id, "run_id": ctx.run_id, "state": state,
                     "fingerprint": fingerprint, "reason": reason})
        ctx.progress.advance("split" if state == "ok" else "skipped")
    item_states.transition_many(rows)


def stored_sections(document: str) -> list[Section]:
    return [Section(r.section, r.heading, r.text, r.page, r.parent, r.kind) for r in queries.sections_of(document)]


def _link_comments(ctx: StageContext, docket_id: str, work: Plan, result: StageResult) -> None:
    from pipeline.sections import linking

    documents = sorted({d for _, d in work.comments.values() if d})
    sections = {d: stored_sections(d) for d in documents}
    nearest = _Nearest(ctx, docket_id, sections, sorted(work.comments))
    links, rows = [], []
    for key, (fingerprint, document) in sorted(work.comments.items()):
        ctx.check_time()
        if document is None:
            rows.append(_state(ctx, docket_id, key, fingerprint, "skipped", "no document with sections to tie it to"))
            result.add("no_document")
            continue
        text = _comment_text(ctx, docket_id, key)
        cited = linking.cited_links(text, sections[document]) if text.strip() else []
        near = nearest.links(key, document)
        links += [{"comment": key, "docket": docket_id, "document": document, "kind": "cited", "similarity": None,
                   **link} for link in cited]
        links += [{"comment": key, "docket": docket_id, "document": document, "kind": "nearest", "citation": None,
                   **link} for link in near]
        rows.append(_state(ctx, docket_id, key, fingerprint, "ok"))
        for outcome, n in (("cited", sum(1 for c in cited if c["section"])),
                           ("unmatched", sum(1 for c in cited if not c["section"])), ("nearest", len(near))):
            if n:
                result.add(outcome, n)
    queries.replace_links(sorted(work.comments), links)
    item_states.transition_many(rows)
    result.add("linked", sum(1 for r in rows if r["state"] == "ok"))
    ctx.progress.advance("linked", len(rows))


def _state(ctx, docket_id: str, key: str, fingerprint: str, state: str, reason: str | None = None) -> dict:
    return {"stage": STAGE, "item": key, "docket": docket_id, "run_id": ctx.run_id, "state": state,
            "fingerprint": fingerprint, "reason": reason}


def _comment_text(ctx: StageContext, docket_id: str, key: str) -> str:
    try:
        _, body = read_combined(ctx.blobs, docket_id, key)
    except (FileNotFoundError, KeyError):
        return ""
    return "\n\n".join(text for _, text in combined_sections(body, skip_placeholders=True))


class _Nearest:
    """The index's vectors of the comments to link and of the documents they answer, each
    document passage placed in its section (read once per run)."""

    def __init__(self, ctx: StageContext, docket_id: str, sections: dict[str, list[Section]],
                 comments: list[str]) -> None:
        from collections import defaultdict

        from pipeline.sections import linking

        self.floor = ctx.settings.section_nearest_floor
        index_db = ctx.runtime.existing_index_db()
        self.comments: dict[str, list] = defaultdict(list)
        self.documents: dict[str, tuple[list, list]] = {}
        if index_db is None or not sections:
            return
        by_document = defaultdict(list)
        for key, _, text, vector in index_db.passage_vectors("documents", docket_id, sorted(sections)):
            by_document[key].append((text, vector))
        for document, passages in by_document.items():
            self.documents[document] = ([v for _, v in passages],
                                        linking.passage_sections([t for t, _ in passages], sections[document]))
        for key, _, text, vector in index_db.passage_vectors("comments", docket_id, comments):
            self.comments[key].append((text, vector))

    def links(self, comment: str, document: str) -> list[dict]:
        from pipeline.sections import linking

        vectors, placed = self.documents.get(document, ([], []))
        return linking.nearest_links(self.comments.get(comment, []), vectors, placed, self.floor)


# --- the declaration ---------------------------------------------------------------------------

DECLARATION = Stage(
    name=STAGE, upstream="index", run=section_docket, task="DocumentSections", wrapper="DocumentSectionsAll",
    doc="The docket's documents split into their sections; each comment tied to the sections it cites or is nearest.",
    unfinished=lambda runtime, docket_id, now: unfinished(runtime, docket_id),
    input=INPUT, terms=terms, atomic=True, rows_agree=consistency.problems,
    # The documents' and comments' vectors: its marker vouches for extract's output, so it is
    # written only while the index, too, says it is done.
    reads=("index",),
)
