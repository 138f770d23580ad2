"""``docketeer export DEST [--docket D] [--format parquet|csv]``: each docket's comments,
attachments and campaigns as files that DuckDB, pandas and spreadsheets read directly.

``DEST/<docket>/comments.parquet`` (or ``.csv``), ``attachments.*``, ``campaigns.*``, ``sections.*``, ``positions.*`` and ``comment_organisations.*``,
with ``DEST/README.txt`` describing every column. A docket is rewritten only when its data
changed since its last export there: ``DEST/<docket>/export.json`` keeps the fingerprint of
the state rows the files were made from (items, attachments, extract, OCR and campaign
rows), read from the state DB alone, so an unchanged docket costs no file read or write. The
texts come from each comment's ``combined.md`` (OCR's text merged in), its page markers
written as form feeds. Each file
is written beside its final name and renamed over it (a reader never sees half a file);
``export.json`` is written last, so an interrupted export is redone by the next one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.clock import eastern_date
from pipeline.counters import COMBINED_READS, counters
from pipeline.errors import DocketeerError
from pipeline.fingerprints import RecordsDigest
from pipeline.reading import campaigns, lineage, organisations, positions, reports, sections, topics
from pipeline.reading.comments import combined_sections, parse_combined
from pipeline.reading.lineage import phase_of
from pipeline.sources import records
from pipeline.store import dockets, item_states, items
from pipeline.store.blobs import combined_key
from pipeline.store.documents import documents_of

# 8: text_chars is the length of the text column beside it; 9: sections, and the sections each comment cites;
# 10: each comment's position (position, position_source, position_probability) and positions, the shares;
# 11: the language-model judge's evidence for each comment (position_evidence) and whether that quote was
# found in the comment's text (position_quote); position_source may be llm
EXPORT_VERSION = "export-11"
FORMATS = ("parquet", "csv")
MANIFEST = "export.json"
EXPORT_FILES_WRITTEN = "export_files_written"
TEXT_STAGES = ("extract", "extract.file", "ocr", "backfill.file")

# table -> (column, pyarrow type name, what it is): the one description of the files, used
# for the schemas and for README.txt.
COLUMNS: dict[str, list[tuple[str, str, str]]] = {
    "comments": [
        ("docket_id", "string", "the docket"),
        ("comment_id", "string", "regulations.gov comment id"),
        ("title", "string", "the comment's title"),
        ("object_id", "string", "regulations.gov object id"),
        ("comment_on_document_id", "string", "the document it comments on"),
        ("posted_date", "string", "when regulations.gov posted it (ISO 8601, UTC)"),
        ("received_date", "string", "when the agency received it (ISO 8601, UTC)"),
        ("last_modified", "string", "regulations.gov's last modification (ISO 8601, UTC)"),
        ("withdrawn", "bool_", "withdrawn by the agency"),
        ("submitter", "string", "the submitter's name as given"),
        ("organization", "string", "the submitter's organisation"),
        ("body", "string", "the inline comment text (plain text)"),
        ("duplicate_comments", "int64", "more submissions this record stands for (a mass-mail campaign's)"),
        ("submissions", "int64", "submissions it represents: 1 + duplicate_comments"),
        ("subtype", "string", "the record's subtype (Public Comment, Mass Mail Campaign, ...)"),
        ("category", "string", "the agency's category of the commenter"),
        ("state_province_region", "string", "the submitter's state, province or region"),
        ("country", "string", "the submitter's country"),
        ("gov_agency", "string", "the submitting government agency"),
        ("gov_agency_type", "string", "its type (Federal, State, Local, Tribal, ...)"),
        ("tracking_nbr", "string", "regulations.gov tracking number"),
        ("city", "string", "the submitter's city"),
        ("submitter_rep", "string", "who submitted it on the submitter's behalf"),
        ("reason_withdrawn", "string", "why the agency withdrew it, as its record says"),
        ("restrict_reason", "string", "why the agency restricts its content, as its record says"),
        ("restrict_reason_type", "string", "the kind of restriction (its record's restrictReasonType)"),
        ("page_count", "int64", "pages regulations.gov counts in its content file, as its record says"),
        ("attachment_count", "int64", "files its record declares (empty: the record does not list them)"),
        ("text_state", "string", "extraction outcome: ok, ocr_needed, failed, ..."),
        ("text_chars", "int64", "characters in text, as exported (0: no text; empty: its text file unreadable)"),
        ("text", "string", "its whole text: the body, then each attachment's text (OCR's for a scan), "
                           "a blank line between them; a page break is a form feed (\\f) on a line of its own"),
        ("campaign_id", "string", "its campaign group: the earliest member's comment id"),
        ("campaign_size", "int64", "comments in that group (1: a comment of its own)"),
        ("campaign_submissions", "int64", "submissions that group represents (duplicates counted)"),
        ("organisation_id", "string", "its organisation, the same across spellings and dockets (a digest of its "
                                      "name); the first when it names several (comment_organisations has each)"),
        ("organisation", "string", "that organisation's canonical name"),
        ("organisation_count", "int64", "organisations it names (\"AMA and AHA\": 2; empty: not resolved or none)"),
        ("answers_document", "string", "the document it answers (its record's commentOnDocumentId), as lineage tied it"),
        ("answers_phase", "string", "that document's phase of the rule: notice, proposed, final, supporting, "
                                    "other, unknown"),
        ("topic_id", "string", "its main topic on the docket's topic map (empty: unplaced, or no map)"),
        ("sections", "string", "the sections of the document it answers that it cites (section ids as in "
                               "sections, \"II.B\", \"§200.1\", \"q3\"), one per line (empty: none)"),
        ("position", "string", "its position: support, oppose, mixed, no_position, off_topic (empty: the docket "
                               "has no positions yet, or the classifier is not fitted and it is not coded)"),
        ("position_source", "string", "where it comes from: coded (an analyst's code), campaign (a coded member "
                                      "of its campaign's), llm (the language-model judge's) or model (the "
                                      "classifier's)"),
        ("position_probability", "float64", "the classifier's probability of that position (1.0: coded; empty: "
                                            "the judge's, which gives none)"),
        ("position_evidence", "string", "the language-model judge's quote of the comment (its campaign's letter) "
                                        "that shows its position, also beside a code (empty: no judge)"),
        ("position_quote", "string", "checked (the quote stands in the comment's text) or flagged (it does not: "
                                     "the judge's words, not the comment's)"),
    ],
    "comment_organisations": [
        ("docket_id", "string", "the docket"),
        ("comment_id", "string", "the comment"),
        ("position", "int64", "the organisation's place in the comment's field (0 first)"),
        ("organisation_id", "string", "the organisation, the same across spellings and dockets"),
        ("organisation", "string", "its canonical name"),
    ],
    "attachments": [
        ("docket_id", "string", "the docket"),
        ("comment_id", "string", "the comment it is attached to"),
        ("filename", "string", "attachment_1.pdf, ..."),
        ("ordinal", "int64", "its place among the comment's files"),
        ("title", "string", "the attachment's title"),
        ("format", "string", "file format (pdf, docx, ...)"),
        ("declared_size", "int64", "size regulations.gov declares, bytes"),
        ("url", "string", "where it is downloaded from (or its mirror object)"),
        ("size", "int64", "size of the stored file, bytes (empty: not stored)"),
        ("sha256", "string", "sha256 of the stored file (empty: not stored)"),
        ("state", "string", "once stored, the final extraction outcome (ok, ocr_needed, failed, unsupported, "
                            "stored; a scan OCR read: OCR's outcome); else waiting, gone, too_large or failed"),
        ("reason", "string", "why, when not ok"),
        ("text_chars", "int64", "characters in text, as exported (0: no text; empty: not extracted)"),
        ("text", "string", "its extracted text (empty: none); a page break is a form feed (\\f) on a line of its own"),
    ],
    "rule_phases": [
        ("docket_id", "string", "the docket"),
        ("rin", "string", "the docket's Regulation Identifier Number (empty: its record gives none)"),
        ("document_id", "string", "one of its documents"),
        ("document_type", "string", "Notice, Proposed Rule, Rule, Supporting & Related Material, ..."),
        ("phase", "string", "the rule's phase it stands for: notice, proposed, final, supporting, other, unknown"),
        ("posted_date", "string", "when it was posted (YYYY-MM-DD, US Eastern)"),
        ("comment_start_date", "string", "its comment window's first day (YYYY-MM-DD, US Eastern)"),
        ("comment_end_date", "string", "its comment window's deadline day (YYYY-MM-DD, US Eastern)"),
        ("fr_doc_num", "string", "its Federal Register document number"),
        ("comments", "int64", "comments tied to it"),
    ],
    "sections": [
        ("docket_id", "string", "the docket"),
        ("document_id", "string", "the rule document"),
        ("section_id", "string", "the section, stable across re-extraction: its number path (\"II.B\", "
                                 "\"§200.1\", \"q1.a\") or its heading's (\"background\"); \"~2\": its second use"),
        ("ordinal", "int64", "its place in the document's reading order"),
        ("heading", "string", "its heading as printed"),
        ("page", "int64", "the page its heading is on"),
        ("parent", "string", "the section it is part of (empty: none)"),
        ("kind", "string", "roman, upper, arabic, lower, paren_lower, paren_digit, part, section, named, "
                           "caption, front, other (another document on the same Federal Register page), text"),
        ("text", "string", "its own text (its subsections' not included)"),
        ("cited_by", "int64", "comments citing it"),
        ("cited_by_submissions", "int64", "the submissions those comments stand for"),
        ("nearest", "int64", "comments with a passage nearest it (cosine at least section_nearest_floor)"),
        ("nearest_submissions", "int64", "the submissions those comments stand for"),
    ],
    "positions": [
        ("docket_id", "string", "the docket"),
        ("measure", "string", "what is shared out: comments, or submissions (a mass-mail record's duplicates "
                              "counted)"),
        ("estimate", "string", "design (the coded comments as a random sample) or model (every comment's "
                               "position, the classifier's counts corrected); method says how"),
        ("position", "string", "support, oppose, mixed, no_position, off_topic"),
        ("share", "float64", "its estimated share of the docket's comments or submissions"),
        ("low", "float64", "the 95% interval's low end"),
        ("high", "float64", "its high end"),
        ("total", "int64", "the docket's comments or submissions with a position"),
        ("method", "string", "the estimate's method, as `docketeer positions D` describes it (no rows: "
                             "not estimated yet)"),
    ],
    "campaigns": [
        ("docket_id", "string", "the docket"),
        ("campaign_id", "string", "the earliest member's comment id"),
        ("size", "int64", "member comments"),
        ("submissions", "int64", "submissions its members represent (duplicates counted)"),
        ("representative_id", "string", "the most central member"),
        ("representative_text", "string", "its text; a page break of its file is a form feed (\\f) on a line of its own"),
        ("first_seen", "string", "earliest member's posted date"),
        ("last_seen", "string", "latest member's posted date"),
    ],
    "topics": [
        ("docket_id", "string", "the docket"),
        ("topic_id", "string", "the topic, kept across re-clusterings where the topic matches"),
        ("label", "string", "its distinctive terms (class-based TF-IDF), joined"),
        ("terms", "string", "its distinctive terms, most distinctive first, one per line"),
        ("comments", "int64", "comments whose main topic it is (a campaign's copies each counted)"),
        ("submissions", "int64", "those comments weighted by their campaign's submissions"),
        ("organisations", "int64", "distinct organisations among them"),
        ("share", "float64", "its submissions' share of the docket's"),
        ("first_seen", "string", "earliest member's posted date"),
        ("last_seen", "string", "latest member's posted date"),
        ("representative_ids", "string", "the comments of its representative passages, one per line"),
        ("representative_texts", "string", "those passages, separated by a form feed (\\f)"),
    ],
}


class ExportError(DocketeerError):
    pass


@dataclass
class ExportReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def export(runtime, dest: Path, docket_ids: list[str] | None = None,
           formats: tuple[str, ...] = FORMATS) -> ExportReport:
    """Export the named dockets (default: every known one) into ``dest``."""
    unknown = [d for d in docket_ids or [] if dockets.get_docket(d) is None]
    if unknown:
        raise ExportError(f"unknown docket(s): {', '.join(unknown)}")
    if bad := [f for f in formats if f not in FORMATS]:
        raise ExportError(f"unknown format(s) {', '.join(bad)}; one of: {', '.join(FORMATS)}")
    require_pyarrow()
    chosen = docket_ids or dockets.all_docket_ids()
    check_destination(runtime, dest, chosen)
    dest.mkdir(parents=True, exist_ok=True)
    remove_leftover_temporaries(dest, ["README.txt"])
    _write_if_changed(dest / "README.txt", readme().encode())
    report = ExportReport()
    for docket_id in chosen:
        done = export_docket(runtime, dest / docket_id, docket_id, formats)
        (report.written if done else report.unchanged).append(docket_id)
    return report


EXTRA = "export"  # setup.cfg's extra that installs pyarrow, which writes both formats


def require_pyarrow() -> None:
    """ExportError, before anything is written, when pyarrow is not installed (an extra)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ExportError(f"export needs pyarrow, which is not installed: pip install 'docketeer[{EXTRA}]'") from None


