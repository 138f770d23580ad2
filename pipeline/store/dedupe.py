"""One-time migration: remove duplicate ``(item, filename)`` attachment rows, then make them impossible.

Stores written before attachment rows were keyed by ``(item, filename)`` can hold several
rows for one file (a forced rerun inserted instead of replacing). This keeps one row per
group and creates the unique index the current schema has.

* Dry run by default: prints the report (groups, rows removed, bytes freed) and changes nothing.
* ``--apply`` removes the duplicates and creates the index in one transaction.
* A group whose rows disagree on the file (different sizes, or different sha256s) is
  refused and reported: which row is right is a human decision. While any group is
  refused the index cannot exist, so ``--apply`` removes the rest and exits 1.
* A second ``--apply`` finds nothing and changes nothing.

Kept row: the oldest complete one (sha256 known), else the oldest. "Bytes freed" is the
size the removed rows accounted for; their blobs are content-addressed and shared with
the kept row, so no blob is deleted here.

    python -m pipeline.store.dedupe [--state-url URL] [--apply]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from peewee import fn

from pipeline.config import load_settings
from pipeline.store import models
from pipeline.store.db import make_database
from pipeline.store.models import Attachment

INDEX_COLUMNS = ["item", "filename"]


@dataclass
class Report:
    groups: int = 0
    rows_removed: int = 0
    bytes_freed: int = 0
    refused: list[tuple[str, str, str]] = field(default_factory=list)  # (item, filename, why)
    index_present: bool = False
    applied: bool = False

    def lines(self) -> list[str]:
        mode = "applied" if self.applied else "dry run (use --apply to change the store)"
        out = [
            f"dedupe_attachments: {mode}",
            f"duplicate groups: {self.groups}",
            f"rows removed: {self.rows_removed}",
            f"bytes freed: {self.bytes_freed}",
            f"refused groups: {len(self.refused)}",
        ]
        out += [f"  refused {item} {filename}: {why}" for item, filename, why in self.refused]
        out.append(f"unique index on attachment(item, filename): {'present' if self.index_present else 'absent'}")
        return out


def has_unique_index(db) -> bool:
    return any(ix.unique and ix.columns == INDEX_COLUMNS for ix in db.get_indexes(Attachment._meta.table_name))


def duplicate_groups() -> list[tuple[str, str]]:
    query = (
        Attachment.select(Attachment.item, Attachment.filename)
        .group_by(Attachment.item, Attachment.filename)
        .having(fn.COUNT(Attachment.id) > 1)
        .order_by(Attachment.item, Attachment.filename)
        .tuples()
    )
    return list(query)


def refusal(rows: list[Attachment]) -> str | None:
    """Why a group cannot be merged safely, or None: its rows must describe one file."""
    sizes = {r.size for r in rows if r.size is not None}
    if len(sizes) > 1:
        return f"files differ in size: {sorted(sizes)}"
    shas = {r.sha256 for r in rows if r.sha256}
    if len(shas) > 1:
        return f"files differ in content: {len(shas)} sha256s"
    return None


def keeper(rows: list[Attachment]) -> Attachment:
    complete = [r for r in rows if r.sha256]
    return min(complete or rows, key=lambda r: r.id)


def plan(report: Report) -> list[int]:
    """Ids of the rows to delete; fills the report's counts and refusals."""
    doomed: list[int] = []
    for item, filename in duplicate_groups():
        # Only the columns every store has: this runs on stores older than later columns (title).
        rows = list(Attachment.select(Attachment.id, Attachment.sha256, Attachment.size)
                    .where((Attachment.item == item) & (Attachment.filename == filename)))
        report.groups += 1
        why = refusal(rows)
        if why:
            report.refused.append((item, filename, why))
            continue
        kept = keeper(rows)
        removed = [r for r in rows if r.id != kept.id]
        doomed.extend(r.id for r in removed)
        report.rows_removed += len(removed)
        report.bytes_freed += sum(r.size or 0 for r in removed)
    return doomed


def dedupe(db, *, apply: bool) -> Report:
    report = Report()
    with db.atomic():
        doomed = plan(report)
        if apply:
            for start in range(0, len(doomed), 500):
                Attachment.delete().where(Attachment.id.in_(doomed[start:start + 500])).execute()
            if not report.refused:
                # The model's own index (IF NOT EXISTS): the same one a new store gets.
                Attachment._schema.create_indexes(safe=True)
            report.applied = True
    report.index_present = has_unique_index(db)
    return report


def open_db(state_url: str | None):
    """The state DB without creating or upgrading anything: a store with duplicates would
    make the normal schema step fail on the unique index."""
    settings = load_settings()
    url = settings.state_url if state_url is None else state_url
    db = make_database(url, settings.data_path)
    db.connect(reuse_if_open=True)
    models.database.initialize(db)
    return db


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-url", default=None,
                        help="sqlite:///PATH or postgresql://... (default: the configured state DB)")
    parser.add_argument("--apply", action="store_true", help="change the store (default: dry run)")
    args = parser.parse_args(argv)
    previous = models.database.obj  # run in-process (tests, the CLI), leave the models as found
    db = open_db(args.state_url)
    try:
        report = dedupe(db, apply=args.apply)
    finally:
        db.close()
        models.database.initialize(previous)
    print("\n".join(report.lines()))
    return 1 if report.refused and args.apply else 0


if __name__ == "__main__":
    sys.exit(main())
