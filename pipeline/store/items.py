"""Comment and document rows: upserts that write nothing when nothing changed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from pipeline.clock import iso, utcnow
from pipeline.fingerprints import json_digest
from pipeline.store import prepared
from pipeline.store.models import Attachment, Item

Upsert = Literal["created", "updated", "unchanged"]


def content_digest(fields: dict) -> str:
    """A stable hash of normalized fields (sorted keys, no whitespace)."""
    return json_digest(fields, ensure_ascii=True)


def summary_hashes(docket_id: str, keys: list[str] | None = None) -> dict[str, str | None]:
    """item key -> summary hash for a docket (only of ``keys``: a page), in one query."""
    query = Item.select(Item.key, Item.summary_hash).where(Item.docket == docket_id)
    if keys is not None:
        query = query.where(Item.key.in_(keys))
    return dict(query.tuples())


def upsert_summary(
    key: str, docket_id: str, kind: str, fields: dict, summary_hash: str, known: str | None | bool
) -> Upsert:
    """Insert or update from a list summary; ``known`` is the stored hash (False: no row)."""
    if known is not False and known == summary_hash:
        return "unchanged"
    now = iso(utcnow())
    if known is False:
        Item.insert(key=key, docket=docket_id, kind=kind, summary_hash=summary_hash,
                    created_at=now, updated_at=now, **fields).on_conflict_ignore().execute()
        return "created"
    Item.update(summary_hash=summary_hash, updated_at=now, **fields).where(Item.key == key).execute()
    return "updated"


def insert_new(rows: list[dict], now: str) -> None:
    """Rows of items seen for the first time (a list page): one prepared statement per set
    of columns, run for every row (peewee building a page's multi-row SQL value by value
    cost more than the insert)."""
    by_columns: dict[tuple[str, ...], list[tuple]] = {}
    for row in rows:
        values = {**row, "created_at": now, "updated_at": now}
        by_columns.setdefault(tuple(values), []).append(tuple(values.values()))
    for columns, values in by_columns.items():
        prepared.run_many(f"item.insert_new:{','.join(columns)}", _insert_new(columns), values)


def _insert_new(columns: tuple[str, ...]):
    fields = [getattr(Item, name) for name in columns]
    return lambda row: Item.insert_many([row], fields=fields).on_conflict_ignore()


def items_by_key(keys: Iterable[str]) -> list[Item]:
    return list(Item.select().where(Item.key.in_(list(keys))))


def search_metadata(docket_id: str, fields: tuple[str, ...]) -> dict[str, dict]:
    """item key -> its non-empty ``fields`` (text columns: title, submitter...), for a docket, in
    one query."""
    columns = [getattr(Item, name) for name in fields]
    query = Item.select(Item.key, *columns).where(Item.docket == docket_id)
    return {row[0]: {k: v for k, v in zip(fields, row[1:], strict=True) if v} for row in prepared.raw_rows(query)}


def items_needing_detail(docket_id: str, force: bool, size: int = 5000) -> Iterator[list[Item]]:
    """Items whose detail was never fetched or whose list summary changed since (``force``:
    every item), ``size`` at a time in key order (keyset pagination): a forced backfill of a
    million comments holds a page of rows, not the docket's."""
    after = None
    while True:
        query = Item.select().where(Item.docket == docket_id)
        if not force:
            query = query.where(~detail_current())
        if after is not None:
            query = query.where(Item.key > after)
        page = list(query.order_by(Item.key).limit(size))
        if page:
            yield page
        if len(page) < size:
            return
        after = page[-1].key


def detail_current():
    """The item's detail was fetched for its current list summary (``has_current_detail``
    as SQL)."""
    return Item.detail_summary_hash.is_null(False) & (Item.detail_summary_hash == Item.summary_hash)


# What backfill stores as an item's detail hash when it could not read its record: the item
# was withdrawn ("gone") or its record failed for good ("failed"), and no detail is stored.
NO_DETAIL_GONE, NO_DETAIL_FAILED = "gone", "failed"
NO_DETAIL = (NO_DETAIL_GONE, NO_DETAIL_FAILED)


def has_current_detail(item: Item) -> bool:
    return item.detail_summary_hash is not None and item.detail_summary_hash == item.summary_hash


