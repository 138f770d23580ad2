"""``docketeer verify``: does the store agree with itself?

Checks, each PASS or FAIL (warnings are reported and do not fail):

* the state DB is sound (SQLite ``PRAGMA integrity_check``; on PostgreSQL every table is
  read through, which trips over a damaged heap page);
* every attachment row has its blob with the recorded size (all rows: a ``stat`` each) and
  the recorded sha256 (a random sample by default, every blob with ``full``);
* blobs no row refers to (a warning: a download promoted just before a crash leaves one);
* completion markers agree with the data: each extract row past ``pending`` has its
  ``combined.md``; a marker that vouches for its upstream's current output has a row for
  every item upstream handed it; the index's recorded chunk counts equal its chunk rows;
* ``pending`` rows older than a threshold (a process died mid-item; the next run of the
  stage repairs them).

Writes ``status.json`` (the checks) and ``inventory.csv`` (one line per attachment) to the
data folder or ``out``; the caller prints PASS or FAIL and exits non-zero on FAIL.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import peewee

from pipeline.clock import iso, utcnow
from pipeline.store import item_states
from pipeline.store.blobs import attachment_key
from pipeline.store.models import MODELS, Attachment, DocketStage, Item, ItemState

SHOWN_PROBLEMS = 20
DEFAULT_SAMPLE = 100
NOT_WRITTEN = ("pending", "stale")  # extract states with no combined.md vouched for yet


@dataclass
class Check:
    name: str
    ok: bool
    summary: str
    problems: list[str] = field(default_factory=list)
    warning_only: bool = False  # reported, never fails the run

    @property
    def label(self) -> str:
        if self.ok:
            return "ok"
        return "warn" if self.warning_only else "FAIL"


@dataclass
class Report:
    checked_at: str
    checks: list[Check]
    inventory: list[dict]

    @property
    def passed(self) -> bool:
        return all(c.ok or c.warning_only for c in self.checks)

    def lines(self) -> list[str]:
        out = []
        for check in self.checks:
            out.append(f"{check.label:<4}  {check.name}: {check.summary}")
            out.extend(f"        {p}" for p in check.problems[:SHOWN_PROBLEMS])
            if len(check.problems) > SHOWN_PROBLEMS:
                out.append(f"        ... and {len(check.problems) - SHOWN_PROBLEMS} more")
        return out


def _check(name: str, problems: list[str], ok_summary: str, *, warning_only: bool = False) -> Check:
    summary = ok_summary if not problems else f"{len(problems)} problem(s)"
    return Check(name, not problems, summary, problems, warning_only)


# --- state DB ----------------------------------------------------------------------------------


def check_state_db(db: peewee.Database) -> Check:
    if isinstance(db, peewee.PostgresqlDatabase):
        for model in MODELS:  # a full read of each table meets any unreadable page
            db.execute_sql(f'SELECT count(*) FROM "{model._meta.table_name}"').fetchone()
        return Check("state DB", True, f"postgresql: {len(MODELS)} tables read through")
    rows = [r[0] for r in db.execute_sql("PRAGMA integrity_check").fetchall()]
    return _check("state DB", [] if rows == ["ok"] else rows, "sqlite integrity_check: ok")


# --- blobs -------------------------------------------------------------------------------------


@dataclass
class BlobFindings:
    status: dict[str, str]  # sha256 -> present | missing | wrong_size
    hashed: dict[str, bool]  # sha256 -> hash matched (only the ones checked)


def check_attachment_blobs(blobs, rows: list[Attachment], *, full: bool, sample: int,
                           rng: random.Random) -> tuple[Check, BlobFindings]:
    """Size of every blob; sha256 of all (full) or of a random sample of distinct blobs."""
    wanted = {r.sha256: r.size for r in rows if r.sha256}
    status = {sha: _blob_status(blobs, sha, size) for sha, size in wanted.items()}
    present = sorted(sha for sha, s in status.items() if s == "present")
    to_hash = present if full else rng.sample(present, min(sample, len(present)))
    hashed = {sha: _sha256_of(blobs, attachment_key(sha)) == sha for sha in to_hash}
    problems = [f"{_who(rows, sha)}: blob {s}" for sha, s in sorted(status.items()) if s != "present"]
    problems += [f"{_who(rows, sha)}: sha256 does not match" for sha, ok in sorted(hashed.items()) if not ok]
    scope = "all" if full else f"a sample of {len(to_hash)}"
    check = _check("attachment blobs", problems,
                   f"{len(wanted)} blobs present with the right size; sha256 of {scope} verified")
    return check, BlobFindings(status, hashed)


def _blob_status(blobs, sha: str, size: int | None) -> str:
    actual = blobs.size(attachment_key(sha))
    if actual is None:
        return "missing"
    return "present" if size is None or actual == size else "wrong_size"


def _sha256_of(blobs, key: str) -> str:
    digest = hashlib.sha256()
    with blobs.open(key) as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _who(rows: list[Attachment], sha: str) -> str:
    names = [f"{r.item}/{r.filename}" for r in rows if r.sha256 == sha]
    return names[0] + (f" (+{len(names) - 1} more)" if len(names) > 1 else "")


def check_orphans(blobs, rows: list[Attachment], extract_keys: set[tuple[str, str]]) -> Check:
    """Blobs no row refers to: reported, not failed (a crash between promote and row write)."""
    referenced = {attachment_key(r.sha256) for r in rows if r.sha256}
    problems = [f"{key}: no attachment row" for key in blobs.list("attachments/") if key not in referenced]
    for key in blobs.list("combined/"):
        docket, _, name = key.removeprefix("combined/").partition("/")
        if (docket, name.removesuffix(".md")) not in extract_keys:
            problems.append(f"{key}: no extract row")
    return _check("orphan blobs", problems, "none", warning_only=True)


# --- markers against data ----------------------------------------------------------------------


def check_extract_output(blobs, extract_rows: list[tuple[str, str, str]]) -> Check:
    """Each extract row past pending vouches for a combined.md: it must exist."""
    present: dict[str, set[str]] = {}
    problems = []
    for docket, item, state in extract_rows:
        if state in NOT_WRITTEN:
            continue
        if docket not in present:
            present[docket] = set(blobs.list(f"combined/{docket}/"))
        if f"combined/{docket}/{item}.md" not in present[docket]:
            problems.append(f"{docket} {item}: extract state {state} but no combined.md")
    return _check("extract output", problems, "every extracted item has its combined.md")


def check_stage_markers(stage: str, upstream: str, eligible: tuple[str, ...]) -> Check:
    """A marker that claims its upstream's current output must have a row per upstream item."""
    problems = []
    for marker in _vouching_markers(stage, upstream):
        handed = _keys(upstream, marker.docket, eligible)
        missing = sorted(handed - _keys(stage, marker.docket))
        if missing:
            problems.append(f"{marker.docket}: {stage} marker but {len(missing)} item(s) without "
                            f"a {stage} row, e.g. {missing[0]}")
    return _check(f"{stage} markers", problems, f"every {stage} marker is backed by its rows")