def check_destination(runtime, dest: Path, docket_ids: list[str]) -> None:
    """ExportError, before anything is written, for a destination inside the data folder or
    the local blob folder (its files would be the store's: ``verify`` then finds orphan
    blobs, a purge could delete them) and for a symbolic link where export writes (a docket's
    folder or a file in it): export never writes through one, out of DEST."""
    where = dest.resolve()
    stores = [runtime.data_dir]
    blob_url = runtime.settings.blob_url
    if blob_url and "://" not in blob_url.replace("file://", "", 1):
        stores.append(Path(blob_url.removeprefix("file://")))
    for store in stores:
        store = store.resolve()
        if where == store or where.is_relative_to(store):
            raise ExportError(f"{dest} is inside the store's folder {store}: export to a folder of its own")
    for docket_id in docket_ids:
        folder = dest / docket_id
        links = [folder] if folder.is_symlink() else []
        if folder.is_dir() and not folder.is_symlink():
            links += [p for p in folder.iterdir() if p.is_symlink()]
        links += [p for p in (dest / "README.txt",) if p.is_symlink()]
        if links:
            raise ExportError(f"{links[0]} is a symbolic link: export never writes through one "
                              "(remove it, or export to another folder)")
    _refuse_other_kinds(dest, docket_ids)