def update_detail(key: str, fields: dict, detail_hash: str, summary_hash: str | None) -> bool:
    """Store normalized detail fields; returns False (and writes nothing) if unchanged."""
    row = Item.get(Item.key == key)
    if row.detail_hash == detail_hash and row.detail_summary_hash == summary_hash:
        return False
    values = {"detail_hash": detail_hash, "detail_summary_hash": summary_hash}
    if row.detail_hash != detail_hash:
        values.update(fields, updated_at=iso(utcnow()))
    Item.update(**values).where(Item.key == key).execute()
    return True


@dataclass(frozen=True)
class Detail:
    """One item's detail to record (``update_detail``'s arguments), with the item's row as
    the caller read it (only recording the item changes it: the docket's lease keeps other
    runs out)."""

    item: Item
    fields: dict
    detail_hash: str
    summary_hash: str | None


def record_details(details: Iterable[Detail], now: str | None = None) -> int:
    """``update_detail`` for many items, with no read (each item's row is the one given):
    one prepared statement per set of columns. An unchanged item is not written; one whose
    detail is the same but whose summary moved gets the new hash only. Returns the number of
    items written."""
    now = now or iso(utcnow())
    shapes: dict[tuple[str, ...], list[tuple]] = {}
    for d in details:
        row = d.item
        if row.detail_hash == d.detail_hash and row.detail_summary_hash == d.summary_hash:
            continue
        values = {"detail_hash": d.detail_hash, "detail_summary_hash": d.summary_hash}
        if row.detail_hash != d.detail_hash:
            values.update(d.fields, updated_at=now)
        columns = _detail_columns(values)
        shapes.setdefault(columns, []).append(
            tuple(_DETAIL_FIELDS[name].db_value(values[name]) for name in columns) + (row.key,))
        for name, value in values.items():  # the caller's row as the table now holds it
            setattr(row, name, value)
    for columns, rows in shapes.items():
        prepared.run_many("item.detail:" + ",".join(columns), _detail_update(columns), rows)
    return sum(len(rows) for rows in shapes.values())


def _detail_update(columns: tuple[str, ...]):
    def build(row: tuple):
        return Item.update(dict(zip([_DETAIL_FIELDS[name] for name in columns], row, strict=False))
                           ).where(Item.key == row[-1])
    return build


_DETAIL_FIELDS = Item._meta.fields


def _detail_columns(values: dict) -> tuple[str, ...]:
    """The columns of ``values`` in the order peewee writes an UPDATE's SET (the model's)."""
    return tuple(field.name for field in Item._meta.sorted_fields if field.name in values)


# Above this many keys, a lookup streams the rows in the keys' range and keeps the wanted ones
# instead of listing the keys in the query: peewee builds an IN list at ~15 us a key, and
# SQLite refuses a statement with more than 250,000. (A stage asks a page of keys in key
# order, so the range is about the page, not the docket.)
KEYS_IN_QUERY = 500


def bodies_of(docket_id: str, item_keys: Iterable[str]) -> dict[str, str | None]:
    """item key -> inline comment text, for the given items of one docket."""
    return _column_of(docket_id, item_keys, Item.body)


def kinds_of(docket_id: str, item_keys: Iterable[str]) -> dict[str, str]:
    """item key -> comment | document, for the given items of one docket."""
    return _column_of(docket_id, item_keys, Item.kind)


def titles_of(docket_id: str, item_keys: Iterable[str]) -> dict[str, str | None]:
    """item key -> its title, for the given items of one docket."""
    return _column_of(docket_id, item_keys, Item.title)


def _column_of(docket_id: str, item_keys: Iterable[str], column) -> dict:
    """item key -> ``column`` for the given items: by key for a few, by docket for many."""
    wanted = set(item_keys)
    if not wanted:
        return {}
    query = Item.select(Item.key, column)
    if len(wanted) <= KEYS_IN_QUERY:
        query = query.where(Item.key.in_(sorted(wanted)))
    else:
        query = query.where((Item.docket == docket_id) & Item.key.between(min(wanted), max(wanted)))
    return {key: value for key, value in query.tuples().iterator() if key in wanted}