def _vouching_markers(stage: str, upstream: str):
    mine = {m.docket: m for m in DocketStage.select().where(DocketStage.stage == stage)}
    ups = {m.docket: m for m in DocketStage.select().where(DocketStage.stage == upstream)}
    for docket, marker in sorted(mine.items()):
        up = ups.get(docket)
        if marker.input_fingerprint and up and marker.input_fingerprint == up.output_fingerprint:
            yield marker


def _keys(stage: str, docket: str, states: tuple[str, ...] | None = None) -> set[str]:
    query = ItemState.select(ItemState.item).where((ItemState.stage == stage) & (ItemState.docket == docket))
    if states is not None:
        query = query.where(ItemState.state.in_(list(states)))
    return {row.item for row in query}


def check_index(index_db) -> list[Check]:
    """Recorded chunk counts against chunk rows, and index markers against index rows."""
    from pipeline.runtime import get_runtime
    from pipeline.stages.extract import STAGE as EXTRACT
    from pipeline.stages.index import (
        INDEXABLE,
        MARKER_COLLECTION,
        config_id_for,
        marker_input_fingerprint,
    )

    if index_db is None:
        return [Check("index", True, "no index DB yet: nothing to check")]
    mismatches = [f"{m.collection} {m.item_key}: recorded {m.recorded} chunk(s), found {m.actual}"
                  for m in index_db.count_mismatches()]
    problems = []
    config = config_id_for(get_runtime().settings)
    extract_markers = {m.docket: m for m in DocketStage.select().where(DocketStage.stage == EXTRACT)}
    for docket, extract_marker in sorted(extract_markers.items()):
        marker = index_db.docket_marker(MARKER_COLLECTION, docket)
        claims = marker_input_fingerprint(extract_marker.output_fingerprint, config)
        if marker is None or marker.input_fingerprint != claims:
            continue  # no marker, or one that does not claim extract's current output
        indexed = set()
        for collection in ("comments", "documents"):
            indexed |= set(index_db.state_for_docket(collection, docket))
        missing = sorted(_keys(EXTRACT, docket, INDEXABLE) - indexed)
        if missing:
            problems.append(f"{docket}: index marker but {len(missing)} item(s) not indexed, e.g. {missing[0]}")
    return [_check("index chunk counts", mismatches, "every recorded chunk count matches its rows"),
            _check("index markers", problems, "every index marker is backed by its rows")]


