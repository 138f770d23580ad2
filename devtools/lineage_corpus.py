"""A generated rule for the lineage tests and benchmark: two dockets of one RIN, a proposed
rule in the first and the final rule in the second, each with its comment window, and
comments on both as backfill leaves them (item rows and a backfill ``ok`` row each)."""

from __future__ import annotations

import hashlib

RIN = "0938-ZZ01"
PROPOSED_DOCKET, FINAL_DOCKET = "LIN-2026-0001", "LIN-2026-0002"
DOCUMENTS = {  # document -> (docket, type, posted, window start, window end)
    f"{PROPOSED_DOCKET}-0001": (PROPOSED_DOCKET, "Proposed Rule", "2026-01-05T05:00:00Z", "2026-01-05", "2026-03-06"),
    f"{FINAL_DOCKET}-0001": (FINAL_DOCKET, "Rule", "2026-07-01T04:00:00Z", "2026-07-01", "2026-08-31"),
}


def seed_rule() -> None:
    """The two dockets, their RIN and their documents (the runtime's state DB must be open)."""
    from pipeline.store import dockets
    from pipeline.store.models import Docket, DocketDocument

    dockets.ensure_dockets([PROPOSED_DOCKET, FINAL_DOCKET], "list")
    Docket.update(rin=RIN).where(Docket.id.in_([PROPOSED_DOCKET, FINAL_DOCKET])).execute()
    for document, (docket, kind, posted, start, end) in DOCUMENTS.items():
        DocketDocument.insert(document=document, docket=docket, document_type=kind, posted_at=posted,
                              start=start, end=end, fr_doc_num=f"2026-{hash_number(document)}") \
            .on_conflict_ignore().execute()


def hash_number(text: str) -> str:
    return str(int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % 100000).zfill(5)


def seed_comments(docket: str, first: int, count: int, organisation_of=None) -> list[str]:
    """``count`` comments on the docket's document, numbered from ``first``; returns their keys."""
    from pipeline.clock import iso, utcnow
    from pipeline.store import item_states
    from pipeline.store.models import Item, database

    document = f"{docket}-0001"
    now = iso(utcnow())
    keys = [f"{docket}-{n:07d}" for n in range(first, first + count)]
    rows = []
    with database.atomic():
        for start in range(0, len(keys), 500):
            batch = keys[start:start + 500]
            Item.insert_many([{"key": k, "docket": docket, "kind": "comment", "comment_on_document_id": document,
                               "organization": organisation_of(k) if organisation_of else None,
                               "summary_hash": k, "detail_hash": k, "detail_summary_hash": k,
                               "created_at": now, "updated_at": now} for k in batch]).on_conflict_ignore().execute()
    rows = [{"stage": "backfill", "item": k, "docket": docket, "state": "ok", "run_id": "seed", "fingerprint": k}
            for k in keys]
    item_states.transition_many(rows)
    return keys
