"""Edits to a mirror-layout folder that mimic what happens upstream while a docket is open.

Comments are added, modified and withdrawn; each edit bumps ``modifyDate`` (and
``lastModifiedDate`` where a file carries it), which is what the stand-in server reports as
the list item's ``lastModifiedDate``. Call ``StandinServer.reload()`` afterwards.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from devtools.mirror_layout import DocketFolders, comment_files, replace_json
from pipeline.ids import validate_id


def api_time(when: datetime | str) -> str:
    """A datetime (naive = UTC) or ISO string as the API writes times: 2026-09-08T12:00:00Z."""
    if isinstance(when, str):
        when = datetime.fromisoformat(when.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_id_for(item_id: str) -> str:
    """A stable, unique-looking regulations.gov objectId (16 hex digits) for a made-up item."""
    return "0900006" + hashlib.sha256(item_id.encode()).hexdigest()[:9]


def add_comments(root: Path, docket: str, n: int, when: datetime | str) -> list[str]:
    """Add ``n`` comments (no attachments) on the docket's most-commented document; returns their ids."""
    folders = DocketFolders.find(root, docket)
    folder = folders.comments
    folder.mkdir(parents=True, exist_ok=True)
    existing = sorted(folder.glob("*.json"))
    template = json.loads(existing[-1].read_text(encoding="utf-8")) if existing else None
    if template is None:
        raise FileNotFoundError(f"docket {docket} has no comment to use as a template")
    next_number = 1 + max(_sequence_number(p.stem) for p in existing)
    stamp = api_time(when)
    ids = []
    for offset in range(n):
        comment_id = f"{docket}-{next_number + offset:04d}"
        body = _new_comment(template, comment_id, stamp)
        replace_json(folders.comment_file(comment_id), body)
        ids.append(comment_id)
    return ids


def modify_comments(root: Path, ids: Iterable[str], when: datetime | str) -> None:
    """Change the text of existing comments and bump their modification time."""

    def revise(attrs: dict, stamp: str) -> None:
        attrs["comment"] = f"{attrs.get('comment') or ''} [revised {stamp}]".strip()

    _edit_comments(root, ids, when, revise)


def withdraw_comments(root: Path, ids: Iterable[str], when: datetime | str) -> None:
    """Mark comments withdrawn (they keep their id, as upstream) and bump their modification time."""

    def withdraw(attrs: dict, stamp: str) -> None:
        attrs["withdrawn"] = True
        attrs["reasonWithdrawn"] = "Withdrawn by the submitter"

    _edit_comments(root, ids, when, withdraw)


def _edit_comments(root: Path, ids: Iterable[str], when: datetime | str, change) -> None:
    """Apply ``change(attributes, stamp)`` to each comment file and bump its modification time."""
    stamp = api_time(when)
    files = comment_files(root)
    for comment_id in ids:
        path = files[validate_id(comment_id)]
        body = json.loads(path.read_text(encoding="utf-8"))
        attrs = body["data"]["attributes"]
        change(attrs, stamp)
        _touch(attrs, stamp)
        replace_json(path, body)


def _new_comment(template: dict, comment_id: str, stamp: str) -> dict:
    body = copy.deepcopy(template)
    data = body["data"]
    data["id"] = comment_id
    data["links"] = {"self": f"https://api.regulations.gov/v4/comments/{comment_id}"}
    attrs = data["attributes"]
    attrs.update(
        {
            "objectId": object_id_for(comment_id),
            "title": f"Comment from Stand-in Submitter {comment_id[-4:]}",
            "comment": f"Stand-in comment {comment_id}.",
            "postedDate": stamp,
            "receiveDate": stamp,
            "withdrawn": False,
            "reasonWithdrawn": None,
            "trackingNbr": object_id_for(comment_id)[-9:],
        }
    )
    _touch(attrs, stamp)
    # New comments come without attachments; tests needing files write their own.
    data["relationships"] = {"attachments": {"data": []}}
    body["included"] = []
    return body


def _touch(attrs: dict, stamp: str) -> None:
    attrs["modifyDate"] = stamp
    if "lastModifiedDate" in attrs:
        attrs["lastModifiedDate"] = stamp


def _sequence_number(item_id: str) -> int:
    tail = item_id.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0

