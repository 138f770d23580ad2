"""Discovery: which dockets exist. From a configured list, a Federal Register search, or a mirror."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from pipeline.clock import iso, window_start
from pipeline.store import dockets as docket_rows
from pipeline.store import meta


@dataclass(frozen=True)
class Discovered:
    known: int
    new: int


def _stamp_key(mode: str) -> str:
    return f"discovered_at:{mode}"


def is_current(runtime, now: datetime) -> bool:
    """True when discovery has nothing to do: no I/O beyond one state-DB read."""
    settings = runtime.settings
    mode = settings.discover
    if mode == "none":
        return True
    if mode == "list":
        wanted = settings.docket_list
        if not wanted:
            return True
        return docket_rows.all_known(wanted)
    stamp = meta.read_value(_stamp_key(mode))
    return stamp is not None and stamp >= window_start(now, settings.discover_seconds)


def discover(runtime, now: datetime) -> Discovered:
    settings = runtime.settings
    mode = settings.discover
    closes: dict[str, str] = {}
    if mode == "list":
        ids = settings.docket_list
    elif mode == "fr":
        closes = _from_federal_register(runtime, now)
        ids = sorted(closes)
    elif mode == "mirror":
        closes = _from_mirror(runtime)
        ids = sorted(closes)
    else:
        ids = []
    new = docket_rows.ensure_dockets(ids, discovered_by=mode)
    _note_close_dates(closes)
    if mode in ("fr", "mirror"):
        meta.write_value(_stamp_key(mode), iso(now))
    return Discovered(known=len(docket_rows.all_docket_ids()), new=new)


def _from_federal_register(runtime, now: datetime) -> dict[str, str]:
    """docket id -> latest ``comments_close_on`` ("" when no rule gave one); at most 4 calls."""
    from pipeline.sources.federal_register import FederalRegisterClient

    settings = runtime.settings
    agencies = [a.strip() for a in settings.fr_agencies.split(",") if a.strip()]
    since = date.fromisoformat(settings.fr_since) if settings.fr_since else date(now.year, 1, 1)
    client = FederalRegisterClient(settings.fr_base, pace_seconds=settings.pace_seconds)
    closes: dict[str, str] = {}
    for rule in client.search_proposed_rules(agencies, since, None):
        close = rule.comments_close_on.isoformat() if rule.comments_close_on else ""
        for docket_id in rule.docket_ids:
            closes[docket_id] = max(closes.get(docket_id, ""), close)
    return closes


def _note_close_dates(closes: dict[str, str]) -> None:
    """Give dockets not resolved yet the close date the Federal Register announced.

    Only a hint: fetch's resolve replaces it with the documents' own comment dates, and a
    resolved docket is never touched here.
    """
    for docket_id, close in closes.items():
        if close:
            docket_rows.note_close_date(docket_id, close)


def _from_mirror(runtime) -> dict[str, str]:
    """docket id -> its comments' close date ("" when unknown or already known): every docket
    of the mirror, or of the agencies in ``mirror_agencies``. The close date is read from the
    documents of new dockets only; a known docket costs nothing but its folder name."""
    from pipeline.sources import connect

    settings = runtime.settings
    mirror = connect.mirror(settings)
    agencies = [a.strip() for a in settings.mirror_agencies.split(",") if a.strip()]
    if agencies:
        refs = [ref for agency in agencies for ref in mirror.list_agency_dockets(agency)]
    else:
        refs = mirror.list_dockets()
    known = set(docket_rows.all_docket_ids())
    return {ref.docket_id: "" if ref.docket_id in known else mirror_close_date(mirror, ref)
            for ref in refs}


def mirror_close_date(mirror, ref) -> str:
    """The latest comment close date (Eastern) of the docket's comment-bearing documents."""
    import logging

    from pipeline.errors import BadRecord, DocketeerError
    from pipeline.fetch.walk import comment_documents
    from pipeline.sources import records

    listing = mirror.docket_listing(ref.docket_id, ref.agency)
    documents = []
    for document_id, key in sorted(listing.documents.items()):
        try:
            data = mirror.read_json(key).get("data")
            documents.append({"id": document_id, "attributes": records.listed_attributes(data, document_id)})
        except (BadRecord, DocketeerError, OSError) as exc:  # a hint only: fetch resolves it again
            logging.getLogger("docketeer").warning("%s: document %s: %s", ref.docket_id, document_id, exc)
    ends = []
    for document in comment_documents(documents):
        try:
            ends.append(records.eastern_date(document["attributes"], "commentEndDate"))
        except BadRecord:
            continue
    return max((e for e in ends if e), default="")
