"""Build the state of "12 sealed dockets, 200,000 comments, all indexed" directly (or of
100,000s of dockets, one comment each, some of them open: ``build_many_sealed``, ``reopen_every``).

Running the whole chain on 200,000 comments takes hours (embedding alone); what a no-op
run over sealed dockets reads is only the docket rows and the stage markers, so the state
is written straight into the stores:

* state DB: one ``docket`` row per docket (resolved, pulled, sealed ``auto``), one ``item``
  row per comment, one ``item_state`` row per comment for fetch, backfill and extract (so
  the tables have their real size), and the fetch/backfill/extract markers, written with
  ``markers.write_marker`` under the docket's seal with the output fingerprints computed
  by ``item_states.docket_output_fingerprint`` from those rows;
* index DB: the docket markers, written by ``IndexDocket.write_marker`` itself (so under the
  same seal, with the input fingerprint the task computes), and one ``index_state`` row per comment
  (bulk SQL: the package has no bulk writer for it). No chunks: a sealed no-op never reads them;
* the campaigns, organisations, lineage, topics, sections and positions stages' rows and
  markers (``IndexAll`` runs them too, by default), the markers written by each stage's task
  (``CampaignGroups.write_marker``, ..., ``Positions.write_marker``).
"""

from __future__ import annotations

import json

from psycopg2.extras import execute_values

from pipeline.clock import iso, utcnow
from pipeline.engine import markers, registry
from pipeline.engine.completion import expected_input
from pipeline.index.database import IndexDB
from pipeline.store import item_states
from pipeline.store.models import Docket, DocketStage, Item, ItemState, database
from pipeline.tasks import (
    CampaignGroups,
    DocumentSections,
    IndexDocket,
    LinkRule,
    Positions,
    ResolveOrganisations,
    TopicMap,
)

STAGES = ("fetch", "backfill", "extract")
BATCH = 500  # rows per INSERT: SQLite's variable limit is 32,766


def docket_ids(count: int) -> list[str]:
    agencies = ("CMS", "EPA", "ACF", "FCC", "DOT", "HHS")
    return [f"{agencies[i % len(agencies)]}-2025-{i + 1:04d}" for i in range(count)]


def build_sealed(index_db: IndexDB, dockets: list[str], comments: int) -> None:
    now = iso(utcnow())
    per_docket = _spread(comments, len(dockets))
    for docket, count in zip(dockets, per_docket, strict=True):
        keys = [f"{docket}-{n + 2:06d}" for n in range(count)]
        _docket_row(docket, count, now)
        _items(docket, keys, now)
        for stage in STAGES:
            _states(stage, docket, keys, now)
        _markers(index_db, docket, keys, now)


