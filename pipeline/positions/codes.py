"""An analyst's position codes: what the positions are, reading a coding sheet, and recording
codes (the ground truth the classifier learns from and never overrides).

A code is a row of its own (``PositionCode``), keyed by the comment: re-fetching, re-extracting
or re-indexing the comment leaves it. Importing a file is one transaction: every line is
checked before any is written, so a bad line leaves the store as it was.
"""

from __future__ import annotations

import csv
import getpass
import os
from collections.abc import Iterable
from pathlib import Path

from pipeline.clock import iso, utcnow
from pipeline.errors import DocketeerError
from pipeline.positions import POSITIONS
from pipeline.store.in_lists import in_chunks
from pipeline.store.models import Item, PositionCode, database

# The interactive coder's keys: one press per position.
KEYS = {"s": "support", "o": "oppose", "m": "mixed", "n": "no_position", "x": "off_topic"}
HEADER = ["comment_id", "position"]


class BadCodes(DocketeerError):
    """A coding sheet that cannot be imported as it is: nothing of it was written."""


def default_coder() -> str:
    """The OS user, as a code's coder when none is named."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's bare uid)
        return os.environ.get("USER") or "unknown"


def read_sheet(path: Path) -> list[tuple[str, str]]:
    """(comment id, position) of each filled line of a coding sheet: a header naming
    ``comment_id`` and ``position`` (other columns, such as the sheet's link and text, are
    ignored), a known position on every line whose position is filled. A line left empty is
    not coded yet and is skipped; a comment coded twice in one file is refused."""
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise BadCodes(f"cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        reader = csv.reader(handle)
        header = [h.strip().lower() for h in next(reader, [])]
        if not set(HEADER) <= set(header):
            raise BadCodes(f"{path}: the header must name comment_id and position (found {','.join(header) or 'nothing'})")
        at = {name: header.index(name) for name in HEADER}
        rows: list[tuple[str, str]] = []
        seen: dict[str, int] = {}
        try:
            for line, fields in enumerate(reader, start=2):
                rows += _sheet_line(path, line, fields, at, seen)
        except csv.Error as exc:
            raise BadCodes(f"{path}: not a CSV file: {exc}") from None
    return rows


def _sheet_line(path: Path, line: int, fields: list[str], at: dict[str, int], seen: dict[str, int]) -> list:
    if not any(f.strip() for f in fields):
        return []
    item = fields[at["comment_id"]].strip() if len(fields) > at["comment_id"] else ""
    position = fields[at["position"]].strip().lower() if len(fields) > at["position"] else ""
    if not item:
        raise BadCodes(f"{path}: line {line}: no comment_id")
    if not position:
        return []  # a sheet line not coded yet
    if position not in POSITIONS:
        raise BadCodes(f"{path}: line {line}: unknown position {position!r} for {item} "
                       f"(one of {', '.join(POSITIONS)})")
    if item in seen:
        raise BadCodes(f"{path}: line {line}: {item} is coded again (first on line {seen[item]})")
    seen[item] = line
    return [(item, position)]


def record(codes: Iterable[tuple[str, str]], coder: str, now: str | None = None) -> dict[str, int]:
    """Record ``codes`` (comment id, position) by ``coder``, in one transaction: a comment coded
    before gets the new code (its coder and time too). Every id must be a stored comment and
    every position known, or nothing is written. Returns codes recorded per docket."""
    codes = list(codes)
    bad = sorted({p for _, p in codes if p not in POSITIONS})
    if bad:
        raise BadCodes(f"unknown position {bad[0]!r} (one of {', '.join(POSITIONS)})")
    now = now or iso(utcnow())
    with database.atomic():
        dockets = {}
        for chunk in in_chunks(sorted({i for i, _ in codes})):
            dockets.update(Item.select(Item.key, Item.docket).where(
                Item.key.in_(chunk) & (Item.kind == "comment")).tuples())
        unknown = [i for i, _ in codes if i not in dockets]
        if unknown:
            more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
            raise BadCodes(f"unknown comment id {unknown[0]!r}{more}: nothing was imported")
        rows = [{"item": i, "docket": dockets[i], "position": p, "coder": coder, "coded_at": now} for i, p in codes]
        for chunk in in_chunks(rows, 200):
            PositionCode.insert_many(chunk).on_conflict(
                conflict_target=[PositionCode.item],
                preserve=[PositionCode.docket, PositionCode.position, PositionCode.coder,
                          PositionCode.coded_at]).execute()
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["docket"]] = counts.get(row["docket"], 0) + 1
    return counts


def codes_of(dockets: Iterable[str]) -> dict[str, str]:
    """comment id -> its code, for the dockets' comments (one query)."""
    names = sorted(set(dockets))
    return dict(PositionCode.select(PositionCode.item, PositionCode.position)
                .where(PositionCode.docket.in_(names)).tuples())
