"""What a search may be asked, checked once for ``docketeer search`` and the search page: the
query's text, the days it is bounded by, what it looks in (comments, documents or both), and
the campaign, organisation, topic, position or attribute it is narrowed to.

A bad argument is a message (``BadSearch``: exit 2 on the command line, 400 on the page),
never an exception from the database (a NUL byte PostgreSQL refuses, a day past 9999-12-31
whose next midnight overflows) and never a filter silently dropped (an unknown campaign used
to show every result, unfiltered).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date

from pipeline.errors import DocketeerError
from pipeline.positions import POSITIONS
from pipeline.text_validity import SEARCH_CONTROL

MAX_QUERY_CHARS = 500
# Years of four digits: what a stored instant can be compared with as text.
FIRST_DAY, LAST_DAY = date(1000, 1, 1), date(9999, 12, 31)
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
# Control characters (NUL among them) never belong in a search and some cannot be stored.
CONTROL = SEARCH_CONTROL
# What a search looks in, as the page's ``kind=`` and the command's ``--kind`` say it -> the
# index's collection (None: every one).
KINDS = {"both": None, "comments": "comments", "documents": "documents"}


class BadSearch(DocketeerError):
    """A search argument that cannot be searched for: the message says which and why."""


def query_text(text: str, what: str = "query") -> str:
    """The text searched for (or an organisation looked for): no control characters, at
    most MAX_QUERY_CHARS, spaces around it dropped."""
    if CONTROL.search(text):
        raise BadSearch(f"the {what} holds a control character (such as NUL): {text[:60]!r}")
    return text.strip()[:MAX_QUERY_CHARS]


def day(text: str, what: str) -> str:
    """A calendar day YYYY-MM-DD from FIRST_DAY to LAST_DAY ('' when none is given)."""
    text = text.strip()
    if not text:
        return ""
    try:
        given = date.fromisoformat(text) if _DAY.fullmatch(text) else None
    except ValueError:
        given = None
    if given is None:
        raise BadSearch(f"{what}: not a date (YYYY-MM-DD): {text[:40]!r}")
    if not FIRST_DAY <= given <= LAST_DAY:
        raise BadSearch(f"{what}: {text} is outside {FIRST_DAY} to {LAST_DAY}")
    return given.isoformat()


def day_range(first: str, last: str) -> None:
    """Days given as ``day`` gives them: the first not after the last."""
    if first and last and first > last:
        raise BadSearch(f"from {first} is after to {last}: no day is in between")


def campaign(campaign_id: str, members_of: Callable[[str], list[str] | None]) -> list[str]:
    """The item keys of a campaign that exists (``members_of`` looks it up)."""
    members = members_of(campaign_id)
    if not members:
        raise BadSearch(f"no campaign {campaign_id[:100]!r} in this store")
    return members


def organisation(text: str) -> str:
    """An organisation (or submitter) filter that some item matches, as the search matches it:
    contained, in any case, in a name as written or in a resolved organisation's names."""
    from pipeline.reading.organisation_filter import (
        MAX_FILTER_CHARS,
        resolved_members,
        written_matches,
    )
    from pipeline.store.models import Item

    wanted = query_text(text, "organisation")[:MAX_FILTER_CHARS]
    if not wanted:
        return ""
    # The filter's own rule (a % or _ is a character, a name compared by its head): a
    # pattern of wildcards over a long stored name would take seconds.
    written = written_matches(wanted)
    members = resolved_members(wanted)
    found = Item.select(Item.key).where(written if members is None else written | Item.key.in_(members)).limit(1)
    if not found.exists():
        raise BadSearch(f"no submitter or organisation contains {wanted[:100]!r} in this store")
    return wanted


def topic(text: str) -> str:
    """A topic of some docket's topic map ('' when none is given): a search narrowed to a
    topic no map holds is a message, never an empty answer."""
    from pipeline.store.models import Topic

    wanted = query_text(text, "topic")
    if wanted and not Topic.select(Topic.id).where(Topic.id == wanted).exists():
        raise BadSearch(f"no topic {wanted[:100]!r} in this store (`docketeer topics DOCKET` lists a docket's)")
    return wanted


def position(text: str) -> str:
    """A position of the positions stage (``POSITIONS``; '' when none is given). A comment the
    stage has not placed (not run, or its docket not estimated yet) matches no position: the
    facets count those apart, as not estimated."""
    wanted = text.strip()
    if wanted and wanted not in POSITIONS:
        raise BadSearch(f"position {wanted[:40]!r} is not one of: {', '.join(POSITIONS)}")
    return wanted


# The record's kept attributes a search or a page may be narrowed to (schema v12's columns,
# ``pipeline.reading.browsing.ATTRIBUTES``): the argument's name -> how a message says it.
ATTRIBUTES = {"subtype": "subtype", "category": "category", "state": "state or province", "country": "country"}


def attribute_values(params) -> dict[str, str]:
    """The attribute filters of a page's query string (or any mapping), as given, bounded."""
    return {name: (params.get(name) or "").strip()[:MAX_QUERY_CHARS] for name in ATTRIBUTES}


def attribute_text(name: str, text: str) -> str:
    """The value of an attribute filter as given: no control characters, at most
    MAX_QUERY_CHARS ('' when none is given). The browse page's check: an unknown value
    there is an empty page, as an unknown organisation is."""
    return query_text(text, ATTRIBUTES[name])


def attribute(name: str, text: str) -> str:
    """An attribute filter that some comment has, matched exactly (as its facet counts it):
    a search narrowed to a value no comment has is a message, never an empty answer."""
    from pipeline.reading.browsing import ATTRIBUTES as COLUMNS
    from pipeline.store.models import Item

    wanted = attribute_text(name, text)
    if not wanted:
        return ""
    if not Item.select(Item.key).where(COLUMNS[name] == wanted).limit(1).exists():
        raise BadSearch(f"no comment has {ATTRIBUTES[name]} {wanted[:100]!r} in this store")
    return wanted
