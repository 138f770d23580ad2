"""What a regulations.gov record may hold before the normaliser reads it: the JSON types of
the v4 shapes we accept, and the range of every date and number.

A record is untrusted input (the API, a mirror anyone can write to, a hand-edited file). A
value of the wrong JSON type (``included`` an object instead of a list, a ``fileFormats``
entry that is a string) or out of range (``postedDate 0001-01-01``: every Eastern-date
conversion after it overflows; a bar per day since year 2) is that item's ``BadRecord``
with a reason, decided here once, so no stage, page or plot downstream meets it.

The shapes are written as data (``DETAIL``, ``LIST_ITEM``, ...) rather than checked case by
case: a field named here has the type named here wherever it appears; a field not named is
not read by docketeer and is left alone (regulations.gov adds fields over time).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pipeline.errors import BadRecord
from pipeline.sources.api_time import parse_api_time

# The instants a record may carry. regulations.gov holds documents back to the 1990s and
# some agencies back-date older material; nothing is from before 1900, and a year past 2199
# is a typo or an attack. Eastern-date arithmetic is safe well inside these bounds.
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)
# Counts a record gives of itself (duplicates, an attachment's order): 0..MAX_COUNT; a
# file's declared size: 0..MAX_BYTES (what the database's integer holds).
MAX_COUNT = 10**9
MAX_BYTES = 2**62

STRING, BOOLEAN, INSTANT = "a string", "a boolean", "a date and time"
COUNT, BYTES = "a whole number", "a number of bytes"
OBJECT, LIST = "an object", "a list"


class ListOf:
    """A JSON list whose every element has the shape ``element``."""

    def __init__(self, element) -> None:
        self.element = element


class ObjectOf:
    """A JSON object whose named fields have the given shapes (other fields unchecked)."""

    def __init__(self, **fields) -> None:
        self.fields = fields


# Older records give an attachment's order and size as text, read as absent (``records``).
FILE_FORMAT = ObjectOf(fileUrl=STRING, format=STRING, size=(BYTES, STRING))
# Attributes of comments, documents and dockets, as list items and details carry them.
ATTRIBUTES = ObjectOf(
    title=STRING, objectId=STRING, docketId=STRING, agencyId=STRING, documentType=STRING,
    comment=STRING, docAbstract=STRING, abstract=STRING, firstName=STRING, lastName=STRING,
    organization=STRING, commentOnDocumentId=STRING, commentOnId=STRING, trackingNbr=STRING,
    subtype=STRING, category=STRING, stateProvinceRegion=STRING, country=STRING,
    govAgency=STRING, govAgencyType=STRING, city=STRING, submitterRep=STRING,
    reasonWithdrawn=STRING, restrictReason=STRING, restrictReasonType=STRING,
    # The mirror's older JSON writes flags as "True"/"False": the normaliser reads both.
    withdrawn=(BOOLEAN, STRING), openForComment=(BOOLEAN, STRING),
    postedDate=INSTANT, lastModifiedDate=INSTANT, modifyDate=INSTANT, receiveDate=INSTANT,
    commentStartDate=INSTANT, commentEndDate=INSTANT,
    duplicateComments=COUNT, docOrder=(COUNT, STRING), pageCount=(COUNT, STRING),
    fileFormats=ListOf(FILE_FORMAT), displayProperties=LIST, keywords=LIST, topics=LIST,
)
RESOURCE = ObjectOf(id=STRING, type=STRING, attributes=ATTRIBUTES, relationships=OBJECT, links=OBJECT)
LIST_ITEM = RESOURCE
DETAIL = ObjectOf(data=RESOURCE, included=ListOf(RESOURCE))


def check(value: object, shape, where: str) -> None:
    """BadRecord naming the first place where ``value`` is not of ``shape`` (None, JSON's
    null, is every field's "absent" and always allowed). ``where`` is the path shown; ""
    names an object's fields alone (``title``, as an item's attributes are named)."""
    if value is None:
        return
    if isinstance(shape, tuple):
        errors = []
        for one in shape:
            try:
                check(value, one, where)
                return
            except BadRecord as error:
                errors.append(error)
        raise errors[0]
    if isinstance(shape, ObjectOf):
        if not isinstance(value, dict):
            raise BadRecord(f"`{where}` is {_kind(value)}, not an object")
        for name, inner in shape.fields.items():
            field = value.get(name)
            # Absent fields and plain strings, most of a record, pass without a call or a
            # path built for a message they will not need (every record is checked).
            if field is None or (inner is STRING and isinstance(field, str)):
                continue
            check(field, inner, f"{where}.{name}" if where else name)
    elif isinstance(shape, ListOf):
        if not isinstance(value, list):
            raise BadRecord(f"`{where}` is {_kind(value)}, not a list")
        for n, element in enumerate(value):
            if element is not None:
                check(element, shape.element, f"{where}[{n}]")
    elif not _is(value, shape):
        raise BadRecord(f"`{where}` is {_kind(value)}, not {shape}")
    elif shape == COUNT:
        count(value, where)
    elif shape == BYTES:
        count(value, where, MAX_BYTES)
    elif shape == INSTANT and value:
        instant(value, where)


def _is(value: object, shape: str) -> bool:
    if shape in (STRING, INSTANT):
        return isinstance(value, str)
    if shape == BOOLEAN:
        return isinstance(value, bool)
    if shape in (COUNT, BYTES):
        return isinstance(value, int) and not isinstance(value, bool)
    if shape == OBJECT:
        return isinstance(value, dict)
    return isinstance(value, list)  # LIST


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "a whole number", float: "a fraction"}
    return names.get(type(value), f"a {type(value).__name__}")


def count(value: int, where: str, maximum: int = MAX_COUNT) -> int:
    if not 0 <= value <= maximum:
        raise BadRecord(f"`{where}` {str(value)[:40]} is out of range (0..{maximum})")
    return value


def instant(value: str, where: str) -> datetime:
    """An API time parsed and inside EARLIEST..LATEST; BadRecord otherwise."""
    try:
        parsed = parse_api_time(value)
    except (ValueError, OverflowError):
        raise BadRecord(f"`{where}` is not a date and time: {value[:40]!r}") from None
    if not EARLIEST <= parsed < LATEST:
        raise BadRecord(f"`{where}` {value[:40]!r} is not a possible date "
                        f"({EARLIEST.year}..{LATEST.year - 1})")
    return parsed


def docket_named(item_id: str, attrs: object = None) -> str | None:
    """The docket an item belongs to, as its own record says: its ``docketId`` when the
    record gives one (details, the mirror's JSON), else its id's prefix (a regulations.gov
    id is its docket's id and a number: ``FAA-2018-1084-0418``); None when neither says.
    A listing never decides it: a docket that lists another docket's item does not own it."""
    named = attrs.get("docketId") if isinstance(attrs, dict) else None
    if isinstance(named, str) and named:
        return named
    head, sep, tail = item_id.rpartition("-")
    return head if sep and head and tail.isdigit() else None


def detail(body: dict) -> dict:
    """A detail response (comment, document), checked against ``DETAIL``."""
    check(body, DETAIL, "")
    return body


def list_item(raw: dict) -> dict:
    """One item of a list page, checked against ``LIST_ITEM``."""
    check(raw, LIST_ITEM, "")
    return raw