def check_pending(older_than: datetime) -> Check:
    rows = item_states.all_pending(iso(older_than))
    problems = [f"{r.stage} {r.item} ({r.docket}) pending since {r.written_at}: {r.reason or ''}"
                for r in rows]
    check = _check("pending rows", problems, f"none older than {iso(older_than)}")
    if problems:
        check.summary += "; a process died mid-item, the next run of the stage repairs them"
    return check


# --- inventory and the whole run ---------------------------------------------------------------


INVENTORY_FIELDS = ["docket", "item", "filename", "format", "size", "sha256", "blob", "sha256_check",
                    "backfill_file_state", "extract_file_state"]


def inventory(rows: list[Attachment], dockets: dict[str, str], findings: BlobFindings) -> list[dict]:
    file_states = {
        (stage, item): state
        for stage, item, state in ItemState.select(ItemState.stage, ItemState.item, ItemState.state)
        .where(ItemState.stage.in_(["backfill.file", "extract.file"])).tuples()
    }
    lines = []
    for r in rows:
        key = f"{r.item}/{r.filename}"
        checked = findings.hashed.get(r.sha256)
        lines.append({
            "docket": dockets.get(r.item, ""), "item": r.item, "filename": r.filename,
            "format": r.format or "", "size": r.size, "sha256": r.sha256 or "",
            "blob": findings.status.get(r.sha256, "no sha256"),
            "sha256_check": "not checked" if checked is None else ("ok" if checked else "mismatch"),
            "backfill_file_state": file_states.get(("backfill.file", key), ""),
            "extract_file_state": file_states.get(("extract.file", key), ""),
        })
    return lines


def run_checks(rt, *, full: bool = False, sample: int = DEFAULT_SAMPLE,
               pending_age: timedelta = timedelta(hours=1), index_db=None,
               now: datetime | None = None, rng: random.Random | None = None) -> Report:
    from pipeline.stages import backfill, extract

    now = now or utcnow()
    rows = list(Attachment.select().order_by(Attachment.item, Attachment.filename))
    extract_rows = list(ItemState.select(ItemState.docket, ItemState.item, ItemState.state)
                        .where(ItemState.stage == extract.STAGE).tuples())
    blob_check, findings = check_attachment_blobs(rt.blobs, rows, full=full, sample=sample,
                                                  rng=rng or random.Random())
    checks = [
        check_state_db(rt.state),
        blob_check,
        check_orphans(rt.blobs, rows, {(d, i) for d, i, _ in extract_rows}),
        check_extract_output(rt.blobs, extract_rows),
        check_stage_markers(extract.STAGE, backfill.STAGE, extract.EXTRACTABLE),
        *check_index(index_db),
        check_pending(now - pending_age),
    ]
    dockets = dict(Item.select(Item.key, Item.docket).tuples())
    return Report(iso(now), checks, inventory(rows, dockets, findings))


def write_report(report: Report, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    status = {"result": "PASS" if report.passed else "FAIL", "checked_at": report.checked_at,
              "checks": [asdict(c) | {"label": c.label} for c in report.checks],
              "attachments": len(report.inventory)}
    status_path, inventory_path = folder / "status.json", folder / "inventory.csv"
    status_path.write_text(json.dumps(status, indent=2, sort_keys=True) + "\n")
    with open(inventory_path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=INVENTORY_FIELDS)
        writer.writeheader()
        writer.writerows(report.inventory)
    return status_path, inventory_path
