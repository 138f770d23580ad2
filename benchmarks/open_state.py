"""Grow an open docket, built by a real cold run, to a million comments directly.

Fetching, backfilling and embedding a million comments takes days; what a no-op in the next
freshness window may touch is the docket row, the markers, one list request, and — if it
did its work wrong — the item rows. So the rows are written straight into the stores
(``item``, ``item_state`` for fetch, backfill and extract, ``index_state``), and the markers
are recorded again as the stages would record them: each stage's output fingerprint
computed by ``item_states.docket_output_fingerprint`` from its rows, each marker vouching
for its upstream's, the index marker written by ``IndexDocket.write_marker`` itself.
"""

from __future__ import annotations

from psycopg2.extras import execute_values

from pipeline.clock import iso, utcnow
from pipeline.engine import markers
from pipeline.extract.stage import item_fingerprint
from pipeline.store import item_states
from pipeline.store.models import Item, database
from pipeline.tasks import IndexDocket

STAGES = ("fetch", "backfill", "extract")
BATCH = 20_000

_ITEM_SQL = ('INSERT OR IGNORE INTO "item" (key, docket, kind, title, summary_hash, detail_hash, '
             "detail_summary_hash, body, created_at, updated_at, withdrawn) "
             "VALUES (?, ?, 'comment', ?, ?, ?, ?, 'See attached file(s)', ?, ?, 0)")
_STATE_SQL = ('INSERT OR IGNORE INTO "item_state" (stage, item, docket, fingerprint, content_hash, '
              "state, run_id, written_at) VALUES (?, ?, ?, ?, ?, 'ok', 'bench-build', ?)")


def grow_open_docket(runtime, docket: str, total: int) -> int:
    """Add synthetic comments until the docket has ``total`` items; returns how many."""
    have = Item.select().where(Item.docket == docket).count()
    keys = [f"{docket}-9{n:07d}" for n in range(max(total - have, 0))]
    now = iso(utcnow())
    for start in range(0, len(keys), BATCH):
        part = keys[start:start + BATCH]
        with database.atomic():
            cursor = database.cursor()
            cursor.executemany(_ITEM_SQL, [(k, docket, f"Comment {k}", k, k, k, now, now) for k in part])
            for stage in STAGES:
                cursor.executemany(_STATE_SQL, [(stage, k, docket, _fingerprint(stage, k),
                                                 f"{stage}:{k}", now) for k in part])
        _index_states(runtime, docket, part)
    _vouch_again(docket)
    return len(keys)


def _fingerprint(stage: str, key: str) -> str | None:
    """Extract's row as extract writes it for its input (so planning finds nothing to do)."""
    return item_fingerprint(f"backfill:{key}") if stage == "extract" else None


def _index_states(runtime, docket: str, keys: list[str]) -> None:
    rows = [("comments", k, docket, f"index:{k}", f"text:{k}", 3, "hashing") for k in keys]
    conn = runtime.index_db()._conn  # noqa: SLF001 - benchmark set-up only; no bulk writer exists
    with conn, conn.cursor() as cur:
        execute_values(
            cur,
            """INSERT INTO index_state (collection, item_key, docket, fingerprint, content_hash,
                   chunk_count, embedder_id, indexed_at) VALUES %s ON CONFLICT DO NOTHING""",
            rows, template="(%s, %s, %s, %s, %s, %s, %s, now())", page_size=5000,
        )


def _vouch_again(docket: str) -> None:
    """Each stage's marker re-recorded over its rows as they are now, as the stage would."""
    upstream = None
    for stage in STAGES:
        marker = markers.read_marker(docket, stage)
        output = item_states.docket_output_fingerprint(stage, docket)
        markers.write_marker(docket, stage, version=marker.version, sealed_at=marker.sealed_at,
                             input_fingerprint=upstream, output_fingerprint=output,
                             run_id="bench-build")
        upstream = output
    task = IndexDocket(docket=docket)
    task.write_marker("bench-build", task.input_fingerprint())