def attachments_of(item_keys: Iterable[str], docket_id: str | None = None) -> dict[str, list[Attachment]]:
    """item key -> its attachment rows ordered by filename, in one query. Give the items'
    ``docket_id`` when the keys may be many (see KEYS_IN_QUERY)."""
    wanted = set(item_keys)
    rows: dict[str, list[Attachment]] = {}
    if not wanted:
        return rows
    if docket_id is not None and len(wanted) > KEYS_IN_QUERY:
        which = Attachment.item.between(min(wanted), max(wanted))
    else:
        which = Attachment.item.in_(sorted(wanted))
    query = Attachment.select().where(which).order_by(
        Attachment.item, Attachment.ordinal, Attachment.filename
    )
    for row in query.iterator():
        if row.item in wanted:
            rows.setdefault(row.item, []).append(row)
    return rows


def docket_attachments(docket_id: str) -> dict[str, list[Attachment]]:
    query = (
        Attachment.select(Attachment)
        .join(Item, on=(Attachment.item == Item.key))
        .where(Item.docket == docket_id)
        .order_by(Attachment.item, Attachment.ordinal, Attachment.filename)
    )
    rows: dict[str, list[Attachment]] = {}
    for row in query:
        rows.setdefault(row.item, []).append(row)
    return rows


def attachment(item_key: str, filename: str) -> Attachment | None:
    return Attachment.get_or_none((Attachment.item == item_key) & (Attachment.filename == filename))


def set_attachment_title(item_key: str, filename: str, title: str | None) -> None:
    Attachment.update(title=title).where(
        (Attachment.item == item_key) & (Attachment.filename == filename)).execute()


def attachment_titles(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(item key, filename) -> the attachment's title, for those that have one, in one query."""
    pairs = set(pairs)
    if not pairs:
        return {}
    keys = sorted({key for key, _ in pairs})
    query = (Attachment.select(Attachment.item, Attachment.filename, Attachment.title)
             .where(Attachment.item.in_(keys) & Attachment.title.is_null(False)).tuples())
    return {(key, name): title for key, name, title in query if (key, name) in pairs and title}


def withdrawn_among(keys: Iterable[str]) -> set[str]:
    """Those of ``keys`` whose item is withdrawn (the row keeps its id), in one query."""
    keys = sorted(set(keys))
    if not keys:
        return set()
    return {key for (key,) in Item.select(Item.key).where(Item.key.in_(keys) & Item.withdrawn).tuples()}


def upsert_attachment(item_key: str, filename: str, values: dict) -> None:
    """One row per (item, filename): inserted, or updated in place."""
    (Attachment.insert(item=item_key, filename=filename, **values)
        .on_conflict(conflict_target=[Attachment.item, Attachment.filename], update=values).execute())


# upsert_attachments' columns, in the order of its rows' tuples.
ATTACHMENT_COLUMNS = ("item", "filename", "ordinal", "format", "source_url", "declared_size", "sha256", "size",
                      "title")
_ATTACHMENT_FIELDS = [getattr(Attachment, name) for name in ATTACHMENT_COLUMNS]


def upsert_attachments(rows: Sequence[tuple]) -> int:
    """``upsert_attachment`` for many rows (tuples in ``ATTACHMENT_COLUMNS`` order), one
    prepared statement."""
    def build(row: tuple):
        return Attachment.insert_many([row], fields=_ATTACHMENT_FIELDS).on_conflict(
            conflict_target=[Attachment.item, Attachment.filename], preserve=_ATTACHMENT_FIELDS[2:])
    return prepared.run_many("attachment.upsert", build, [tuple(row) for row in rows])


def stored_files(item_key: str) -> list[list]:
    """[filename, sha256] of the item's attachment rows, by filename."""
    rows = Attachment.select(Attachment.filename, Attachment.sha256).where(
        Attachment.item == item_key).order_by(Attachment.filename).tuples()
    return [list(row) for row in rows]


def docket_items(docket_id: str, kind: str = "comment") -> list[Item]:
    """Every item of one kind of a docket, by key (``docketeer export``)."""
    return list(Item.select().where((Item.docket == docket_id) & (Item.kind == kind)).order_by(Item.key))