def _refuse_other_kinds(dest: Path, docket_ids: list[str]) -> None:
    """ExportError for a FIFO, socket, device or folder where export reads or writes a file
    (reading a FIFO would wait for ever), and for anything but a folder where a folder goes."""
    import stat

    def kind(path: Path) -> int | None:
        try:
            return os.lstat(path).st_mode
        except FileNotFoundError:
            return None

    folders = [dest] + [dest / d for d in docket_ids]
    for folder in folders:
        mode = kind(folder)
        if mode is not None and not stat.S_ISDIR(mode):
            raise ExportError(f"{folder} is not a folder: export to a folder of its own")
    files = [dest / "README.txt"] + [dest / d / name for d in docket_ids for name in _written_names()]
    for path in files:
        mode = kind(path)
        if mode is not None and not stat.S_ISREG(mode):
            raise ExportError(f"{path} is not a regular file (a FIFO, a socket, a device or a folder): "
                              "export writes only files (remove it, or export to another folder)")


def _written_names() -> list[str]:
    """The names export writes in a docket's folder."""
    return [MANIFEST] + [f"{table}.{fmt}" for table in COLUMNS for fmt in FORMATS]


def export_docket(runtime, folder: Path, docket_id: str, formats: tuple[str, ...]) -> bool:
    """Write the docket's files unless their fingerprint is the one exported there last."""
    fingerprint = docket_fingerprint(docket_id, formats)
    manifest = folder / MANIFEST
    if manifest.exists() and _manifest_fingerprint(manifest) == fingerprint:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    remove_leftover_temporaries(folder, _written_names())
    for name, rows in docket_tables(runtime, docket_id).items():
        for fmt in formats:
            _write_table(folder / f"{name}.{fmt}", name, rows, fmt)
    _atomic_write(manifest, json.dumps({"docket": docket_id, "fingerprint": fingerprint,
                                        "formats": list(formats), "version": EXPORT_VERSION},
                                       indent=2).encode())
    return True


