"""``docketeer verify``: does the store agree with itself?

Checks, each PASS or FAIL (warnings are reported and do not fail):

* the state DB is sound (SQLite ``PRAGMA integrity_check``; on PostgreSQL every table is
  read through, which trips over a damaged heap page);
* every attachment row has its blob with the recorded size (all rows: a ``stat`` each) and
  the recorded sha256 (a random sample by default, every blob with ``full``);
* blobs no row refers to (a warning: a download promoted just before a crash leaves one);
* completion markers agree with the data: each extract row past ``pending`` has its
  ``combined.md``; the index's recorded chunk counts equal its chunk rows; and in every
  stage after fetch, no marker says done (it vouches for its upstream's current output, or
  was recorded under the docket's current seal) while the stage still owes the docket
  items — the stage's own ``unfinished`` count, the rule it writes its marker by. Left out
  for now: a docket whose retry has come due (its targets are incomplete until the stage
  runs) and one a run holds a lease on (it is mid-work);
* a derived stage's rows (campaigns, organisations, lineage, topics) agree with its item
  states in every docket its marker says done: memberships, each campaign's size and band
  rows, each topic's counts (``Stage.rows_agree``), the stage named on a mismatch;
* every item's docket is the one its own record names (its id's docket), and each of its
  state rows is filed under that docket: a listing that claimed another docket's item
  must never have moved or overwritten it;
* ``pending`` rows older than a threshold (a process died mid-item; the next run of the
  stage repairs them);
* scratch a dead run left (blob part files, extract/OCR scratch folders; a warning: the next
  run removes them).

Writes ``status.json`` (the checks) and ``inventory.csv`` (one line per attachment) to the
data folder or ``out``; the caller prints PASS or FAIL and exits non-zero on FAIL.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from pipeline.clock import eastern_instant, iso, utcnow
from pipeline.reading import reports
from pipeline.sources.record_checks import docket_named
from pipeline.store import db as state_db
from pipeline.store import item_states, leftovers
from pipeline.store.blobs import attachment_key
from pipeline.store.models import Attachment, Docket, Item, ItemState

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


def check_state_db(db) -> Check:
    summary, problems = state_db.integrity_check(db)
    return _check("state DB", problems, summary)


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


@dataclass(frozen=True)
class Claims:
    """The dockets a stage's markers say are done, and those left out of the check for now."""

    done: list[str]
    retry_due: list[str] = field(default_factory=list)  # its targets are incomplete: it runs again
    busy: list[str] = field(default_factory=list)  # a run holds a lease on it right now


@dataclass(frozen=True)
class DocketFacts:
    """What decides whether a docket's markers can be held to their word right now."""

    now: str
    dockets: dict[str, Docket]  # id -> sealed_at, retry_due_at
    busy: set[str]  # dockets a run holds a lease on

    def sort_out(self, claimed: list[str]) -> Claims:
        due, busy, done = [], [], []
        for docket in claimed:
            if self._retry_due(docket):
                due.append(docket)
            elif docket in self.busy:
                busy.append(docket)
            else:
                done.append(docket)
        return Claims(done, due, busy)

    def _retry_due(self, docket: str) -> bool:
        # Once a waiting item's time has come, every target after fetch turns incomplete and
        # the stage owes that item until it runs: no marker of the docket says done meanwhile.
        row = self.dockets.get(docket)
        return row is not None and row.retry_due_at is not None and row.retry_due_at <= self.now


def check_markers_done(stage: str, claims: Claims, owed: Callable[[str], int]) -> Check:
    """A marker means done (DESIGN, Targets and versions): the stage owes its docket nothing."""
    problems = []
    for docket in claims.done:
        if left := owed(docket):
            problems.append(f"{docket} {stage}: marker says done but {left} item(s) have no "
                            f"decided {stage} state")
    check = _check(f"{stage} markers", problems,
                   f"{len(claims.done)} marker(s) saying done, none with items left")
    left_out = [f"{len(claims.retry_due)} with a retry due"] if claims.retry_due else []
    left_out += [f"{len(claims.busy)} being worked on now"] if claims.busy else []
    if left_out:
        check.summary += f"; not checked: docket(s) {', '.join(left_out)}"
    return check


def marker_checks(rt, now: datetime) -> list[Check]:
    """One check per stage after fetch (fetch owes nothing): no marker says done while its
    stage owes items. Each stage's marker store says which dockets its markers claim."""
    import pipeline.assembly  # noqa: F401 - registers the pipeline's stages, in order
    from pipeline.engine import registry

    moment = iso(now)
    # A run in progress owes items by nature (rows pending, OCR text merged before index sees
    # it): such dockets are left to the next verify, as pending rows are left to an age.
    facts = DocketFacts(moment, reports.docket_seals(), reports.leased_dockets(moment))
    checks = []
    for stage in registry.stages():
        if stage.upstream is None:
            continue
        store = registry.marker_store(stage, rt)
        claimed = store.claims(facts.dockets)
        if claimed is None:
            checks.append(Check(f"{stage.name} markers", True, f"no {store.where} yet: nothing to check"))
            continue
        claims = facts.sort_out(claimed)
        checks.append(check_markers_done(stage.name, claims,
                                         lambda docket, stage=stage: stage.unfinished(rt, docket, moment)))
        if stage.rows_agree is not None:
            checks.append(check_derived_rows(stage.name, claims, stage.rows_agree))
    return checks


