"""``docketeer show COMMENT_ID``: one comment as its web page shows it (its record's facts,
Eastern dates, who sent it, its body, each attachment's extracted text page by page) and its
states in every stage, as ``docketeer explain`` shows them.

It reads what the comment page reads, through the read side (``pipeline/reading/``: reports,
campaigns, lineage, a comment's sections and pages); the page's own assembling functions live
in the web package and are not called from here.
Those modules are imported inside the functions: they bring peewee, psycopg2 and the
stages, which ``docketeer --help`` and a bad argument do without."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from pipeline.clock import eastern_instant, iso
from pipeline.errors import DocketeerError
from pipeline.ids import record_url
from pipeline.ops.commands.command_line import command, table
from pipeline.ops.commands.item_states import (
    EXPLAIN_HEADER,
    attachments_line,
    comment_and_states,
    kept_attributes,
    stage_table,
    who,
)

STAGE_KEYS = ["stage", "state", "failure", "attempts", "first_failed", "next_attempt", "at", "reason"]


def register(commands) -> None:
    show = commands.add_parser("show", help="one comment as its page shows it: the record's facts (Eastern dates), "
                                            "its body, each attachment's text by page, its state in every stage")
    show.add_argument("comment", metavar="COMMENT_ID")
    show.add_argument("--json", action="store_true",
                      help="one JSON document (facts with UTC instants, body, attachments with their pages, stages)")


@command
def cmd_show(args) -> int:
    rt, item, rows = comment_and_states(args.comment)
    if item is None:  # listed, but its record never arrived: only its state rows know it
        raise DocketeerError(f"{args.comment}: not stored, its fetch did not succeed "
                             f"(`docketeer explain {args.comment}` says why)")
    shown = _ShownComment(rt, item, rows)
    print(json.dumps(shown.document(), indent=1, ensure_ascii=False) if args.json else shown.text())
    return 0


class _ShownComment:
    """What ``show`` prints of one stored item, read once."""

    def __init__(self, rt, item, rows: list) -> None:
        from pipeline.reading import comments, reports

        self.rt, self.item, self.rows = rt, item, rows
        self.files = reports.file_rows_of(item.key)
        self.attachments = reports.attachments_of(item.key)
        self.sections, self.extracted = comments.text_pages(rt.blobs, item.docket, item.key)
        self.document_answered, self.phase = _answered(item)
        self.campaign = _campaign(item.key)

    @property
    def link(self) -> str:
        return record_url(self.item.kind, self.item.key)

    def file_state(self, stage: str, filename: str) -> str | None:
        row = self.files.get((stage, f"{self.item.key}/{filename}"))
        return f"{row.state}" + (f" ({row.reason})" if row.reason else "") if row else None

    def summary(self) -> str:
        extracted = next((r for r in self.rows if r.stage == "extract"), None)
        return attachments_line(self.item, self.attachments, self.files, extracted)

    def pages_of(self, heading: str) -> list[tuple[int | None, str]] | None:
        return next((pages for name, pages in self.sections if name == heading), None)

    def text(self) -> str:
        item = self.item
        lines = [f"{item.kind} {item.key}  docket {item.docket}" + ("  WITHDRAWN" if item.withdrawn else "")]
        if item.title:
            lines.append(f"title: {item.title}")
        if self.document_answered:
            lines.append(f"answers: {self.document_answered}" + (f" ({self.phase})" if self.phase else ""))
        for label, stamp in (("posted", item.posted_date), ("received", item.received_date),
                             ("modified", item.last_modified)):
            lines.append(f"{label}: {eastern_instant(stamp) or '-'}")
        lines += who(item)
        if kept := kept_attributes(item):
            lines.append(f"record: {kept}")
        if self.campaign:
            lines.append(f"campaign: one of {self.campaign['size']} (campaign {self.campaign['id']})")
        lines += [f"link: {self.link}", "", "== comment", item.body or "(no inline text)", "",
                  "== attachments", self.summary()]
        for a in self.attachments:
            lines += ["", f"-- {a.filename}" + (f": {a.title}" if a.title else "") + f" ({self._facts(a)})"]
            lines += _page_lines(self.pages_of(a.filename), self.extracted)
        lines += ["", "== stages", table(stage_table(self.rt, item, self.rows, self.files), EXPLAIN_HEADER)]
        return "\n".join(lines)

    def _facts(self, a) -> str:
        size = (f", {a.size:,} bytes" if a.size is not None
                else f", {a.declared_size:,} bytes declared" if a.declared_size is not None else "")
        states = "; ".join(f"{label} {self.file_state(stage, a.filename) or '-'}"
                           for label, stage in (("download", "backfill.file"), ("extract", "extract.file"),
                                                ("OCR", "ocr")))
        return f"{a.format or '?'}{size}; {states}"

    def document(self) -> dict:
        """The JSON document: instants as stored (UTC), as every JSON docketeer prints."""
        from pipeline.reading import reports

        item = self.item
        return {
            "id": item.key, "kind": item.kind, "docket": item.docket, "title": item.title,
            "document": self.document_answered, "phase": self.phase,
            "posted_date": item.posted_date, "received_date": item.received_date,
            "last_modified": item.last_modified, "withdrawn": bool(item.withdrawn),
            "submitter": item.submitter, "organization": item.organization,
            "organisations_resolved": [{"id": org, "organisation": name, "written": written, "source": source}
                                       for org, name, written, source in reports.resolved_organisations(item.key)],
            "record": {label: value for label, value in reports.kept_attributes(item)},
            "campaign": self.campaign, "link": self.link, "body": item.body,
            "attachments_summary": self.summary(), "extracted": self.extracted,
            "attachments": [self._attachment(a) for a in self.attachments],
            "stages": [{key: (None if value == "" else value) for key, value in zip(STAGE_KEYS, row, strict=True)}
                       for row in stage_table(self.rt, item, self.rows, self.files, when=_stored)],
        }

    def _attachment(self, a) -> dict:
        pages = self.pages_of(a.filename)
        return {"file": a.filename, "ordinal": a.ordinal, "title": a.title, "format": a.format, "size": a.size,
                "declared_size": a.declared_size, "download": self.file_state("backfill.file", a.filename),
                "extract": self.file_state("extract.file", a.filename), "ocr": self.file_state("ocr", a.filename),
                "pages": None if pages is None else [{"page": number, "text": text} for number, text in pages]}


def _stored(stamp: str | datetime | None) -> str:
    """An instant as JSON keeps it: the stored UTC text (the index DB's are datetimes)."""
    if isinstance(stamp, datetime):
        return iso(stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC))
    return stamp or ""


def _page_lines(pages: list | None, extracted: bool) -> list[str]:
    if pages is None:
        return ["(no text extracted)" if extracted else "(not extracted yet)"]
    lines = []
    for number, text in pages:
        lines += [*([f"[page {number}]"] if number is not None else []), text]
    return lines


def _answered(item) -> tuple[str | None, str | None]:
    """(the document the comment answers, as its record names it; the rule's phase that
    document stands for, once the lineage stage tied them)."""
    from pipeline.reading import lineage

    document, phase = lineage.ties_among([item.key]).get(item.key, (None, None))
    return item.comment_on_document_id or document, phase


def _campaign(key: str) -> dict | None:
    """{"id", "size", "submissions", "added"} of the form-letter campaign the comment is one of (a group of
    one is none), as the comment page reads it."""
    from pipeline.reading import campaigns

    return campaigns.campaign_info([key]).get(key)