def _manifest_fingerprint(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        return None  # unreadable: export again


def docket_fingerprint(docket_id: str, formats: tuple[str, ...]) -> str:
    """Every state row the files are made from, from the state DB alone."""
    digest = RecordsDigest()
    digest.add(EXPORT_VERSION, *formats)
    for item in items.docket_items(docket_id):
        digest.add(*(str(getattr(item, f.name)) for f in item._meta.sorted_fields))
    for key, files in sorted(items.docket_attachments(docket_id).items()):
        for a in files:
            digest.add(key, a.filename, str(a.ordinal), a.title or "", a.format or "",
                       str(a.declared_size), str(a.size), a.sha256 or "", a.source_url or "")
    for stage in TEXT_STAGES:
        for key, row in sorted(item_states.states_for_docket(stage, docket_id).items()):
            digest.add(stage, key, row.state, row.content_hash or "", row.reason or "", row.detail or "")
    for key, (campaign, size) in sorted(campaigns.docket_membership(docket_id).items()):
        digest.add(key, campaign, str(size))
    for c in campaigns.docket_campaigns(docket_id):
        digest.add(c.id, c.representative, c.first_seen or "", c.last_seen or "")
    for key, named in sorted(organisations.docket_organisations(docket_id).items()):
        digest.add(key, *(part for pair in named for part in pair))
    digest.add("rin", (dockets.get_docket(docket_id).rin or "") if dockets.get_docket(docket_id) else "")
    for d in documents_of([docket_id]):
        digest.add(d.document, *(str(getattr(d, c)) for c in DOCUMENT_COLUMNS))
    for key, (document, phase) in sorted(lineage.docket_ties(docket_id).items()):
        digest.add(key, document or "", phase)
    for key, topic in sorted(topics.docket_topic_of(docket_id).items()):
        digest.add(key, topic or "")
    for row in sections.sections_of_docket(docket_id):
        digest.add(*(str(row[k]) for k in sorted(row)))
    for key, cited in sorted(sections.cited_sections_of_docket(docket_id).items()):
        digest.add(key, *cited)
    for key, found in sorted(positions.docket_positions(docket_id).items()):
        digest.add(key, *(str(part) for part in found))
    digest.add("positions", json.dumps(positions.figures(docket_id)["estimates"], sort_keys=True))
    for t in topics.topics_of(docket_id):
        digest.add(t.id, t.label, str(t.comments), str(t.submissions), str(t.organisations), str(t.share),
                   t.first_seen or "", t.last_seen or "", *(r["item"] + r["text"] for r in t.representatives))
    return digest.hexdigest()


def docket_tables(runtime, docket_id: str) -> dict[str, list[dict]]:
    comments = items.docket_items(docket_id)
    files = items.docket_attachments(docket_id)
    texts = item_states.states_for_docket("extract", docket_id)
    file_states = item_states.states_for_docket("extract.file", docket_id)
    ocr_states = item_states.states_for_docket("ocr", docket_id)
    downloads = item_states.states_for_docket("backfill.file", docket_id)
    membership = campaigns.docket_membership(docket_id)
    resolved = organisations.docket_organisations(docket_id)
    ties = lineage.docket_ties(docket_id)
    topic_of = topics.docket_topic_of(docket_id)
    cited = sections.cited_sections_of_docket(docket_id)
    position_of = positions.docket_positions(docket_id)
    read = _texts(runtime, docket_id, [c.key for c in comments if c.key in texts])
    represented: dict[str, int] = {}  # campaign -> submissions its members stand for
    for c in comments:
        if c.key in membership:
            campaign = membership[c.key][0]
            represented[campaign] = represented.get(campaign, 0) + 1 + (c.duplicate_comments or 0)
    comment_rows = [_comment_row(docket_id, c, files.get(c.key, []), texts.get(c.key),
                                 read.get(c.key), membership.get(c.key), represented,
                                 resolved.get(c.key, []), ties.get(c.key, (None, None)), topic_of.get(c.key),
                                 cited.get(c.key, []), position_of.get(c.key, (None,) * 5))
                    for c in comments]
    keys = {c.key for c in comments}
    attachment_rows = []
    for key in sorted(files):
        if key not in keys:
            continue
        for a in files[key]:
            file_key = f"{a.item}/{a.filename}"
            ocr = reports.ocr_in_force(ocr_states.get(file_key), texts.get(a.item))
            standing = reports.file_standing(a, downloads.get(file_key), file_states.get(file_key), ocr)
            text = read[key].files.get(a.filename) if key in read else None
            attachment_rows.append(_attachment_row(docket_id, a, standing, text))
    return {"comments": comment_rows, "attachments": attachment_rows,
            "rule_phases": _rule_phase_rows(docket_id),
            "campaigns": [_campaign_row(docket_id, c, represented) for c in campaigns.campaigns_of(docket_id, min_size=1)],
            "topics": [_topic_row(docket_id, t) for t in topics.topics_of(docket_id)],
            "sections": [{"docket_id": docket_id, "document_id": row["document"], "section_id": row["section"],
                          **{k: v for k, v in row.items() if k not in ("document", "section")}}
                         for row in sections.sections_of_docket(docket_id)],
            "positions": [{"docket_id": docket_id, **row}
                          for row in positions.share_rows(positions.figures(docket_id)["estimates"])],
            "comment_organisations": [
                {"docket_id": docket_id, "comment_id": key, "position": position,
                 "organisation_id": organisation, "organisation": name}
                for key in sorted(resolved) if key in keys
                for position, (organisation, name) in enumerate(resolved[key])]}


DOCUMENT_COLUMNS = ("document_type", "fr_doc_num", "posted_at", "start", "end")


def _rule_phase_rows(docket_id: str) -> list[dict]:
    """The docket's documents, each with its phase, window and the comments tied to it."""
    docket = dockets.get_docket(docket_id)
    tied = lineage.comments_per_document([docket_id])
    return [{"docket_id": docket_id, "rin": docket.rin if docket else None, "document_id": d.document,
             "document_type": d.document_type, "phase": phase_of(d.document_type),
             "posted_date": eastern_date(d.posted_at) or None, "comment_start_date": d.start,
             "comment_end_date": d.end, "fr_doc_num": d.fr_doc_num, "comments": tied.get(d.document, 0)}
            for d in documents_of([docket_id])]


def text_chars(text: str | None) -> int:
    """The ``text_chars`` column: the length of the ``text`` column beside it, as exported
    (page breaks as form feeds, parts joined), so ``length(text)`` agrees with it; extract's
    own figure counts its markdown (page markers, headings) and is not it."""
    return len(text or "")


@dataclass
class FileText:
    text: str | None  # None: the file gave no text (a placeholder stands in its section)

    @property
    def chars(self) -> int:
        return text_chars(self.text)


@dataclass
class ItemText:
    text: str | None
    files: dict[str, FileText]

    @property
    def chars(self) -> int:
        return text_chars(self.text)


def _texts(runtime, docket_id: str, keys: list[str]) -> dict[str, ItemText]:
    """comment -> its text and each attachment's, from its combined.md: the texts from its
    sections with page markers made form feeds (a missing or broken file: no text, no figures)."""
    found: dict[str, ItemText] = {}
    for key in keys:
        counters.incr(COMBINED_READS)
        try:
            front, body = parse_combined(runtime.blobs.get(combined_key(docket_id, key)))
        except Exception:  # noqa: BLE001 - a missing or broken file: the figures stay empty
            continue
        sections = dict(combined_sections(body, skip_placeholders=True))  # those with text
        heading_of_body = next(iter(combined_sections(body)), (None, ""))[0]  # Inline comment
        files = {}
        for entry in front.get("attachments") or []:
            name = entry.get("file")
            text = page_breaks(sections[name]) if name in sections else None
            files[name] = FileText(text or None)
        parts = [page_breaks(sections[heading_of_body])] if heading_of_body in sections else []
        parts += [f.text for f in files.values() if f.text]
        found[key] = ItemText("\n\n".join(p for p in parts if p) or None, files)
    return found


def _comment_row(docket_id, item, files, text_row, read: ItemText | None, membership, represented,
                 named: list[tuple[str, str]], tie, topic: str | None, cited: list[str],
                 position: tuple) -> dict:
    organisation = named[0] if named else (None, None)
    return {"docket_id": docket_id, "comment_id": item.key, "title": item.title,
            "object_id": item.object_id, "comment_on_document_id": item.comment_on_document_id,
            "posted_date": item.posted_date, "received_date": item.received_date,
            "last_modified": item.last_modified, "withdrawn": bool(item.withdrawn),
            "submitter": item.submitter, "organization": item.organization, "body": item.body,
            "duplicate_comments": item.duplicate_comments, "submissions": 1 + (item.duplicate_comments or 0),
            **{column: getattr(item, column) for column in KEPT_TEXT_COLUMNS}, "page_count": item.page_count,
            "attachment_count": reports.attachment_count(item, files),
            "text_state": text_row.state if text_row else None,
            "text_chars": read.chars if read else None, "text": read.text if read else None,
            "campaign_id": membership[0] if membership else None,
            "campaign_size": membership[1] if membership else None,
            "campaign_submissions": represented.get(membership[0]) if membership else None,
            "organisation_id": organisation[0], "organisation": organisation[1],
            "organisation_count": len(named) or None,
            "answers_document": tie[0], "answers_phase": tie[1], "topic_id": topic,
            "sections": "\n".join(cited) or None,
            "position": position[0], "position_source": position[1], "position_probability": position[2],
            "position_evidence": position[3], "position_quote": position[4]}


KEPT_TEXT_COLUMNS = tuple(records.KEPT_TEXT.values())  # the normaliser's columns, in its order


def _topic_row(docket_id, t) -> dict:
    return {"docket_id": docket_id, "topic_id": t.id, "label": t.label, "terms": "\n".join(term for term, _ in t.terms),
            "comments": t.comments, "submissions": t.submissions, "organisations": t.organisations,
            "share": t.share, "first_seen": t.first_seen, "last_seen": t.last_seen,
            "representative_ids": "\n".join(r["item"] for r in t.representatives),
            "representative_texts": "\f".join(r["text"] for r in t.representatives)}


def _attachment_row(docket_id, a, standing, text: FileText | None) -> dict:
    return {"docket_id": docket_id, "comment_id": a.item, "filename": a.filename, "ordinal": a.ordinal,
            "title": a.title, "format": a.format, "declared_size": a.declared_size, "url": a.source_url,
            "size": a.size, "sha256": a.sha256, "state": standing.state, "reason": standing.reason,
            "text_chars": text.chars if text else None, "text": text.text if text else None}


def _campaign_row(docket_id, c, represented: dict[str, int]) -> dict:
    return {"docket_id": docket_id, "campaign_id": c.id, "size": c.size, "submissions": represented.get(c.id),
            "representative_id": c.representative, "representative_text": page_breaks(c.representative_text),
            "first_seen": c.first_seen, "last_seen": c.last_seen}


def page_breaks(text: str) -> str:
    """A text whose page markers (``<!-- page N -->`` lines, extract's own notation) are page
    breaks as plain text writes them: a form feed between pages, none before the first."""
    from pipeline.reading.comments import PAGE_MARKER

    parts = PAGE_MARKER.split(text or "")  # [before, n1, page1, n2, page2, ...]
    pages = [parts[0].strip("\n")] if parts[0].strip() else []
    pages += [parts[i].strip("\n") for i in range(2, len(parts), 2)]
    return "\n\f\n".join(pages)


# --- files ------------------------------------------------------------------------------------

def schema(table: str):
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind, _ in COLUMNS[table]])