def check_derived_rows(stage: str, claims: Claims, rows_agree: Callable[[str], list[str]]) -> Check:
    """A derived stage's marker vouches for its rows: in each docket it says done, they agree
    with its item states and with themselves (the stage's own rule, ``Stage.rows_agree``)."""
    problems = [f"{docket} {stage}: {problem}" for docket in claims.done for problem in rows_agree(docket)]
    return _check(f"{stage} rows", problems,
                  f"{len(claims.done)} docket(s) whose marker says done: rows agree with their item states")


def check_index_chunks(index_db) -> Check:
    """Each item's recorded chunk count against its chunk rows."""
    if index_db is None:
        return Check("index chunk counts", True, "no index DB yet: nothing to check")
    mismatches = [f"{m.collection} {m.item_key}: recorded {m.recorded} chunk(s), found {m.actual}"
                  for m in index_db.count_mismatches()]
    return _check("index chunk counts", mismatches, "every recorded chunk count matches its rows")


def check_item_dockets() -> Check:
    """Each item under the docket its record names, and its state rows under the same one."""
    problems = [f"{key}: filed under {docket}, its record names {docket_named(key)}"
                for key, docket in Item.select(Item.key, Item.docket).tuples().iterator()
                if docket_named(key) not in (None, docket)]
    moved = (ItemState.select(ItemState.stage, ItemState.item, ItemState.docket, Item.docket.alias("owner"))
             .join(Item, on=(ItemState.item == Item.key)).where(ItemState.docket != Item.docket))
    problems += [f"{row.item}: its {row.stage} row is filed under {row.docket}, the item under "
                 f"{row.owner}" for row in moved.objects()]
    return _check("item dockets", problems, "every item and its rows under the docket its record names")


def check_pending(older_than: datetime) -> Check:
    rows = item_states.all_pending(iso(older_than))
    # People read these lines (the report, status.json's summaries): Eastern, as every time shown.
    problems = [f"{r.stage} {r.item} ({r.docket}) pending since {eastern_instant(r.written_at, seconds=True)}: "
                f"{r.reason or ''}" for r in rows]
    check = _check("pending rows", problems, f"none older than {eastern_instant(older_than, seconds=True)}")
    if problems:
        check.summary += "; a process died mid-item, the next run of the stage repairs them"
    return check


def check_leftovers(folders: list[Path]) -> Check:
    problems = [f"{found.folder / name}" for found in map(leftovers.find, folders)
                for name in found.entries]
    check = _check("leftovers", problems, "no scratch of dead runs", warning_only=True)
    if problems:
        check.summary += " of dead runs; the next run removes them"
    return check


# --- inventory and the whole run ---------------------------------------------------------------


INVENTORY_FIELDS = ["docket", "item", "filename", "format", "size", "sha256", "blob", "sha256_check",
                    "backfill_file_state", "extract_file_state"]


def inventory(rows: list[Attachment], dockets: dict[str, str], findings: BlobFindings) -> list[dict]:
    file_states = reports.file_states()
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
    now = now or utcnow()
    rows = reports.all_attachments()
    extract_rows = reports.extract_states()
    blob_check, findings = check_attachment_blobs(rt.blobs, rows, full=full, sample=sample,
                                                  rng=rng or random.Random())
    checks = [
        check_state_db(rt.state),
        blob_check,
        check_orphans(rt.blobs, rows, {(d, i) for d, i, _ in extract_rows}),
        check_extract_output(rt.blobs, extract_rows),
        check_index_chunks(index_db),
        check_item_dockets(),
        *marker_checks(rt, now),
        check_pending(now - pending_age),
        check_leftovers(leftovers.scratch_folders(rt.data_dir, rt.blobs)),
    ]
    return Report(iso(now), checks, inventory(rows, reports.item_dockets(), findings))


# The checks that read the blob folder, which a snapshot does not hold.
BLOB_CHECKS = ("attachment blobs", "extract output")


def blobs_not_back(rt) -> bool:
    """The blob folder is not in place yet: the state refers to blobs (a stored attachment,
    an extracted item's combined.md) and the blob store holds none at all. Some there and
    some missing is damage, which the blob checks report."""
    expected = (Attachment.select().where(Attachment.sha256.is_null(False)).exists()
                or ItemState.select().where((ItemState.stage == "extract")
                                            & ItemState.state.not_in(NOT_WRITTEN)).exists())
    return expected and not any(True for prefix in ("attachments/", "combined/") for _ in rt.blobs.list(prefix))


def check_restored(rt) -> tuple[Report, bool]:
    """``docketeer restore``'s checks of what it restored, and whether the blobs are still to
    be put back: then the blob checks are left out (they would only say the folder is not
    back, which is the next step, not a failure), and ``docketeer verify`` runs them later."""
    report = run_checks(rt, index_db=rt.existing_index_db())
    if not blobs_not_back(rt):
        return report, False
    return Report(report.checked_at, [c for c in report.checks if c.name not in BLOB_CHECKS], report.inventory), True


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
