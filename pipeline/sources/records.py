"""One record normaliser: every known shape of a regulations.gov record to the stored fields.

The API and the mirror hand out the same records in several shapes: current and older
(list items without ``lastModifiedDate``, documents without ``objectId``), details with and
without ``included`` attachments (the mirror often holds comment JSON fetched without
``include=attachments``: only ``relationships.attachments.links``), and flags as booleans or
as the strings ``"True"``/``"False"``. Fetch and backfill, from either source, store what
this module makes of them, so one record always gives the same row.

Rules: a missing optional field is absent (None), never an error; a field of the wrong type
or an unreadable value (``receiveDate '12345'``) is that item's ``BadRecord``, never the
docket's. Instants stay the API's UTC strings once they parse; comment periods are also kept
as US Eastern calendar dates, because regulations.gov's deadlines are Eastern: a
``commentEndDate`` of ``2025-09-23T03:59:59Z`` is the September 22 deadline.
"""

from __future__ import annotations

import logging
import re

from pipeline import text_validity
from pipeline.clock import eastern_day
from pipeline.errors import BadRecord, InvalidIdentifier
from pipeline.html_text import html_to_text
from pipeline.ids import validate_id
from pipeline.sources import record_checks
from pipeline.sources.api_time import parse_api_time

log = logging.getLogger("docketeer")

# String fields of a list summary (API name -> column); each may be absent, never another type.
SUMMARY_TEXT = {"title": "title", "objectId": "object_id"}
SUMMARY_INSTANTS = {"postedDate": "posted_date", "lastModifiedDate": "last_modified"}
# A document's own summary: v4 details call it ``docAbstract`` (ACF-2025-0038-0001's
# detail, real); ``abstract`` is read too, as other shapes of the record name it.
ABSTRACTS = ("docAbstract", "abstract")
# What a record may say of an attachment's order and size before it reaches the database.
MAX_ORDINAL = 100_000
MAX_SIZE = 2**62
# The attributes of a detail people filter and count by (API name -> column), kept as the
# record writes them: strings, each may be absent or null.
KEPT_TEXT = {
    "subtype": "subtype",
    "category": "category",
    "stateProvinceRegion": "state_province_region",
    "country": "country",
    "govAgency": "gov_agency",
    "govAgencyType": "gov_agency_type",
    "trackingNbr": "tracking_nbr",
    # Where the submitter writes from, and who filed for them (USTR-2015-0010-0003 names its
    # representative; USTR's comments give ``city`` beside their state and country).
    "city": "city",
    "submitterRep": "submitter_rep",
    # Why the agency withdrew the item (USTR-2015-0010-0015: "Upddate to agenda", as written)
    # or keeps its content back.
    "reasonWithdrawn": "reason_withdrawn",
    "restrictReason": "restrict_reason",
    "restrictReasonType": "restrict_reason_type",
}
# ``pageCount``: the pages regulations.gov counts in the item's content file (a document's,
# DOS-2022-0004-0001: 31; older records write 0 for "not counted", kept as written).
MAX_PAGES = 10**7
# ``duplicateComments``: how many more submissions the record stands for (a mass-mail
# campaign's record says 15851). A billion is more than regulations.gov ever received.
MAX_DUPLICATES = 10**9


# --------------------------------------------------------------------------- typed values


def attributes_of(record: object, what: str) -> dict:
    """A record's ``attributes`` object ({} when absent); BadRecord when it is anything else."""
    if not isinstance(record, dict):
        raise BadRecord(f"{what} is a {type(record).__name__}, not an object")
    attrs = record.get("attributes")
    if attrs is None:
        return {}
    if not isinstance(attrs, dict):
        raise BadRecord(f"{what}.attributes is a {type(attrs).__name__}, not an object")
    return attrs


def text(attrs: dict, name: str) -> str | None:
    """A string field as people read and export it: valid text without control characters
    (``text_validity.shown``); absent or null is None, another JSON type the item's BadRecord."""
    value = raw_text(attrs, name)
    return None if value is None else text_validity.shown(value)


def raw_text(attrs: dict, name: str) -> str | None:
    """A string field as the record writes it (control characters kept), made encodable: a
    lone UTF-16 surrogate (valid JSON, no character) is U+FFFD."""
    value = attrs.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return text_validity.valid(value)
    raise BadRecord(f"`{name}` is a {type(value).__name__}, not a string")


def lone_surrogates_in(record: object) -> int:
    """How many lone surrogates the strings of a record (keys included) hold: what its
    stored fields had replaced with U+FFFD, counted in the item's decision."""
    found, stack = 0, [record]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found += text_validity.lone_surrogates(value)
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found


