"""Generate a deterministic mirror-layout corpus of dockets, documents, comments and files.

The output has the mirrulations layout that ``../shared/realdata/mirror`` shows (written
through ``devtools.mirror_layout``): per docket one docket file, one proposed rule
``<docket>-0001`` with its content PDF, comments with their attachments (a tombstone for a
file that is gone), and ``manifest.json`` at the root says what each comment is about and what status the
extractor should give each attachment. Same arguments → byte-identical output.

    python -m devtools.make_corpus OUT --dockets 3 --comments 100
    python -m devtools.make_corpus OUT --dockets 12 --comments 200000 --reuse-attachments
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import shutil
import sys
import textwrap
import time
import zipfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from devtools import mirror_layout as layout
from devtools.corpus_topics import (
    AGENCY_DOCKETS,
    CLOSINGS,
    FIRST_NAMES,
    LAST_NAMES,
    OPENINGS,
    ORGANIZATIONS,
    PLACES,
    RULE_SENTENCES,
    TOPICS,
    Topic,
)

DEFAULT_START = datetime(2026, 1, 5, 5, 0, 0, tzinfo=UTC)
COMMENT_PERIOD_DAYS = 60
FINAL_PHASE_DAYS = 120  # a rule's final phase opens this long after its proposed one did
ATTACHED_PLACEHOLDER = "See attached file(s)"
DOWNLOADS = "https://downloads.regulations.gov"
API = "https://api.regulations.gov/v4"

# Fixed stamps so the PDF and DOCX bytes do not depend on when the corpus was made.
PDF_STAMP = "D:20260101000000Z"
DOCX_STAMP = datetime(2026, 1, 1, tzinfo=UTC)
ZIP_STAMP = (2026, 1, 1, 0, 0, 0)

# In reuse mode each (kind, topic) has this many distinct files, shared by all comments.
REUSE_VARIANTS = 4
# The prefix of a PDF that every reader rejects: a truncated download.
CORRUPT_PDF_BYTES = 200

EXPECTED_STATUS = {"text_pdf": "ok", "docx": "ok", "image_pdf": "ocr_needed", "corrupt_pdf": "failed"}


# --- Manifest ---------------------------------------------------------------------------


@dataclass
class AttachmentEntry:
    comment_id: str
    file: str  # the name the API uses: attachment_1.pdf
    path: str  # relative to the corpus root; the _UNAVAILABLE tombstone when gone
    format: str  # pdf | docx
    kind: str  # text_pdf | docx | image_pdf | corrupt_pdf
    size: int
    sha256: str
    expected_status: str  # ok | ocr_needed | failed | gone
    duplicate_of: str | None = None  # "<commentId>/<file>" whose bytes this file repeats
    ocr_text: str | None = None  # the sentence an image-only PDF shows


@dataclass
class CommentEntry:
    id: str
    docket_id: str
    topic: str
    path: str
    posted_date: str
    last_modified_date: str
    inline_is_placeholder: bool
    attachments: list[AttachmentEntry] = field(default_factory=list)


@dataclass
class DocumentEntry:
    id: str
    docket_id: str
    object_id: str
    title: str
    comment_start_date: str
    comment_end_date: str
    path: str
    content_path: str
    document_type: str = "Proposed Rule"  # "Rule": a final (or interim final) rule's


@dataclass
class DocketEntry:
    id: str
    agency: str
    title: str
    path: str
    documents: list[DocumentEntry]
    comment_count: int


@dataclass
class Manifest:
    seed: int
    options: dict
    topics: dict[str, str]  # slug -> label
    dockets: list[DocketEntry] = field(default_factory=list)
    comments: list[CommentEntry] = field(default_factory=list)

    def attachments(self) -> list[AttachmentEntry]:
        return [attachment for comment in self.comments for attachment in comment.attachments]

    def comments_on(self, topic: str) -> list[CommentEntry]:
        return [comment for comment in self.comments if comment.topic == topic]

    def expected_status_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(a.expected_status for a in self.attachments()).items()))

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=False, separators=(",", ":"))

    @classmethod
    def load(cls, root: Path) -> Manifest:
        raw = json.loads((Path(root) / "manifest.json").read_text())
        dockets = [DocketEntry(**{**d, "documents": [DocumentEntry(**doc) for doc in d["documents"]]})
                   for d in raw["dockets"]]
        comments = [CommentEntry(**{**c, "attachments": [AttachmentEntry(**a) for a in c["attachments"]]})
                    for c in raw["comments"]]
        return cls(raw["seed"], raw["options"], raw["topics"], dockets, comments)


# --- Prose --------------------------------------------------------------------------------


def topic_sentence(rng: random.Random, template: str) -> str:
    return template.format(place=rng.choice(PLACES), count=rng.randrange(3, 90),
                           pct=rng.randrange(5, 60), years=rng.randrange(2, 11))


def topic_paragraph(rng: random.Random, topic: Topic, sentences: int = 4) -> str:
    return " ".join(topic_sentence(rng, s) for s in rng.sample(topic.sentences, sentences))


def topic_prose(rng: random.Random, topic: Topic, paragraphs: int) -> list[str]:
    body = [topic_paragraph(rng, topic, rng.randrange(3, 6)) for _ in range(paragraphs)]
    return [rng.choice(OPENINGS), *body, rng.choice(CLOSINGS)]


# --- Files --------------------------------------------------------------------------------


def _pdf_bytes(doc) -> bytes:
    """Serialise with fixed metadata and no random file id, so the bytes are reproducible."""
    doc.set_metadata({"title": "", "author": "", "subject": "", "keywords": "",
                      "creator": "docketeer make_corpus", "producer": "docketeer make_corpus",
                      "creationDate": PDF_STAMP, "modDate": PDF_STAMP})
    return doc.tobytes(garbage=3, deflate=True, no_new_id=True)


def text_pdf(pages: list[list[str]]) -> bytes:
    """A letter-size PDF with one list of paragraphs per page, wrapped to fit."""
    import pymupdf

    doc = pymupdf.open()
    for paragraphs in pages:
        page = doc.new_page(width=612, height=792)
        lines: list[str] = []
        for paragraph in paragraphs:
            lines.extend(textwrap.wrap(paragraph, 92) + [""])
        page.insert_text((72, 72), "\n".join(lines[:52]), fontsize=10, fontname="helv")
    return _pdf_bytes(doc)


def image_only_pdf(sentence: str) -> bytes:
    """A one-page PDF whose only content is a picture of ``sentence`` (a 'scan')."""
    import pymupdf

    source = pymupdf.open()
    page = source.new_page(width=612, height=792)
    page.insert_text((54, 150), "\n".join(textwrap.wrap(sentence, 34)), fontsize=26, fontname="helv")
    pixmap = page.get_pixmap(dpi=110, colorspace=pymupdf.csGRAY)
    scan = pymupdf.open()
    scan.new_page(width=612, height=792).insert_image(pymupdf.Rect(0, 0, 612, 792),
                                                      stream=pixmap.tobytes("png"))
    return _pdf_bytes(scan)


def docx_bytes(title: str, paragraphs: list[str], table_rows: list[tuple[str, str]]) -> bytes:
    """A DOCX with a heading, paragraphs, a two-column table and a closing paragraph."""
    import docx

    document = docx.Document()
    properties = document.core_properties
    properties.author = properties.last_modified_by = "docketeer make_corpus"
    properties.created = properties.modified = properties.last_printed = DOCX_STAMP
    properties.revision = 1
    document.add_heading(title, level=1)
    for paragraph in paragraphs[:-1]:
        document.add_paragraph(paragraph)
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Provision", "Recommendation"
    for provision, recommendation in table_rows:
        cells = table.add_row().cells
        cells[0].text, cells[1].text = provision, recommendation
    document.add_paragraph(paragraphs[-1])
    buffer = io.BytesIO()
    document.save(buffer)
    return _restamp_zip(buffer.getvalue())


def _restamp_zip(data: bytes) -> bytes:
    """python-docx stamps zip members with the current time; rewrite them with a fixed one."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            info = zipfile.ZipInfo(member.filename, date_time=ZIP_STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            target.writestr(info, source.read(member.filename))
    return out.getvalue()


