"""Atom feeds of new comments (per docket, per search, per organisation, per campaign) and the
same list as text for cron mail (``docketeer digest``).

A feed holds the comments most recently added or changed, latest first. Everything in it comes
from the stored rows, so it changes only when a run adds or changes comments: an entry's id is
the comment's address on regulations.gov (stable for ever), its ``updated`` the row's
``updated_at`` (written only when the source changed), and the feed's ``updated`` the latest of
them. A reader polling after a no-op run gets the same bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from pipeline.clock import eastern_date, iso, parse_iso, utcnow
from pipeline.ids import record_url
from pipeline.reading import browsing
from pipeline.text_validity import for_xml

FEED_ENTRIES = 50
SEARCH_READ = 200  # hits read for a search's feed: its best matches, then latest first
SUMMARY_CHARS = 1000
QUIET_FEED_UPDATED = "2000-01-01T00:00:00Z"  # a feed without entries: fixed, so it never churns
_SINCE = re.compile(r"^\s*(\d{1,6})\s*([mhdw])\s*$")


@dataclass(frozen=True)
class Feed:
    id: str
    title: str
    self_url: str
    page_url: str
    rows: list[browsing.CommentRow]


def entry_id(key: str, kind: str = "comment") -> str:
    return record_url(kind, key)


def latest(filters: browsing.BrowseFilters, limit: int | None = None) -> list[browsing.CommentRow]:
    """The comments ``filters`` allow that were added or changed last, latest first
    (``FEED_ENTRIES`` of them unless ``limit`` says)."""
    return browsing.comments(filters, sort="updated", limit=limit or FEED_ENTRIES)


def latest_of_keys(keys: list[str], limit: int | None = None) -> list[browsing.CommentRow]:
    """Of these items (a search's hits, comments or documents), the ones added or changed
    last, latest first."""
    return browsing.rows_of_keys(keys, limit=limit or FEED_ENTRIES)


def atom(feed: Feed, base_url: str) -> bytes:
    """The feed as Atom XML (RFC 4287), written by feedgen."""
    from feedgen.feed import FeedGenerator

    generator = FeedGenerator()
    generator.id(feed.id)
    generator.title(for_xml(feed.title))
    generator.author({"name": "docketeer"})
    generator.link(href=feed.self_url, rel="self", type="application/atom+xml")
    generator.link(href=feed.page_url, rel="alternate", type="text/html")
    generator.generator("docketeer")
    generator.updated(max((r.updated_at for r in feed.rows), default=QUIET_FEED_UPDATED))
    for row in feed.rows:
        entry = generator.add_entry(order="append")
        entry.id(entry_id(row.key, row.kind))
        # A feed never fails on what a record says: feedgen refuses what XML cannot hold
        # (ESC, BEL, a NUL an older store may keep), so it is left out of every text.
        entry.title(for_xml(f"{row.key}: {row.title}" if row.title else row.key))
        entry.updated(row.updated_at)
        if row.posted_date:
            entry.published(row.posted_date)
        entry.author({"name": for_xml(row.organization or row.submitter or "") or "anonymous"})
        # One link (feedgen 1.0 writes no rel on an entry's links, so each would be an
        # "alternate" and Atom allows one per type): the page here. Its id is regulations.gov's.
        entry.link(href=f"{base_url}/{'document' if row.kind == 'document' else 'comment'}/{row.key}",
                   rel="alternate", type="text/html")
        entry.summary(for_xml(_summary(row)))
    return generator.atom_str(pretty=True)


def _summary(row: browsing.CommentRow) -> str:
    said = [f"docket {row.docket}", f"posted {eastern_date(row.posted_date) or '?'} (Eastern)"]
    if row.withdrawn:
        said.append("withdrawn")
    # Not its campaign's size: that changes when other comments join, and an entry's text
    # changes only with its ``updated``.
    if row.attachments:
        said.append(f"{row.attachments} attachment{'' if row.attachments == 1 else 's'}")
    body = " ".join((row.body or "").split())
    if len(body) > SUMMARY_CHARS:
        body = body[:SUMMARY_CHARS].rsplit(" ", 1)[0] + " …"
    return "; ".join(said) + (f"\n\n{body}" if body else "")


# --- docketeer digest ---------------------------------------------------------------------------


def since_instant(text: str) -> str:
    """``1d``, ``12h``, ``30m``, ``2w`` before now, an Eastern day ``YYYY-MM-DD`` (from its
    midnight) or an ISO instant (without a zone: UTC), as the UTC instant rows are compared
    with, from 1000-01-01 to 9999-12-31 (what a stored instant can be compared with as text).
    ValueError says what it takes."""
    from datetime import UTC, datetime

    from pipeline.clock import eastern_day_bounds
    from pipeline.reading.search_arguments import FIRST_DAY, LAST_DAY

    said = (f"--since {text[:60]!r}: give a span (30m, 12h, 1d, 2w), an Eastern day "
            "(YYYY-MM-DD) or an instant (2026-03-01T12:00:00Z)")
    found = _SINCE.match(text)
    try:
        if found:
            unit = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[found.group(2)]
            instant = utcnow() - timedelta(**{unit: int(found.group(1))})
        elif "T" in text.upper():  # an instant (a cron job's own record of its last mail)
            instant = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
            instant = (instant if instant.tzinfo else instant.replace(tzinfo=UTC)).astimezone(UTC)
        elif text.strip():
            instant = parse_iso(eastern_day_bounds(text.strip(), None)[0])
        else:
            raise ValueError("empty")
    except (ValueError, OverflowError, TypeError):  # OverflowError: a span back past year 1
        raise ValueError(said) from None
    if not FIRST_DAY <= instant.date() <= LAST_DAY:
        raise ValueError(f"--since {text[:60]!r} is {instant.date().isoformat()}: give a time "
                         f"from {FIRST_DAY} to {LAST_DAY}")
    return iso(instant)


def digest(since: str, dockets: list[str] | None, limit: int) -> list[tuple[str, int, list[browsing.CommentRow]]]:
    """Per docket (in id order): how many comments were added or changed since ``since`` (a UTC
    instant) and the latest ``limit`` of them. Two statements per docket with news."""
    changed = browsing.changed_counts(since, dockets)
    return [(docket, n, latest(browsing.BrowseFilters(docket=docket, changed_since=since), limit))
            for docket, n in changed]


def digest_text(since: str, found, base_url: str | None) -> str:
    if not found:
        return f"No comment added or changed since {eastern_instant_text(since)}.\n"
    lines = []
    for docket, n, rows in found:
        lines.append(f"{docket}: {n:,} comment{'' if n == 1 else 's'} added or changed since "
                     f"{eastern_instant_text(since)}")
        for row in rows:
            who = row.organization or row.submitter or ""
            lines.append(f"  {row.key}  {eastern_date(row.posted_date) or '?':10}  {who[:40]:40}  "
                         f"{(row.title or '')[:60]}".rstrip())
            lines.append(f"    {base_url}/comment/{row.key}" if base_url else f"    {entry_id(row.key)}")
        if n > len(rows):
            lines.append(f"  … and {n - len(rows):,} more")
        lines.append("")
    return "\n".join(lines)


def eastern_instant_text(instant: str) -> str:
    from pipeline.clock import eastern_instant

    return eastern_instant(parse_iso(instant))
