"""Every state-DB row of one docket, counted or deleted (``docketeer forget --purge``)."""

from __future__ import annotations

from pipeline.clock import iso, utcnow
from pipeline.errors import DocketeerError
from pipeline.store.blobs import attachment_key
from pipeline.store.db import is_postgres
from pipeline.store.models import (
    Attachment,
    Campaign,
    CampaignBand,
    CampaignMember,
    Docket,
    DocketFailure,
    DocketStage,
    Item,
    ItemClaim,
    ItemState,
    Lease,
    MirrorObject,
    MirrorScan,
    OrganisationAcronym,
    OrganisationMember,
    Run,
    database,
)


class DocketBusy(DocketeerError):
    """A run holds a lease on the docket: its rows are in use."""


def _item_keys(docket_id: str):
    return Item.select(Item.key).where(Item.docket == docket_id)


def _queries(docket_id: str) -> dict[str, object]:
    """table -> the rows of this docket in it, in the order they are deleted."""
    return {
        "attachments": Attachment.item.in_(_item_keys(docket_id)),
        "campaign members": CampaignMember.docket == docket_id,
        "campaign bands": CampaignBand.docket == docket_id,
        "campaigns": Campaign.docket == docket_id,
        # An organisation and its spellings stay: other dockets' comments may be from it.
        "organisation members": OrganisationMember.docket == docket_id,
        "organisation acronyms": OrganisationAcronym.docket == docket_id,
        "item states": ItemState.docket == docket_id,
        "markers": DocketStage.docket == docket_id,
        "stage failures": DocketFailure.docket == docket_id,
        "runs": Run.docket == docket_id,
        "leases": Lease.docket == docket_id,
        "item claims": ItemClaim.docket == docket_id,
        "items": Item.docket == docket_id,
        "docket": Docket.id == docket_id,
        "mirror objects": MirrorObject.docket == docket_id,
        "mirror scans": MirrorScan.docket == docket_id,
    }


_MODELS = {"attachments": Attachment, "campaign members": CampaignMember,
           "campaign bands": CampaignBand, "campaigns": Campaign, "item states": ItemState,
           "organisation members": OrganisationMember, "organisation acronyms": OrganisationAcronym,
           "markers": DocketStage, "stage failures": DocketFailure, "runs": Run, "leases": Lease, "items": Item, "docket": Docket,
           "mirror objects": MirrorObject, "item claims": ItemClaim, "mirror scans": MirrorScan}


def count_rows(docket_id: str) -> dict[str, int]:
    return {name: _MODELS[name].select().where(where).count()
            for name, where in _queries(docket_id).items()}


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
        live = Lease.select().where((Lease.docket == docket_id) & (Lease.expires_at > iso(utcnow())))
        if live.exists():
            raise DocketBusy(f"{docket_id}: a run holds it ({live.get().stage}); try again once it ends")
        candidates = only_its_attachments(docket_id) if blobs is not None else []
        rows = {name: _MODELS[name].delete().where(where).execute()
                for name, where in _queries(docket_id).items()}
        deleted = []
        for sha in candidates:
            if not Attachment.select().where(Attachment.sha256 == sha).exists():  # the reference check
                blobs.delete(attachment_key(sha))
                deleted.append(attachment_key(sha))
        return rows, deleted