def _write_table(path: Path, name: str, rows: list[dict], fmt: str) -> None:
    import pyarrow as pa
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    if fmt == "csv":
        rows = [{column: csv_cell(value) for column, value in row.items()} for row in rows]
    table = pa.Table.from_pylist(rows, schema=schema(name))
    with _temporary_beside(path) as tmp:
        if fmt == "parquet":
            pq.write_table(table, tmp)
        else:
            pa_csv.write_csv(table, tmp)
    counters.incr(EXPORT_FILES_WRITTEN)


# What a spreadsheet takes for the start of a formula (``=HYPERLINK(...)``, ``=cmd|...``,
# ``+``, ``-``, ``@``) or lets one through after (a tab, a carriage return): such a CSV cell
# is written as text, with a leading ``'`` (OWASP's CSV injection advice). Parquet, read by
# programs rather than spreadsheets, keeps every value as stored.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """A value as a CSV cell: a text that a spreadsheet would run as a formula, as text."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _atomic_write(path: Path, data: bytes) -> None:
    with _temporary_beside(path) as tmp:
        Path(tmp).write_bytes(data)
    counters.incr(EXPORT_FILES_WRITTEN)


def _write_if_changed(path: Path, data: bytes) -> None:
    if not path.exists() or path.read_bytes() != data:
        _atomic_write(path, data)