def attachment_bytes(kind: str, topic: Topic, rng: random.Random, title: str) -> bytes:
    if kind == "image_pdf":
        return image_only_pdf(topic.ocr_sentence)
    if kind == "docx":
        return docx_bytes(title, topic_prose(rng, topic, rng.randrange(2, 4)),
                          list(topic.recommendations))
    pages = [topic_prose(rng, topic, 2) for _ in range(rng.randrange(2, 5))]
    pdf = text_pdf(pages)
    return pdf[:CORRUPT_PDF_BYTES] if kind == "corrupt_pdf" else pdf


# --- Ids and dates --------------------------------------------------------------------------


def utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ObjectIds:
    """Unique 16-hex object ids like regulations.gov's 09000064b8f4997c, from a counter."""

    def __init__(self, seed: int) -> None:
        self._next = 0xB0000000 + (seed * 7919) % 0x08000000

    def take(self) -> str:
        self._next += 1
        return f"09000064{self._next & 0xFFFFFFFF:08x}"


def tracking_number(rng: random.Random) -> str:
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
    parts = ("".join(rng.choice(alphabet) for _ in range(n)) for n in (3, 4, 4))
    return "-".join(parts)


def modified_times(rng: random.Random, count: int, opens: datetime) -> list[datetime]:
    """Distinct, ascending times; about four comments share each calendar day."""
    days = max(2, min(COMMENT_PERIOD_DAYS + 7, count // 4))
    seconds = sorted(rng.sample(range(days * 86400), count))
    return [opens + timedelta(seconds=s) for s in seconds]


def posted_for(modified: datetime) -> datetime:
    """Posting dates are midnight US Eastern (05:00Z), at or before the last modification."""
    day = (modified - timedelta(hours=5)).replace(hour=0, minute=0, second=0)
    return day + timedelta(hours=5)


# --- JSON documents ---------------------------------------------------------------------------


def _links(kind: str, item_id: str) -> dict:
    return {"self": f"{API}/{kind}/{item_id}"}


def docket_json(docket_id: str, agency: str, title: str, object_id: str, modified: datetime,
                rin: str | None = None) -> dict:
    attributes = {
        "displayProperties": [{"name": "abstract", "label": "Description",
                               "tooltip": "Describes an agency's specific regulatory action."}],
        "keywords": None, "modifyDate": utc(modified), "dkAbstract": title, "agencyId": agency,
        "program": None, "shortTitle": None, "subType2": None, "title": title, "generic": None,
        "field1": None, "docketType": "Rulemaking", "petitionNbr": None, "rin": rin,
        "organization": None, "legacyId": None, "subType": None, "category": None, "field2": None,
        "effectiveDate": None, "objectId": object_id,
    }
    return {"data": {"id": docket_id, "type": "dockets", "attributes": attributes,
                     "links": _links("dockets", docket_id)}}


def document_json(doc: DocumentEntry, agency: str, content_size: int, posted: datetime) -> dict:
    attributes = {
        "additionalRins": None, "allowLateComments": False, "authorDate": None, "authors": None,
        "cfrPart": None, "commentEndDate": doc.comment_end_date,
        "commentStartDate": doc.comment_start_date, "effectiveDate": None,
        "exhibitLocation": None, "exhibitType": None, "frDocNum": f"{posted.year}-{_fr_number(doc.id)}",
        "frVolNum": None, "implementationDate": None, "media": None, "ombApproval": None,
        "paperLength": 0, "paperWidth": 0, "regWriterInstruction": None, "sourceCitation": None,
        "startEndPage": None, "subject": doc.title, "topics": None, "address1": None,
        "address2": None, "agencyId": agency, "city": None, "category": None, "comment": None,
        "country": None, "displayProperties": [{"name": "pageCount", "label": "Page Count",
                                                "tooltip": "Number of pages In the content file"}],
        "docAbstract": f"This {doc.document_type.lower()} invites public comment on {doc.title.lower()}.",
        "docketId": doc.docket_id, "documentType": doc.document_type, "email": None, "fax": None,
        "field1": None, "field2": None,
        "fileFormats": [{"fileUrl": f"{DOWNLOADS}/{doc.id}/content.pdf", "format": "pdf",
                         "size": content_size}],
        "firstName": None, "govAgency": None, "govAgencyType": None, "objectId": doc.object_id,
        "lastName": None, "legacyId": None, "modifyDate": utc(posted), "organization": None,
        "originalDocumentId": None, "pageCount": 2, "phone": None, "postedDate": utc(posted),
        "lastModifiedDate": utc(posted), "postmarkDate": None, "reasonWithdrawn": None,
        "receiveDate": utc(posted), "restrictReason": None, "restrictReasonType": None,
        "stateProvinceRegion": None, "submitterRep": None, "submitterRepAddress": None,
        "submitterRepCityState": None, "subtype": None, "title": doc.title, "trackingNbr": None,
        "withdrawn": False, "zip": None, "withinCommentPeriod": False, "openForComment": False,
    }
    return {"data": {"id": doc.id, "type": "documents", "links": _links("documents", doc.id),
                     "attributes": attributes,
                     "relationships": {"attachments": {"links": _relationship_links("documents", doc.id)}}}}


def _fr_number(document_id: str) -> int:
    """A five-digit Federal Register number of its own per document (two documents of one
    rule must not share one, as their content files' sizes could)."""
    return int(hashlib.sha256(document_id.encode()).hexdigest()[:8], 16) % 90000 + 10000


def _relationship_links(kind: str, item_id: str) -> dict:
    return {"self": f"{API}/{kind}/{item_id}/relationships/attachments",
            "related": f"{API}/{kind}/{item_id}/attachments"}


@dataclass
class Submitter:
    first_name: str | None
    last_name: str | None
    organization: str | None
    title: str


def comment_json(comment: CommentEntry, *, agency: str, document: DocumentEntry, object_id: str,
                 submitter: Submitter, inline_text: str, received: datetime, tracking: str,
                 attachment_ids: list[str], attachment_titles: list[str], duplicates: int = 0) -> dict:
    attributes = {
        "commentOn": document.object_id, "commentOnDocumentId": document.id,
        "duplicateComments": duplicates, "address1": None, "address2": None, "agencyId": agency,
        "city": None, "category": None, "comment": inline_text, "country": None,
        "displayProperties": [{"name": "pageCount", "label": "Page Count",
                               "tooltip": "Number of pages In the content file"}],
        "docAbstract": None, "docketId": comment.docket_id, "documentType": "Public Submission",
        "email": None, "fax": None, "field1": None, "field2": None, "fileFormats": None,
        "firstName": submitter.first_name, "govAgency": None, "govAgencyType": None,
        "objectId": object_id, "lastName": submitter.last_name, "legacyId": None,
        "modifyDate": comment.last_modified_date, "lastModifiedDate": comment.last_modified_date,
        "organization": submitter.organization, "originalDocumentId": None,
        "pageCount": max(1, len(comment.attachments)), "phone": None,
        "postedDate": comment.posted_date, "postmarkDate": None, "reasonWithdrawn": None,
        "receiveDate": utc(received), "restrictReason": None, "restrictReasonType": None,
        "stateProvinceRegion": None, "submitterRep": None, "submitterRepAddress": None,
        "submitterRepCityState": None, "subtype": "Public Comment", "title": submitter.title,
        "trackingNbr": tracking, "withdrawn": False, "zip": None, "openForComment": False,
    }
    relationship = {"data": [{"id": i, "type": "attachments"} for i in attachment_ids],
                    "links": _relationship_links("comments", comment.id)}
    body = {"data": {"id": comment.id, "type": "comments", "links": _links("comments", comment.id),
                     "attributes": attributes, "relationships": {"attachments": relationship}}}
    if comment.attachments:
        body["included"] = [
            _included_attachment(comment, attachment, attachment_id, title, order)
            for order, (attachment, attachment_id, title)
            in enumerate(zip(comment.attachments, attachment_ids, attachment_titles, strict=True), 1)
        ]
    return body


def _included_attachment(comment: CommentEntry, attachment: AttachmentEntry, attachment_id: str,
                         title: str, order: int) -> dict:
    return {
        "id": attachment_id, "type": "attachments", "links": _links("attachments", attachment_id),
        "attributes": {
            "agencyNote": None, "authors": None, "docAbstract": None, "docOrder": order,
            "fileFormats": [{"fileUrl": f"{DOWNLOADS}/{comment.id}/{attachment.file}",
                             "format": attachment.format, "size": attachment.size}],
            "modifyDate": comment.last_modified_date, "publication": None,
            "restrictReason": None, "restrictReasonType": None, "title": title,
        },
    }


# --- Planning and writing -------------------------------------------------------------------


@dataclass
class PlannedComment:
    topic: Topic
    kinds: list[str]  # one per attachment
    duplicate_of: str | None = None  # comment id whose attachment_1 this one repeats
    tombstone: bool = False
    duplicates: int = 0  # identical submissions more that this record stands for (duplicateComments)


def plan_comments(rng: random.Random, count: int, *, attachment_share: float,
                  shares: dict[str, float], docket_index: int) -> list[PlannedComment]:
    """Topics, attachment counts and kinds for one docket, with exact shares, shuffled."""
    topics = [TOPICS[(docket_index + i) % len(TOPICS)] for i in range(count)]
    rng.shuffle(topics)
    with_files = set(rng.sample(range(count), round(count * attachment_share)))
    # About one attachment comment in six carries a second file.
    counts = [(2 if rng.random() < 1 / 6 else 1) if i in with_files else 0 for i in range(count)]
    kinds = _attachment_kinds(rng, sum(counts), shares)
    planned, cursor = [], 0
    for topic, n in zip(topics, counts, strict=True):
        planned.append(PlannedComment(topic, kinds[cursor:cursor + n]))
        cursor += n
    return planned


def _attachment_kinds(rng: random.Random, total: int, shares: dict[str, float]) -> list[str]:
    """Exactly round(total * share) files of each special kind (at least one when the share
    is positive, so small corpora still exercise every status); text PDFs fill the rest."""
    kinds: list[str] = []
    for kind, share in shares.items():
        wanted = max(1, round(total * share)) if share > 0 and total else 0
        kinds.extend([kind] * min(wanted, total - len(kinds)))
    kinds.extend(["text_pdf"] * (total - len(kinds)))
    rng.shuffle(kinds)
    return kinds


def mark_duplicate_and_tombstone(planned: list[PlannedComment], comment_ids: list[str],
                                 *, tombstone: bool, duplicates: int = 0) -> None:
    """The second comment whose first file is a text PDF repeats the first one's file (a
    form letter, same topic), and stands for ``duplicates`` identical submissions more (as
    an agency posts one copy of a mass mailing); with ``tombstone`` the third one's file is
    unavailable."""
    text_first = [i for i, p in enumerate(planned) if p.kinds[:1] == ["text_pdf"]]
    if len(text_first) >= 2:
        source, copy = text_first[0], text_first[1]
        planned[copy].topic = planned[source].topic
        planned[copy].duplicate_of = comment_ids[source]
        planned[copy].duplicates = duplicates
    if tombstone and len(text_first) >= 3:
        planned[text_first[2]].tombstone = True


class CorpusWriter:
    """Writes dockets into ``root``; in reuse mode each distinct file is made once and
    hard-linked (copied where links are impossible) to every comment that shares it."""

    def __init__(self, root: Path, *, seed: int, reuse: bool, tombstone: bool) -> None:
        self.root = root
        self.seed = seed
        self.reuse = reuse
        self.tombstone = tombstone
        self.object_ids = ObjectIds(seed)
        self._made: dict[tuple, tuple[bytes, str]] = {}  # reuse key -> (bytes, sha256)
        self._first_path: dict[str, Path] = {}  # sha256 -> first file written with it

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def write_file(self, path: Path, data: bytes, sha: str) -> None:
        first = self._first_path.get(sha) if self.reuse else None
        if first is not None:
            try:
                os.link(first, path)
                return
            except OSError:
                pass  # another file system or no link support: fall through to a copy
        layout.write_file(path, data)
        self._first_path.setdefault(sha, path)

    def make_attachment(self, kind: str, topic: Topic, comment_id: str, n: int,
                        title: str) -> tuple[bytes, str]:
        rng = random.Random(f"{self.seed}/{comment_id}/{n}")
        if self.reuse:
            key = (kind, topic.slug, rng.randrange(REUSE_VARIANTS))
            if key not in self._made:
                data = attachment_bytes(kind, topic, random.Random(f"{self.seed}/{key}"), topic.label)
                self._made[key] = (data, hashlib.sha256(data).hexdigest())
            return self._made[key]
        data = attachment_bytes(kind, topic, rng, title)
        if kind == "image_pdf":  # a distinct scan per comment, not one per topic
            data = image_only_pdf(f"{topic.ocr_sentence} Reference {comment_id}.")
        elif kind == "corrupt_pdf":
            data += f"\n% truncated download of {comment_id}\n".encode()
        return data, hashlib.sha256(data).hexdigest()


def _docket_identity(index: int, start: datetime, same_rule_as: int | None = None) -> tuple[str, str, str, str]:
    """Agency, its name, title and id of docket ``index``; ``same_rule_as``: another phase of
    that docket's rule (its agency and title, this docket's own number)."""
    agency, agency_name, title = AGENCY_DOCKETS[(index if same_rule_as is None else same_rule_as)
                                                % len(AGENCY_DOCKETS)]
    return agency, agency_name, title, f"{agency}-{start.year}-{index + 1:04d}"


@dataclass(frozen=True)
class Phase:
    """Which rule a docket is a phase of: its RIN, its document's type, and (for a later
    phase) the docket whose agency and title it shares."""
    rin: str | None = None
    document_type: str = "Proposed Rule"
    same_rule_as: int | None = None


def write_docket(writer: CorpusWriter, manifest: Manifest, index: int, count: int, *,
                 start: datetime, attachment_share: float, shares: dict[str, float],
                 phase: Phase = Phase(), duplicates: int = 0) -> None:
    agency, agency_name, title, docket_id = _docket_identity(index, start, phase.same_rule_as)
    folders = layout.DocketFolders.new(writer.root, agency, docket_id)
    folders.create_folders()
    opens = start + timedelta(days=9 * index)
    document = write_document(writer, folders, agency, agency_name, title, opens, phase.document_type)
    docket_path = folders.docket_file()
    layout.write_json(docket_path, docket_json(docket_id, agency, title, writer.object_ids.take(),
                                               opens + timedelta(days=COMMENT_PERIOD_DAYS), phase.rin))
    manifest.dockets.append(DocketEntry(docket_id, agency, title, writer.relative(docket_path),
                                        [document], count))
    rng = random.Random(f"{writer.seed}/{docket_id}")
    comment_ids = [f"{docket_id}-{n + 2:04d}" for n in range(count)]
    planned = plan_comments(rng, count, attachment_share=attachment_share, shares=shares,
                            docket_index=index)
    mark_duplicate_and_tombstone(planned, comment_ids, tombstone=writer.tombstone and index == 0,
                                 duplicates=duplicates)
    modified = modified_times(rng, count, opens + timedelta(hours=rng.randrange(1, 20)))
    by_id: dict[str, CommentEntry] = {}
    for comment_id, plan, when in zip(comment_ids, planned, modified, strict=True):
        entry = write_comment(writer, comment_id, plan, when, agency=agency, document=document,
                              folders=folders, by_id=by_id)
        by_id[comment_id] = entry
        manifest.comments.append(entry)


def write_document(writer: CorpusWriter, folders: layout.DocketFolders, agency: str,
                   agency_name: str, title: str, opens: datetime,
                   document_type: str = "Proposed Rule") -> DocumentEntry:
    docket_id = folders.docket_id
    rng = random.Random(f"{writer.seed}/{docket_id}-0001")
    document_id = f"{docket_id}-0001"
    closes = opens + timedelta(days=COMMENT_PERIOD_DAYS) - timedelta(hours=1, seconds=1)
    preamble = [f"{agency_name.upper()}", f"{title}", "AGENCY: " + agency_name + ".",
                "ACTION: " + ("Proposed rule." if document_type == "Proposed Rule"
                              else "Interim final rule with comment period."),
                f"DATES: Comments must be received by {closes.strftime('%B %d, %Y')}."]
    pages = [preamble + [" ".join(rng.sample(RULE_SENTENCES, 5)) for _ in range(3)],
             [" ".join(rng.sample(RULE_SENTENCES, 6)) for _ in range(4)]]
    content = text_pdf(pages)
    content_path = folders.document_content(document_id)
    layout.write_file(content_path, content)
    document = DocumentEntry(document_id, docket_id, writer.object_ids.take(), title, utc(opens),
                             utc(closes), "", writer.relative(content_path), document_type)
    document_path = folders.document_file(document_id)
    layout.write_json(document_path, document_json(document, agency, len(content), opens))
    document.path = writer.relative(document_path)
    return document


def _submitter(rng: random.Random) -> Submitter:
    if rng.random() < 0.5:
        organization = rng.choice(ORGANIZATIONS)
        return Submitter(None, None, organization, organization)
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    return Submitter(first, last, None, f"Comment from {first} {last}")


def _inline_text(rng: random.Random, plan: PlannedComment) -> str:
    if plan.kinds and rng.random() < 0.85:
        return ATTACHED_PLACEHOLDER
    paragraphs = 1 if plan.kinds else rng.randrange(2, 5)
    return "\n\n".join(topic_paragraph(rng, plan.topic, rng.randrange(3, 6)) for _ in range(paragraphs))


def write_comment(writer: CorpusWriter, comment_id: str, plan: PlannedComment, when: datetime, *,
                  agency: str, document: DocumentEntry, folders: layout.DocketFolders,
                  by_id: dict[str, CommentEntry]) -> CommentEntry:
    rng = random.Random(f"{writer.seed}/{comment_id}")
    submitter = _submitter(rng)
    inline = _inline_text(rng, plan)
    posted = posted_for(when)
    comment_path = folders.comment_file(comment_id)
    entry = CommentEntry(comment_id, document.docket_id, plan.topic.slug, writer.relative(comment_path),
                         utc(posted), utc(when), inline == ATTACHED_PLACEHOLDER)
    titles = []
    for n, kind in enumerate(plan.kinds, 1):
        title = f"{document.docket_id} {submitter.title} Comment" + (f" ({n})" if n > 1 else "")
        titles.append(title)
        entry.attachments.append(
            write_attachment(writer, entry, plan, kind, n, title, folders, by_id))
    body = comment_json(entry, agency=agency, document=document, object_id=writer.object_ids.take(),
                        submitter=submitter, inline_text=inline,
                        received=posted - timedelta(days=rng.randrange(0, 6)),
                        tracking=tracking_number(rng),
                        attachment_ids=[writer.object_ids.take() for _ in plan.kinds],
                        attachment_titles=titles, duplicates=plan.duplicates)
    layout.write_json(comment_path, body)
    return entry


def write_attachment(writer: CorpusWriter, entry: CommentEntry, plan: PlannedComment, kind: str,
                     n: int, title: str, folders: layout.DocketFolders,
                     by_id: dict[str, CommentEntry]) -> AttachmentEntry:
    extension = "docx" if kind == "docx" else "pdf"
    file = f"attachment_{n}.{extension}"
    duplicate_of = None
    if n == 1 and plan.duplicate_of:
        source = by_id[plan.duplicate_of].attachments[0]
        data = (writer.root / source.path).read_bytes()
        sha, duplicate_of = source.sha256, f"{plan.duplicate_of}/{source.file}"
    else:
        data, sha = writer.make_attachment(kind, plan.topic, entry.id, n, title)
    ocr_text = plan.topic.ocr_sentence if kind == "image_pdf" else None
    if n == 1 and plan.tombstone:
        tombstone = folders.attachment_tombstone(entry.id, n)
        layout.write_tombstone(tombstone)
        return AttachmentEntry(entry.id, file, writer.relative(tombstone), extension, kind,
                               len(data), "", "gone")
    path = folders.comment_attachment(entry.id, n, extension)
    writer.write_file(path, data, sha)
    return AttachmentEntry(entry.id, file, writer.relative(path), extension, kind, len(data), sha,
                           EXPECTED_STATUS[kind], duplicate_of, ocr_text)


# --- Entry points ---------------------------------------------------------------------------


def make_corpus(root: Path, *, dockets: int = 3, comments_per_docket: int | list[int] = 34,
                attachment_share: float = 0.7, seed: int = 7, start: datetime | None = None,
                reuse_attachments: bool = False, image_only_share: float = 0.03,
                corrupt_share: float = 0.02, docx_share: float = 0.1, tombstone: bool = True,
                overwrite: bool = False, open_comments: int = 0,
                now: datetime | None = None, rin: str | None = None, final_comments: int = 0,
                duplicates: int = 0) -> Manifest:
    """Write a corpus under ``root`` (which must not hold one yet unless ``overwrite``).

    ``open_comments``: one more docket, with that many comments, whose comment period opened
    ten days before ``now`` (default: this moment) and so is still running: a pull of it is
    never its last (it cannot seal), and comments added to it later are new work
    (``devtools.corpus_changes.add_comments``). Its id is ``manifest.options["open_docket"]``.

    ``rin``: the first docket's Regulation Identifier Number. ``final_comments`` (needs ``rin``):
    that rule goes on to its final phase: one more docket (after the open one) of the first's
    agency, title and RIN, whose document is a "Rule" taking comments (an interim final rule)
    from 120 days after the first docket's opened, with that many comments; its id is
    ``manifest.options["final_docket"]``. ``duplicates``: each docket's form-letter copy stands
    for that many identical submissions more (its ``duplicateComments``)."""
    if final_comments and not rin:
        raise ValueError("final_comments needs a rin: the final phase is linked to the proposed one by it")
    root = Path(root)
    counts = _per_docket_counts(dockets, comments_per_docket)
    start = (start or DEFAULT_START).astimezone(UTC)
    _prepare_root(root, overwrite)
    options = {"dockets": dockets, "comments_per_docket": counts, "attachment_share": attachment_share,
               "start": utc(start), "reuse_attachments": reuse_attachments,
               "image_only_share": image_only_share, "corrupt_share": corrupt_share,
               "docx_share": docx_share, "tombstone": tombstone}
    manifest = Manifest(seed, options, {topic.slug: topic.label for topic in TOPICS})
    writer = CorpusWriter(root, seed=seed, reuse=reuse_attachments, tombstone=tombstone)
    shares = {"image_pdf": image_only_share, "corrupt_pdf": corrupt_share, "docx": docx_share}
    for index, count in enumerate(counts):
        write_docket(writer, manifest, index, count, start=start, attachment_share=attachment_share,
                     shares=shares, phase=Phase(rin if index == 0 else None), duplicates=duplicates)
    if open_comments:
        index = len(counts)  # write_docket opens docket i 9*i days after its start
        opens = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0) - timedelta(days=10)
        write_docket(writer, manifest, index, open_comments, start=opens - timedelta(days=9 * index),
                     attachment_share=attachment_share, shares=shares, duplicates=duplicates)
        options["open_docket"] = manifest.dockets[-1].id
    if final_comments:
        index = len(manifest.dockets)
        write_docket(writer, manifest, index, final_comments,
                     start=start + timedelta(days=FINAL_PHASE_DAYS - 9 * index),
                     attachment_share=attachment_share, shares=shares,
                     phase=Phase(rin, "Rule", same_rule_as=0), duplicates=duplicates)
        options.update(rin=rin, final_docket=manifest.dockets[-1].id)
    if duplicates:
        options["duplicates"] = duplicates
    (root / "manifest.json").write_text(manifest.to_json())
    return manifest


def _per_docket_counts(dockets: int, comments_per_docket: int | list[int]) -> list[int]:
    if dockets < 1:
        raise ValueError("dockets must be at least 1")
    if isinstance(comments_per_docket, int):
        return [comments_per_docket] * dockets
    if len(comments_per_docket) != dockets:
        raise ValueError("comments_per_docket needs one count per docket")
    return list(comments_per_docket)


def _prepare_root(root: Path, overwrite: bool) -> None:
    if layout.raw_data(root).exists() or (root / "manifest.json").exists():
        if not overwrite:
            raise FileExistsError(f"{root} already holds a corpus (pass overwrite=True)")
        shutil.rmtree(layout.raw_data(root), ignore_errors=True)
        (root / "manifest.json").unlink(missing_ok=True)
    root.mkdir(parents=True, exist_ok=True)


def spread(total: int, dockets: int) -> list[int]:
    """``total`` comments over ``dockets`` as evenly as possible, the first ones larger."""
    base, extra = divmod(total, dockets)
    return [base + (1 if i < extra else 0) for i in range(dockets)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--dockets", type=int, default=3)
    parser.add_argument("--comments", type=int, default=102, help="total, spread across dockets")
    parser.add_argument("--attachment-share", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--start", type=datetime.fromisoformat, default=None,
                        help="comment period start of the first docket (ISO 8601, UTC if naive)")
    parser.add_argument("--reuse-attachments", action="store_true")
    parser.add_argument("--image-only-share", type=float, default=0.03)
    parser.add_argument("--corrupt-share", type=float, default=0.02)
    parser.add_argument("--docx-share", type=float, default=0.1)
    parser.add_argument("--no-tombstone", action="store_true")
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--rin", default=None, help="the first docket's Regulation Identifier Number")
    parser.add_argument("--final-comments", type=int, default=0,
                        help="comments on one more docket: the final phase of the first docket's rule (needs --rin)")
    parser.add_argument("--duplicates", type=int, default=0,
                        help="identical submissions more each docket's form-letter copy stands for")
    args = parser.parse_args(argv)
    start = args.start.replace(tzinfo=args.start.tzinfo or UTC) if args.start else None
    started = time.monotonic()
    manifest = make_corpus(
        args.out, dockets=args.dockets, comments_per_docket=spread(args.comments, args.dockets),
        attachment_share=args.attachment_share, seed=args.seed, start=start,
        reuse_attachments=args.reuse_attachments, image_only_share=args.image_only_share,
        corrupt_share=args.corrupt_share, docx_share=args.docx_share,
        tombstone=not args.no_tombstone, overwrite=args.overwrite, rin=args.rin,
        final_comments=args.final_comments, duplicates=args.duplicates)
    print(f"{len(manifest.dockets)} dockets, {len(manifest.comments)} comments, "
          f"{len(manifest.attachments())} attachments {manifest.expected_status_counts()} "
          f"in {time.monotonic() - started:.1f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