def instant(attrs: dict, name: str) -> str | None:
    """An API time (UTC) as the API wrote it, once it parses; absent or empty is None."""
    value = text(attrs, name)
    if not value:
        return None
    record_checks.instant(value, name)  # parses, and is a possible date
    return value


def eastern_date(attrs: dict, name: str) -> str | None:
    """The US Eastern calendar date (YYYY-MM-DD) of an API time: the date people read."""
    value = instant(attrs, name)
    return None if value is None else eastern_day(parse_api_time(value)).isoformat()


def flag(attrs: dict, name: str) -> bool:
    """A boolean; the mirror's older JSON writes ``"True"``/``"False"``. Absent is False."""
    value = attrs.get(name)
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise BadRecord(f"`{name}` is not a boolean: {str(value)[:40]!r}")


def bounded_int(attrs: dict, name: str, maximum: int) -> int | None:
    """A whole number in 0..maximum (None: absent or not a number, as older records have it)."""
    value = attrs.get(name)
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return None
    if not 0 <= value <= maximum:
        raise BadRecord(f"`{name}` {str(value)[:40]} is out of range (0..{maximum})")
    return value


def count(attrs: dict, name: str, maximum: int) -> int | None:
    """A count the record gives as a number (older JSON: as a string of digits); absent or
    null is None, anything else (a fraction, a word, out of 0..maximum) the item's BadRecord."""
    value = attrs.get(name)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRecord(f"`{name}` is not a whole number: {rendering(value)}")
    if not 0 <= value <= maximum:
        raise BadRecord(f"`{name}` {str(value)[:40]} is out of range (0..{maximum})")
    return value


def file_url(file_format: dict) -> str:
    """A file format's ``fileUrl``: only http(s) URLs are ever requested."""
    url = file_format["fileUrl"]
    if not url.lower().startswith(("https://", "http://")):
        raise BadRecord(f"fileUrl is not an http(s) URL: {url[:200]!r}")
    return url


# --------------------------------------------------------------------------- list items


