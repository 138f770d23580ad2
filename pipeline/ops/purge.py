"""Every state-DB row of one docket, counted or deleted (``docketeer forget --purge``): every
table's, found by its columns, so that a table added later is never left holding the docket."""

from __future__ import annotations

from pipeline.clock import iso, utcnow
from pipeline.engine.lease_holders import holder_alive
from pipeline.errors import DocketeerError
from pipeline.store import models
from pipeline.store.blobs import attachment_key
from pipeline.store.db import is_postgres
from pipeline.store.models import (
    Attachment,
    FederalRegisterDocument,
    Item,
    Lease,
    LineageLink,
    database,
)

# Tables no docket owns a row of: the store's own facts, and organisations with their
# spellings (other dockets' comments may be from them). Every other table of ``models.MODELS``
# is purged by its ``docket`` column, or its ``item`` column when it has none, so a table
# added later is purged without being named here (and the test listing every table says so).
SHARED = (models.Meta, models.Organisation, models.OrganisationVariant)
_LAST = (Item, models.Docket)  # the rows the others are found through go last


class DocketBusy(DocketeerError):
    """A run holds a lease on the docket: its rows are in use."""


def _item_keys(docket_id: str):
    return Item.select(Item.key).where(Item.docket == docket_id)


def _name(model) -> str:
    return model._meta.table_name.replace("_", " ")


def _condition(model, docket_id: str):
    """The rows of ``model`` that are this docket's."""
    fields = model._meta.fields
    if model is LineageLink:  # a link is both dockets': it goes with either
        return (LineageLink.docket == docket_id) | (LineageLink.other == docket_id)
    if model is FederalRegisterDocument:  # a record naming the docket: asked again if needed
        return FederalRegisterDocument.docket_ids.contains(f'"{docket_id}"')
    if model is models.Docket:
        return models.Docket.id == docket_id
    if "docket" in fields:
        return fields["docket"] == docket_id
    if "item" in fields:
        return fields["item"].in_(_item_keys(docket_id))
    raise TypeError(f"{model.__name__}: no docket or item column: say in purge.SHARED whose rows it holds")


def _queries(docket_id: str) -> dict[str, tuple[object, object]]:
    """table -> (model, the rows of this docket in it), in the order they are deleted."""
    ordered = [m for m in models.MODELS if m not in SHARED and m not in _LAST] + list(_LAST)
    return {_name(model): (model, _condition(model, docket_id)) for model in ordered}


def count_rows(docket_id: str) -> dict[str, int]:
    return {name: model.select().where(where).count() for name, (model, where) in _queries(docket_id).items()}


def only_its_attachments(docket_id: str) -> list[str]:
    """sha256 of the files only this docket's attachment rows refer to (a file attached to
    comments of several dockets is stored once, and stays for the others)."""
    own = Attachment.item.in_(_item_keys(docket_id))
    mine = {a.sha256 for a in Attachment.select(Attachment.sha256).where(own & Attachment.sha256.is_null(False))}
    if not mine:
        return []
    shared = {a.sha256 for a in Attachment.select(Attachment.sha256).where(
        ~own & Attachment.sha256.in_(list(mine)))}
    return sorted(mine - shared)


def delete_rows(docket_id: str, blobs=None) -> tuple[dict[str, int], list[str]]:
    """Delete every row of the docket and, with ``blobs``, the attachment files only it
    referred to, in one transaction; refused while a run holds a lease. Returns the rows
    deleted per table and the blob keys deleted.

    Which files are the docket's alone is decided inside the transaction, after its rows are
    gone, and each file is deleted only while no row refers to it: attachment rows cannot be
    added meanwhile (SQLite's write lock; on PostgreSQL the attachment table is locked against
    writes), so a backfill of another docket that stores the same file keeps it, its row
    written before this decision or after it, never between. A failure deleting a file rolls
    the rows back: a second purge finishes the job."""
    with database.atomic():
        if is_postgres(database.obj):
            database.execute_sql('LOCK TABLE "attachment" IN SHARE ROW EXCLUSIVE MODE')
        # A lease whose holder on this host has died holds nothing (the rule leases.acquire takes over by).
        live = [lease for lease in Lease.select().where((Lease.docket == docket_id) & (Lease.expires_at > iso(utcnow())))
                if holder_alive(lease.holder, lease.expires_at)]
        if live:
            raise DocketBusy(f"{docket_id}: a run holds it ({live[0].stage}, {live[0].holder}); "
                             "try again once it ends")
        candidates = only_its_attachments(docket_id) if blobs is not None else []
        rows = {name: model.delete().where(where).execute()
                for name, (model, where) in _queries(docket_id).items()}
        deleted = []
        for sha in candidates:
            if not Attachment.select().where(Attachment.sha256 == sha).exists():  # the reference check
                blobs.delete(attachment_key(sha))
                deleted.append(attachment_key(sha))
        return rows, deleted