def _spread(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _docket_row(docket: str, count: int, now: str) -> None:
    documents = [{"id": f"{docket}-0001", "object_id": "0900006" + docket[-4:] + "00001",
                  "start": "2025-01-06", "end": "2025-03-07"}]
    row = dict(
        id=docket, agency=docket.split("-")[0], title=f"Sealed docket {docket}",
        documents=json.dumps(documents), comment_start_date="2025-01-06",
        comment_end_date="2025-03-07", discovered_by="list", resolved_at=now,
        pull_watermark="2025-03-07T23:59:00Z", last_pull_at=now, last_pull_new=0,
        sealed_at=now, seal_reason="auto",
        counts_at_seal=json.dumps({s: {"ok": count} for s in STAGES}),
    )
    # Replaced if there (a rebuilt store), on SQLite and PostgreSQL alike.
    Docket.insert(**row).on_conflict(conflict_target=[Docket.id],
                                     preserve=[getattr(Docket, k) for k in row if k != "id"]).execute()


def _items(docket: str, keys: list[str], now: str) -> None:
    rows = [{"key": k, "docket": docket, "kind": "comment", "title": f"Comment {k}",
             "summary_hash": k, "detail_hash": k, "detail_summary_hash": k,
             "body": "See attached file(s)", "created_at": now, "updated_at": now} for k in keys]
    _insert(Item, rows)


def _states(stage: str, docket: str | None, keys: list[str], now: str,
            dockets_of: dict[str, str] | None = None) -> None:
    """``dockets_of`` (docket -> its one key): rows of many dockets, each its own."""
    owner = {k: d for d, k in dockets_of.items()} if dockets_of else {}
    rows = [{"stage": stage, "item": k, "docket": owner.get(k, docket), "fingerprint": f"{stage}:{k}",
             "content_hash": f"{stage}:{k}", "state": "ok", "run_id": "bench-build",
             "written_at": now} for k in keys]
    _insert(ItemState, rows)


def _insert(model, rows: list[dict]) -> None:
    with database.atomic():
        for start in range(0, len(rows), BATCH):
            model.insert_many(rows[start:start + BATCH]).on_conflict_ignore().execute()


def _markers(index_db: IndexDB, docket: str, keys: list[str], sealed_at: str) -> None:
    upstream = None
    for stage in STAGES:
        output = item_states.docket_output_fingerprint(stage, docket)
        markers.write_marker(docket, stage, version=1, sealed_at=sealed_at,
                             input_fingerprint=upstream, output_fingerprint=output,
                             run_id="bench-build")
        upstream = output
    # The index marker as IndexDocket itself writes it (whatever its input fingerprint is made of).
    task = IndexDocket(docket=docket)
    task.write_marker("bench-build", task.input_fingerprint())
    _index_states(index_db, docket, keys)
    # IndexAll's follow-on stages, in pipeline order (each setting on by default): campaigns after
    # the index, organisations and lineage after backfill, the topic map and the positions after
    # campaigns, the sections after the index.
    for follow_on in (CampaignGroups, ResolveOrganisations, LinkRule, TopicMap, DocumentSections, Positions):
        _states(follow_on.stage.name, docket, keys, sealed_at)
        task = follow_on(docket=docket)
        task.write_marker("bench-build", task.input_fingerprint())


def _index_states(index_db: IndexDB, docket: str, keys: list[str]) -> None:
    rows = [("comments", k, docket, f"index:{k}", f"text:{k}", 3, "hashing") for k in keys]
    conn = index_db._conn  # noqa: SLF001 - benchmark set-up only; no bulk writer exists
    with conn, conn.cursor() as cur:
        execute_values(
            cur,
            """INSERT INTO index_state (collection, item_key, docket, fingerprint, content_hash,
                   chunk_count, embedder_id, indexed_at) VALUES %s ON CONFLICT DO NOTHING""",
            rows, template="(%s, %s, %s, %s, %s, %s, %s, now())", page_size=2000,
        )


# --- many sealed dockets, one comment each, written in bulk ----------------------------------


def build_many_sealed(runtime, dockets: list[str]) -> None:
    """``build_sealed`` for 100,000 dockets in seconds: every table written in bulk, the
    markers' fingerprints computed by the package's own functions (one pass per stage)."""
    now = iso(utcnow())
    keys = {d: f"{d}-000002" for d in dockets}
    for start in range(0, len(dockets), 20 * BATCH):
        part = dockets[start:start + 20 * BATCH]
        _insert(Docket, [_many_docket_row(d, now) for d in part])
        _insert(Item, [{"key": keys[d], "docket": d, "kind": "comment", "title": "Comment",
                        "summary_hash": keys[d], "detail_hash": keys[d],
                        "detail_summary_hash": keys[d], "body": "See attached file(s)",
                        "created_at": now, "updated_at": now} for d in part])
        for stage in STAGES:
            _states(stage, None, [keys[d] for d in part], now, dockets_of=keys)
    upstream: dict[str, str] = {}
    produced: dict[str, dict[str, str]] = {}
    for stage in STAGES:
        outputs = produced[stage] = item_states.output_fingerprints(stage)
        rows = [{"docket": d, "stage": stage, "version": 1, "sealed_at": now,
                 "input_fingerprint": upstream.get(d), "output_fingerprint": outputs[d],
                 "completed_at": now, "run_id": "bench-build"} for d in dockets]
        _insert(DocketStage, rows)
        upstream = outputs
    _many_index_markers(runtime, dockets, upstream, now)
    _many_follow_on_markers(runtime, "campaigns", dockets, keys, upstream, now)
    _many_follow_on_markers(runtime, "organisations", dockets, keys, produced["backfill"], now)
    _many_follow_on_markers(runtime, "lineage", dockets, keys, produced["backfill"], now)
    _many_follow_on_markers(runtime, "topics", dockets, keys, item_states.output_fingerprints("campaigns"), now)
    _many_follow_on_markers(runtime, "sections", dockets, keys, upstream, now)
    _many_follow_on_markers(runtime, "positions", dockets, keys, item_states.output_fingerprints("campaigns"), now)


def _many_follow_on_markers(runtime, stage: str, dockets: list[str], keys: dict[str, str],
                            upstream_outputs: dict[str, str], now: str) -> None:
    """A follow-on stage's rows and markers as its task writes them (IndexAll runs it too):
    under its upstream stage's output."""
    for start in range(0, len(dockets), 20 * BATCH):
        part = dockets[start:start + 20 * BATCH]
        _states(stage, None, [keys[d] for d in part], now, dockets_of=keys)
    completion = registry.completion(registry.get(stage), runtime.settings)
    outputs = item_states.output_fingerprints(stage)
    _insert(DocketStage, [{"docket": d, "stage": stage, "version": 1, "sealed_at": now,
                           "input_fingerprint": expected_input(completion, upstream_outputs[d]),
                           "output_fingerprint": outputs[d], "completed_at": now, "run_id": "bench-build"}
                          for d in dockets])


def _many_docket_row(docket: str, now: str) -> dict:
    return {"id": docket, "agency": docket.split("-")[0], "title": f"Sealed docket {docket}",
            "documents": "[]", "discovered_by": "list", "resolved_at": now,
            "last_pull_at": now, "last_pull_new": 0, "sealed_at": now, "seal_reason": "auto"}


def _many_index_markers(runtime, dockets: list[str], extract_outputs: dict[str, str], now: str) -> None:
    """The index markers as IndexDocket writes them: the input its marker store expects."""
    store = registry.marker_store(registry.get("index"), runtime)
    under = store.vouched_under()
    rows = [(collection, d, now, 1, store.expected_input(extract_outputs[d]), extract_outputs[d], under)
            for collection in store.collections for d in dockets]
    conn = runtime.index_db()._conn  # noqa: SLF001 - benchmark set-up only; no bulk writer exists
    with conn, conn.cursor() as cur:
        execute_values(
            cur,
            """INSERT INTO index_docket_state (collection, docket, sealed_at, version,
                   input_fingerprint, indexed_at, vouched_output, vouched_under) VALUES %s
               ON CONFLICT DO NOTHING""",
            rows, template="(%s, %s, %s, %s, %s, now(), %s, %s)", page_size=5000,
        )
    # As autovacuum leaves a table that has settled (written once, read every hour): its
    # visibility map set, so the wrapper's checksum reads the index alone.
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE index_docket_state")
    finally:
        conn.autocommit = False


# --- open dockets among them ------------------------------------------------------------------


def reopen_every(runtime, dockets: list[str], every: int) -> list[str]:
    """Every ``every``-th docket (0: none) made open, as the stages leave a docket whose comment
    period still runs: no seal on its row or on any of its markers (either database), pulled in
    this freshness window (``pull_open_now`` keeps it so before each run). Returns them."""
    opened = dockets[::every] if every else []
    for start in range(0, len(opened), 20 * BATCH):
        part = opened[start:start + 20 * BATCH]
        with database.atomic():
            Docket.update(sealed_at=None, seal_reason=None, comment_end_date="2099-12-31").where(
                Docket.id.in_(part)).execute()
            DocketStage.update(sealed_at=None).where(DocketStage.docket.in_(part)).execute()
    pull_open_now()
    conn = runtime.index_db()._conn  # noqa: SLF001 - benchmark set-up only; no bulk writer exists
    with conn, conn.cursor() as cur:
        cur.execute("UPDATE index_docket_state SET sealed_at = NULL WHERE docket = ANY(%s)", (opened,))
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE index_docket_state")
    finally:
        conn.autocommit = False
    return opened


def pull_open_now() -> int:
    """Every open docket pulled now, as the hourly run before this one left them: a no-op in
    this freshness window (a run in the next one pulls each again, which is work)."""
    return Docket.update(last_pull_at=iso(utcnow())).where(Docket.sealed_at.is_null()).execute()