def rendering(value: object, limit: int = 60) -> str:
    """A short, safe rendering of an untrusted value for reasons and logs: ASCII only (a NUL
    or a newline is escaped, never written), cut to ``limit`` characters."""
    if isinstance(value, str):
        value = value[: limit * 2]  # never render a megabyte to keep sixty characters of it
    shown = ascii(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def list_item_label(raw: object) -> str:
    """What names a list item that has no safe id: its id rendered, or what it lacks."""
    if not isinstance(raw, dict):
        return f"a {type(raw).__name__}, not an object"
    if raw.get("id") is None:
        return "no id"
    return f"id {rendering(raw['id'])}"


def summary_fields(attrs: dict) -> dict:
    """The stored fields of a list item (comment or document)."""
    record_checks.check(attrs, record_checks.ATTRIBUTES, "")
    fields = {column: text(attrs, name) for name, column in SUMMARY_TEXT.items()}
    fields.update({column: instant(attrs, name) for name, column in SUMMARY_INSTANTS.items()})
    fields["withdrawn"] = flag(attrs, "withdrawn")
    return fields


def listed_attributes(record: dict, what: str) -> dict:
    """A detail record (the mirror's JSON ``data``) as the API's list would show it: the
    same attributes, ``lastModifiedDate`` from ``modifyDate`` (details carry only that) as
    the list writes it, in UTC to the second. Items fetched from either source then have
    the same fields and the same summary hash."""
    attrs = attributes_of(record, what)
    last = attrs.get("lastModifiedDate") or attrs.get("modifyDate") or attrs.get("postedDate")
    if isinstance(last, str) and last:
        try:
            last = parse_api_time(last).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            pass  # left as written: summary_fields makes it this item's BadRecord
    return {**attrs, "lastModifiedDate": last}


def comment_summary(attrs: dict, document_id: str) -> dict:
    return {**summary_fields(attrs), "comment_on_document_id": document_id}


def comment_window(doc: dict) -> dict:
    """What a walk needs of one comment-bearing document. Without an objectId (older
    records) ``object_id`` is None: its comments cannot be listed, yet its period counts."""
    attrs = attributes_of(doc, f"document {doc.get('id')}")
    document_id = validate_id(doc["id"], "document id")
    object_id = attrs.get("objectId")
    if object_id is None:
        log.warning("document %s has no objectId: its comments cannot be listed", document_id)
    else:
        try:
            validate_id(object_id, "objectId")
        except InvalidIdentifier:
            # The document's own failure (its comments are not listed), never the docket's.
            raise BadRecord(f"`objectId` is not a safe id: {rendering(object_id)}") from None
    return {
        "id": document_id,
        "object_id": object_id,
        # Eastern dates for people and the seal rule; the instants as the record gives them.
        "start": eastern_date(attrs, "commentStartDate"),
        "end": eastern_date(attrs, "commentEndDate"),
        "opens_at": instant(attrs, "commentStartDate"),
        "closes_at": instant(attrs, "commentEndDate"),
    }


# --------------------------------------------------------------------------- details


def detail_fields(body: dict) -> dict:
    """The stored fields of a detail response (comment or document, either source)."""
    record_checks.detail(body)
    attrs = attributes_of(body.get("data"), "data")
    names = [text(attrs, "firstName"), text(attrs, "lastName")]
    # A document has no comment text: its abstract, when the record gives one, is what it
    # says itself, so it is indexed even when its content file is missing or unreadable.
    original = raw_text(attrs, "comment")
    if original is None:
        given = (raw_text(attrs, name) for name in ABSTRACTS)
        original = next((abstract for abstract in given if abstract and abstract.strip()), None)
    # The parser takes no control characters; an entity (``&#27;``) may make one again.
    body = text_validity.shown(html_to_text(text_validity.shown(original))) if original is not None else None
    return {
        "body": body,
        # The original is kept for fidelity only when it held markup (or control characters)
        # the text does not.
        "body_html": original if original != body else None,
        "submitter": " ".join(n.strip() for n in names if n and n.strip()) or None,
        "organization": text(attrs, "organization"),
        "received_date": instant(attrs, "receiveDate"),
        "withdrawn": flag(attrs, "withdrawn"),
        "comment_on_document_id": text(attrs, "commentOnDocumentId"),
        "duplicate_comments": count(attrs, "duplicateComments", MAX_DUPLICATES),
        "page_count": count(attrs, "pageCount", MAX_PAGES),
        **{column: text(attrs, name) for name, column in KEPT_TEXT.items()},
    }


def lists_attachments(body: dict) -> bool:
    """Does the detail say which attachments the item has? A response to
    ``include=attachments`` does: its ``included`` array, or the resource linkage
    ``relationships.attachments.data`` (``[]``: none). A record fetched without it (older
    mirror JSON: only ``relationships.attachments.links``) does not, and its attachments are
    unknown, not zero."""
    if isinstance(body.get("included"), list):
        return True
    data = body.get("data")
    relationships = data.get("relationships") if isinstance(data, dict) else None
    attachments = relationships.get("attachments") if isinstance(relationships, dict) else None
    return isinstance(attachments, dict) and isinstance(attachments.get("data"), list)


def included_attachments(body: dict) -> list[dict]:
    """The ``included`` attachments; [] for a detail fetched without include=attachments."""
    included = body.get("included")
    if included is None:
        return []
    record_checks.check(included, record_checks.ListOf(record_checks.RESOURCE), "included")
    return [i for i in included if isinstance(i, dict) and i.get("type") == "attachments"]


# --------------------------------------------------------------------------- dockets


def docket_fields(data: dict) -> dict:
    attrs = data.get("attributes") if isinstance(data.get("attributes"), dict) else {}
    return {"agency": text(attrs, "agencyId"), "title": text(attrs, "title"), "rin": rin(attrs)}


def rin(attrs: dict) -> str | None:
    """The Regulation Identifier Number a docket's record gives (``rin``: DOS-2022-0004 says
    ``1400-AE27``); older and non-rulemaking records write none, null, or ``"Not Assigned"``."""
    value = text(attrs, "rin")
    value = value.strip().upper() if value else None
    if not value or not RIN_SHAPE.fullmatch(value):
        return None
    return value


# A RIN is four digits (the agency), a hyphen and four letters or digits ("1400-AE27").
RIN_SHAPE = re.compile(r"\d{4}-[A-Z0-9]{4}")


# --------------------------------------------------------------------------- document lineage


def document_lineage(doc: dict) -> dict:
    """What a rule's timeline needs of one document record (list item or detail, either
    source): its type (``Notice``, ``Proposed Rule``, ``Rule``, ``Supporting & Related
    Material``, ...), its Federal Register document number, its posted date and its comment
    window, as instants and as the Eastern dates people read. Each field may be absent."""
    attrs = attributes_of(doc, f"document {doc.get('id')}")
    fr_number = text(attrs, "frDocNum")
    return {
        "document_type": (text(attrs, "documentType") or "").strip() or None,
        "fr_doc_num": fr_number.strip() if fr_number and fr_number.strip() else None,
        "posted_at": instant(attrs, "postedDate"),
        "opens_at": instant(attrs, "commentStartDate"),
        "closes_at": instant(attrs, "commentEndDate"),
        "start": eastern_date(attrs, "commentStartDate"),
        "end": eastern_date(attrs, "commentEndDate"),
    }