TEMPORARY_SUFFIX = ".partial"


def remove_leftover_temporaries(folder: Path, names: list[str]) -> list[Path]:
    """Remove the temporary files of ``names`` that an export killed before its rename left
    in ``folder`` (their process is gone); a running export's own are kept."""
    import re

    import psutil

    removed = []
    wanted = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)-[^/]*" + re.escape(TEMPORARY_SUFFIX) + "$")
    for path in folder.iterdir():
        found = wanted.match(path.name)
        if (found and found.group("name") in names and path.is_file() and not path.is_symlink()
                and not psutil.pid_exists(int(found.group("pid")))):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


@contextmanager
def _temporary_beside(path: Path) -> Iterator[str]:
    """A temporary file name in the final file's folder, renamed over it on success and
    removed on failure: a reader sees the old file or the new one, never half of one."""
    # Named after the file and this process: a later export knows an export killed here by it.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=TEMPORARY_SUFFIX, dir=path.parent)
    os.close(fd)
    try:
        yield tmp
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def readme() -> str:
    lines = ["docketeer export", "================", "",
             "One folder per docket, each with comments, attachments, campaigns, topics, sections, positions,",
             "rule_phases and comment_organisations (each organisation a comment names) as Parquet",
             "and/or CSV (UTF-8, header row). export.json holds the fingerprint of the data the",
             "files were made from: an unchanged docket is not rewritten.",
             "In the CSV files, a text that starts with =, +, -, @, a tab or a carriage return",
             "(what a spreadsheet would take for a formula) starts with an added ' so that it",
             "stays text; the Parquet files keep every value as stored.", "",
             "DuckDB:  SELECT count(*) FROM read_parquet('DEST/*/comments.parquet');",
             "pandas:  pandas.read_parquet('DEST/<docket>/comments.parquet')", ""]
    for table, columns in COLUMNS.items():
        lines += [f"{table}.parquet / {table}.csv", "-" * (len(table) * 2 + 15)]
        lines += [f"  {name:<24} {kind:<7} {doc}" for name, kind, doc in columns]
        lines.append("")
    return "\n".join(lines)
