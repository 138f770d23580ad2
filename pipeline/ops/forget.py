"""``docketeer forget ID [--purge] [--dry-run]``: take a docket out of the known set.

Without ``--purge`` the docket's rows, blobs and index stay: it is only marked forgotten
(``Docket.discovered_by``), so no wrapper schedules it again until it is named with
``--docket``. With ``--purge`` everything of it goes: its state-DB rows and the attachment
files no other docket's row refers to (one transaction, refused while a run holds a lease on
it: which files are shared is decided and acted on inside it, ``purge.delete_rows``), then its
index rows (one transaction), then its ``combined.md`` files. A purge cut short leaves at
worst orphan blobs, which ``verify`` only warns about, and running it again finishes the job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.ops import purge
from pipeline.store import dockets
from pipeline.store.blobs import attachment_key, combined_key


@dataclass
class ForgetReport:
    docket: str
    purge: bool
    dry_run: bool
    already_out: str | None = None  # FORGOTTEN or NOT_FOUND before this command
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows (state and index DB)
    blobs: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        verb = "would" if self.dry_run else "did"
        if not self.purge:
            if self.already_out:
                return [f"{self.docket}: already out of the known set ({self.already_out}); data kept"]
            forgotten = "would be forgotten" if self.dry_run else "forgotten"
            return [f"{self.docket}: {forgotten}; its data is kept (--purge deletes it); "
                    "`--docket` brings it back"]
        counts = ", ".join(f"{n} {table}" for table, n in self.rows.items() if n) or "no rows"
        return [f"{self.docket}: {verb} delete {counts} and {len(self.blobs)} blob(s)"]


def forget(rt, docket_id: str, *, purge_data: bool = False, dry_run: bool = False) -> ForgetReport:
    if not purge_data:
        return _untrack(docket_id, dry_run)
    report = ForgetReport(docket_id, purge=True, dry_run=dry_run)
    index_db = rt.existing_index_db()
    combined = _combined_keys(rt.blobs, docket_id)
    if dry_run:
        report.blobs = combined + [attachment_key(sha) for sha in purge.only_its_attachments(docket_id)]
        report.rows = {**purge.count_rows(docket_id), **(index_db.docket_row_counts(docket_id) if index_db else {})}
    else:
        report.rows, attachments = purge.delete_rows(docket_id, rt.blobs)
        report.rows.update(index_db.purge_docket(docket_id) if index_db else {})
        for key in combined:
            rt.blobs.delete(key)
        report.blobs = combined + attachments
    if not any(report.rows.values()) and not report.blobs:
        raise dockets.UnknownDocket(f"unknown docket {docket_id!r}: nothing of it is stored")
    return report


def _untrack(docket_id: str, dry_run: bool) -> ForgetReport:
    row = dockets.require_docket(docket_id)
    report = ForgetReport(docket_id, purge=False, dry_run=dry_run, already_out=dockets.out_of_set(row))
    if not dry_run and not report.already_out:
        dockets.leave_known_set(docket_id, dockets.FORGOTTEN)
    return report


def _combined_keys(blobs, docket_id: str) -> list[str]:
    """The docket's own extract output (never shared with another docket)."""
    return list(blobs.list(combined_key(docket_id, "x").rsplit("/", 1)[0] + "/"))
