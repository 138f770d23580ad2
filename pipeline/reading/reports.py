"""Read-only queries behind the admin command's reports (``docketeer dockets``, ``stats``,
``explain``) and ``docketeer verify``: each is one query (or one per table), never one per item.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from peewee import Case, fn

from pipeline.failures import RETRY
from pipeline.store.items import NO_DETAIL
from pipeline.store.models import Attachment, Docket, Item, ItemState, Lease, Run

# Rows whose stage has not (re)done the item yet: no result to count as progress.
NOT_DONE = ("pending", "stale", RETRY)
FILE_STAGES = ("backfill.file", "extract.file")


# --- dockets ------------------------------------------------------------------------------------


def docket_count() -> int:
    return Docket.select().count()


def page_count(total: int, per_page: int) -> int:
    """How many pages ``total`` rows make at ``per_page`` each (1 when there are none: the
    first page of an empty list says so)."""
    return max(1, -(-total // per_page))


def docket_page(offset: int, limit: int, after: str | None = None) -> list[Docket]:
    """One page of the known dockets, in id order (a store may know 276,000: lists of them are
    paged, and each page's reads are filtered to its dockets). ``after``: the page past that
    id, read from the key (a walk over every page skips no rows again, as an offset would)."""
    query = Docket.select().order_by(Docket.id).limit(limit)
    return list(query.where(Docket.id > after) if after is not None else query.offset(offset))


def _of(query, column, dockets: list[str] | None):
    """``query`` narrowed to these dockets (None: every docket)."""
    return query if dockets is None else query.where(column.in_(list(dockets)))


def docket_seals() -> dict[str, Docket]:
    """docket id -> its row with ``sealed_at`` and ``retry_due_at`` only (what targets read)."""
    return {d.id: d for d in Docket.select(Docket.id, Docket.sealed_at, Docket.retry_due_at)}


def partial_stages(dockets: list[str] | None = None) -> dict[str, list[str]]:
    """docket -> the stages whose last finished run over it stopped on a spent budget: left
    partial, continued by the next run (one query; of these dockets, None: all)."""
    finished = Run.finished_at.is_null(False) & Run.stage.is_null(False) & Run.docket.is_null(False)
    if dockets is not None:
        finished &= Run.docket.in_(list(dockets))
    latest = (Run.select(Run.docket, Run.stage, fn.MAX(Run.started_at).alias("at"))
              .where(finished).group_by(Run.docket, Run.stage).alias("latest"))
    query = (Run.select(Run.docket, Run.stage)
             .join(latest, on=((Run.docket == latest.c.docket) & (Run.stage == latest.c.stage)
                               & (Run.started_at == latest.c.at)))
             .where(finished & (Run.budget_spent == True))  # noqa: E712
             .distinct())
    stopped: dict[str, list[str]] = {}
    for row in query:
        stopped.setdefault(row.docket, []).append(row.stage)
    return {docket: sorted(stages) for docket, stages in stopped.items()}


def comment_progress(dockets: list[str] | None = None) -> dict[str, dict[str, int]]:
    """docket -> comments / detailed / extracted, for comments only, in one grouped query (of
    these dockets, None: all).

    comments: listed by fetch; detailed: backfill stored its detail (a ``failed`` item whose
    record was read but one of whose files failed for good keeps its body and submitter, and
    counts; one whose record could not be read does not); extracted: extract wrote a
    combined.md (any outcome, including failed attachments). An item waiting to retry has no
    result yet and counts in none of them, except in backfill one whose record is stored
    while its files wait for the mirror (it counts as detailed). Beside each, "<column> failed"
    (failed, unsupported, too large) and "<column> waiting to retry" (``progress_cell``).
    """
    no_detail = Item.detail_hash.is_null() | Item.detail_hash.in_(list(NO_DETAIL))
    has_detail = Case(None, [(no_detail, 0)], 1)
    query = (
        ItemState.select(ItemState.docket, ItemState.stage, ItemState.state, has_detail,
                         fn.COUNT(ItemState.item))
        .join(Item, on=(Item.key == ItemState.item))
        .where((Item.kind == "comment") & ItemState.stage.in_(["fetch", "backfill", "extract"]))
    )
    query = _of(query, ItemState.docket, dockets).group_by(
        ItemState.docket, ItemState.stage, ItemState.state, has_detail).tuples()
    progress: dict[str, dict[str, int]] = {}
    column = {"fetch": "comments", "backfill": "detailed", "extract": "extracted"}
    for docket, stage, state, detail_stored, n in query:
        counts = progress.setdefault(docket, {})
        if (aside := SET_ASIDE.get(state)) and stage != "fetch":
            key = f"{column[stage]} {aside}"  # "extracted failed": said beside the count
            counts[key] = counts.get(key, 0) + n
        waits_for_files = stage == "backfill" and state == RETRY and detail_stored
        if (state in NOT_DONE and not waits_for_files) or (stage == "backfill" and state == "failed"
                                                            and not detail_stored):
            continue
        counts[column[stage]] = counts.get(column[stage], 0) + n
    return progress


def submissions(docket_id: str | None = None, dockets: list[str] | None = None) -> dict[str, tuple[int, int]]:
    """docket -> (comment records, submissions they represent), in one grouped query (of one
    docket, of these, or of all): a record standing for a mass-mail campaign says how many more
    it stands for (``duplicate_comments``); regulations.gov's "comments received" counts those."""
    represented = fn.SUM(1 + fn.COALESCE(Item.duplicate_comments, 0))
    which = (Item.kind == "comment") if docket_id is None else (Item.kind == "comment") & (Item.docket == docket_id)
    query = _of(Item.select(Item.docket, fn.COUNT(Item.key), represented).where(which), Item.docket, dockets)
    query = query.group_by(Item.docket).tuples()
    return {docket: (records, int(total or 0)) for docket, records, total in query}


# Item states that a count of done items would hide, by how a progress cell names them (an
# ``ocr_needed`` extract row is not among them: the OCR stage takes it from there).
SET_ASIDE = {"failed": "failed", "unsupported": "failed", "too_large": "failed",
             RETRY: "waiting to retry"}


def progress_cell(counts: dict[str, int], column: str) -> str:
    """'34', or '34 (1 failed, 2 waiting to retry)': a count with what it leaves out or holds
    back (``docketeer dockets`` and the status page)."""
    aside = [f"{counts[key]} {how}" for how in dict.fromkeys(SET_ASIDE.values())
             if counts.get(key := f"{column} {how}")]
    done = str(counts.get(column, 0))
    return f"{done} ({', '.join(aside)})" if aside else done


def retry_waiting(dockets: list[str] | None = None) -> dict[str, int]:
    """docket -> how many of its items wait to retry, in any stage (of these dockets, None: all).

    Counted by item, not by row: a comment whose attachment waits has a ``retry`` row in
    ``backfill`` and one in ``backfill.file`` (``<comment>/<file>``), and is one item.
    Retry rows are few, so they are read and folded here rather than in SQL.
    """
    query = _of(ItemState.select(ItemState.docket, ItemState.item).where(ItemState.state == RETRY),
                ItemState.docket, dockets).tuples()
    items: dict[str, set[str]] = {}
    for docket, item in query:
        items.setdefault(docket, set()).add(item.split("/", 1)[0])
    return {docket: len(keys) for docket, keys in items.items()}


# --- item states --------------------------------------------------------------------------------


@dataclass(frozen=True)
class StateCount:
    docket: str
    stage: str
    state: str
    count: int
    next_attempt_at: str | None  # the earliest among these rows (only retry rows have one)


def state_counts(docket: str | None = None) -> list[StateCount]:
    """Rows per docket, stage and state, ordered, from the state rows (one grouped query, and
    ``read_by_ocr``'s few): an extract row left ``ocr_needed`` whose scans OCR has read counts
    as ``ocr_done``, so nothing says a scan waits for OCR beside OCR's own row for it."""
    query = ItemState.select(ItemState.docket, ItemState.stage, ItemState.state,
                             fn.COUNT(ItemState.item), fn.MIN(ItemState.next_attempt_at))
    if docket is not None:
        query = query.where(ItemState.docket == docket)
    query = query.group_by(ItemState.docket, ItemState.stage, ItemState.state)
    counts = [StateCount(*row) for row in query.tuples()]
    done = Counter(read_by_ocr(docket).values())  # (docket, stage) -> rows OCR has since read
    moved = [StateCount(c.docket, c.stage, c.state, c.count - done[(c.docket, c.stage)], c.next_attempt_at)
             if c.state == OCR_NEEDED else c for c in counts]
    moved += [StateCount(d, stage, OCR_DONE, n, None) for (d, stage), n in done.items()]
    return sorted((c for c in moved if c.count), key=lambda c: (c.docket, c.stage, c.state))


# An extract row (a comment's, or one of its files') is left ``ocr_needed`` for good: the OCR
# stage plans its work by it, and extract writes it again whenever it re-renders the comment.
# What OCR made of the scan is in its own ``ocr`` row; counts read the pair through this rule.
OCR_NEEDED = "ocr_needed"
OCR_DONE = "ocr_done"  # how counts and explain name an ocr_needed row OCR has since read


def read_by_ocr(docket: str | None = None, comment: str | None = None,
                dockets: list[str] | None = None) -> dict[tuple[str, str], tuple[str, str]]:
    """(stage, key) -> (docket, stage) of each extract row left ``ocr_needed`` that waits for
    nothing any more (of one docket, of these, or one comment, or all). A file's row (``extract.file``,
    '<comment>/<file>') when its ``ocr`` row is past pending and vouches for the combined.md
    stored now (``ocr_in_force``: OCR's text is in it, whatever OCR's outcome); the comment's
    own row (``extract``) when every file of it left ``ocr_needed`` is so read. Scans are few:
    this reads only their rows, their comments' extract rows and their ``ocr`` rows."""
    from pipeline.extract.stage import FILE_STAGE
    from pipeline.extract.stage import STAGE as EXTRACT
    from pipeline.store.in_lists import in_chunks

    query = ItemState.select(ItemState.docket, ItemState.stage, ItemState.item).where(
        (ItemState.state == OCR_NEEDED) & ItemState.stage.in_((EXTRACT, FILE_STAGE)))
    if docket is not None:
        query = query.where(ItemState.docket == docket)
    query = _of(query, ItemState.docket, dockets)
    if comment is not None:
        query = query.where((ItemState.item == comment) | ItemState.item.startswith(f"{comment}/"))
    waiting = list(query.tuples())
    files = [key for _, stage, key in waiting if stage == FILE_STAGE]
    owners = {key: key.split("/", 1)[0] for key in files}
    extracted, ocr = {}, {}
    for chunk in in_chunks(sorted(set(owners.values()))):
        extracted.update((r.item, r) for r in ItemState.select().where((ItemState.stage == EXTRACT)
                                                                       & ItemState.item.in_(chunk)))
    for chunk in in_chunks(files):
        ocr.update((r.item, r) for r in ItemState.select().where((ItemState.stage == "ocr")
                                                                 & ItemState.item.in_(chunk)))
    read = {key for key in files if (row := ocr_in_force(ocr.get(key), extracted.get(owners[key]))) is not None
            and row.state not in NOT_DONE}
    unread = {owners[key] for key in files if key not in read}
    return {(stage, key): (d, stage) for d, stage, key in waiting
            if (key in read if stage == FILE_STAGE else key in extracted and key not in unread)}


def find_item(key: str) -> Item | None:
    return Item.get_or_none(Item.key == key)


def stage_rows(key: str, stage_order: list[str]) -> list[ItemState]:
    """The item's own state rows (not its files'), in pipeline order (other rows last)."""
    rows = ItemState.select().where(ItemState.item == key)
    return sorted(rows, key=lambda r: (stage_order.index(r.stage) if r.stage in stage_order
                                       else len(stage_order), r.stage))


def attachments_of(key: str) -> list[Attachment]:
    return list(Attachment.select().where(Attachment.item == key)
                .order_by(Attachment.ordinal, Attachment.filename))


def file_rows_of(key: str) -> dict[tuple[str, str], ItemState]:
    """(stage, '<item>/<file>') -> the download, extract and OCR rows of the item's files."""
    query = ItemState.select().where(ItemState.stage.in_((*FILE_STAGES, "ocr"))
                                     & ItemState.item.startswith(f"{key}/"))
    return {(r.stage, r.item): r for r in query}


# --- verify -------------------------------------------------------------------------------------


def all_attachments() -> list[Attachment]:
    return list(Attachment.select().order_by(Attachment.item, Attachment.filename))


def stage_states(stage: str) -> list[tuple[str, str, str]]:
    """(docket, item, state) of every row of one stage."""
    return list(ItemState.select(ItemState.docket, ItemState.item, ItemState.state)
                .where(ItemState.stage == stage).tuples())


def extract_states() -> list[tuple[str, str, str]]:
    """(docket, item, state) of every extract row: each past pending vouches for a combined.md."""
    from pipeline.extract.stage import STAGE as EXTRACT

    return stage_states(EXTRACT)


def file_states() -> dict[tuple[str, str], str]:
    """(stage, '<item>/<file>') -> state, for every download and extract row of a file."""
    query = ItemState.select(ItemState.stage, ItemState.item, ItemState.state).where(
        ItemState.stage.in_(FILE_STAGES))
    return {(stage, item): state for stage, item, state in query.tuples()}


def item_dockets() -> dict[str, str]:
    """item key -> its docket, for every item."""
    return dict(Item.select(Item.key, Item.docket).tuples())


def leased_dockets(now: str) -> set[str]:
    """Dockets some run holds an unexpired lease on (any stage): they are being worked on."""
    return {row.docket for row in Lease.select(Lease.docket).where(Lease.expires_at > now)}


# --- the web pages (docketeer serve) ------------------------------------------------------------


def find_docket(docket_id: str) -> Docket | None:
    return Docket.get_or_none(Docket.id == docket_id)


def comments_per_hour(docket_id: str) -> dict[str, int]:
    """'YYYY-MM-DDTHH' (UTC) -> comments posted in that hour, in one grouped query.

    Hours, not days: US Eastern is a whole number of hours from UTC, so the page can fold
    them into Eastern days exactly without reading one row per comment.
    """
    hour = fn.SUBSTR(Item.posted_date, 1, 13)
    query = (Item.select(hour, fn.COUNT(Item.key))
             .where((Item.docket == docket_id) & (Item.kind == "comment") & Item.posted_date.is_null(False))
             .group_by(hour).tuples())
    return dict(query)


def top_organizations(docket_id: str, limit: int) -> list[tuple[str, int]]:
    """The organisations with most comments in the docket, most first (ties by name)."""
    count = fn.COUNT(Item.key)
    query = (Item.select(Item.organization, count)
             .where((Item.docket == docket_id) & (Item.kind == "comment")
                    & Item.organization.is_null(False) & (Item.organization != ""))
             .group_by(Item.organization).order_by(count.desc(), Item.organization).limit(limit))
    return list(query.tuples())


@dataclass(frozen=True)
class RetryReason:
    stage: str
    reason: str
    count: int
    next_attempt_at: str | None


def retry_reasons(docket_id: str) -> list[RetryReason]:
    """Why the docket's rows wait to retry: per stage and reason, with the earliest next try."""
    query = (ItemState.select(ItemState.stage, fn.COALESCE(ItemState.reason, ""), fn.COUNT(ItemState.item),
                              fn.MIN(ItemState.next_attempt_at))
             .where((ItemState.docket == docket_id) & (ItemState.state == RETRY))
             .group_by(ItemState.stage, fn.COALESCE(ItemState.reason, ""))
             .order_by(ItemState.stage, fn.COALESCE(ItemState.reason, "")))
    return [RetryReason(*row) for row in query.tuples()]


def pending_counts(dockets: list[str] | None = None) -> dict[str, int]:
    """docket -> rows left ``pending`` (a run is on them, or one died: the next run repairs;
    of these dockets, None: all)."""
    query = _of(ItemState.select(ItemState.docket, fn.COUNT(ItemState.item)).where(ItemState.state == "pending"),
                ItemState.docket, dockets).group_by(ItemState.docket).tuples()
    return dict(query)


# --- declared attachments -----------------------------------------------------------------------


@dataclass(frozen=True)
class FileStanding:
    """What became of one declared file, for people (explain, export, the comment page):
    ``state`` is the extraction outcome once its bytes are stored (ok, ocr_needed, failed,
    unsupported; ``stored`` before extract ran), else what backfill says of it (waiting,
    gone, too_large, failed); ``label`` says it in words."""

    state: str
    reason: str | None
    label: str


# Download states of a file whose bytes are not stored, in people's words.
_NOT_STORED = {"missing": ("waiting", "waiting for the mirror"), "gone": ("gone", "gone"),
               "too_large": ("too_large", "too large"), "failed": ("failed", "failed")}
_EXTRACTED = {"ok": "read", "ocr_needed": "waiting for OCR", "failed": "unreadable", "unsupported": "unsupported"}
LABEL_ORDER = ("read", "stored", "waiting for OCR", "waiting for the mirror", "waiting to retry", "waiting",
               "unreadable", "unsupported", "too large", "gone", "failed")


def file_standing(attachment: Attachment, download: ItemState | None, extracted: ItemState | None,
                  ocr: ItemState | None = None) -> FileStanding:
    """One declared file's standing from its row and its ``backfill.file``/``extract.file`` rows;
    for a scan extract left ``ocr_needed``, its ``ocr`` row, when given, is the final word (the
    caller gives it only while it vouches for the text stored now: its content hash is that of
    the item's combined.md)."""
    if attachment.sha256:
        if extracted is None or extracted.state in NOT_DONE:
            return FileStanding("stored", None, "stored")
        if extracted.state == "ocr_needed" and ocr is not None and ocr.state not in NOT_DONE:
            return FileStanding(ocr.state, ocr.reason, _EXTRACTED.get(ocr.state, ocr.state))
        return FileStanding(extracted.state, extracted.reason, _EXTRACTED.get(extracted.state, extracted.state))
    if download is None or download.state in ("pending", "stale"):
        return FileStanding("waiting", None, "waiting")
    if download.state == "failed" and download.detail == "transient":  # tried again at the item's retry
        return FileStanding("waiting", download.reason, "waiting to retry")
    state, label = _NOT_STORED.get(download.state, (download.state, download.state))
    return FileStanding(state, download.reason, label)


def ocr_in_force(ocr: ItemState | None, extracted_item: ItemState | None) -> ItemState | None:
    """A file's ``ocr`` row while it vouches for the item's combined.md stored now (its content
    hash is the one extract's item row records); None when extract re-rendered the item since
    (the OCR text is gone from it: the row then says nothing of the file)."""
    if ocr is None or extracted_item is None or ocr.content_hash != extracted_item.content_hash:
        return None
    return ocr


def attachment_count(item: Item, rows: list[Attachment]) -> int | None:
    """How many files the item has: its rows, when its record listed them or the mirror's
    binary folder showed them; None (unknown, not zero) when its record did not list them
    (older mirror JSON without ``included``) or no record was read yet."""
    return len(rows) if rows or item.attachments_listed else None


def attachments_summary(count: int | None, standings: list[FileStanding]) -> str:
    """'9 attachments: 2 read, 7 waiting for the mirror'; 'no attachments'; or, when the
    record did not say, 'attachments not listed in this record'."""
    if count is None:
        return "attachments not listed in this record"
    if count == 0:
        return "no attachments"
    labels = Counter(standing.label for standing in standings)
    order = sorted(labels, key=lambda label: (LABEL_ORDER.index(label) if label in LABEL_ORDER else len(LABEL_ORDER),
                                              label))
    noun = "attachment" if count == 1 else "attachments"
    return f"{count} {noun}: " + ", ".join(f"{labels[label]} {label}" for label in order)


# The kept attributes of a record as explain and the comment page name them (column, label).
KEPT_LABELS = (("duplicate_comments", "duplicates"), ("subtype", "subtype"), ("category", "category"),
               ("state_province_region", "state/province"), ("country", "country"),
               ("gov_agency", "government agency"), ("gov_agency_type", "agency type"),
               ("tracking_nbr", "tracking number"), ("city", "city"), ("submitter_rep", "submitted by"),
               ("reason_withdrawn", "withdrawn because"), ("restrict_reason", "restricted because"),
               ("restrict_reason_type", "restriction"), ("page_count", "pages"))


def resolved_organisations(key: str) -> list[tuple[str, str, str, str]]:
    """The organisations the item names, as the organisations stage resolved them, in its
    field's order: (id, canonical name, as written, where from: organization | title |
    signature). Empty before that stage ran over it, or when it names none. Explain and the
    comment page show these."""
    from pipeline.organisations.queries import members
    from pipeline.reading.organisations import organisation_names

    found = members([key]).get(key, [])
    names = organisation_names(row[0] for row in found)
    return [(organisation, names.get(organisation, organisation), written, source)
            for organisation, _, written, source, *_ in found]


def kept_attributes(item: Item) -> list[tuple[str, object]]:
    """(label, value) of the kept attributes the item's record gives (none for those it leaves
    empty; ``duplicates 0`` is left out: the record stands for itself alone)."""
    return [(label, getattr(item, name)) for name, label in KEPT_LABELS if getattr(item, name) not in (None, "", 0)]
