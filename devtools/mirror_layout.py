"""Where a mirrulations mirror keeps each file: the one writer of that layout in devtools.

The layout, as ``../shared/realdata/mirror`` shows it::

    raw-data/<agency>/<docket>/text-<docket>/docket/<docket>.json
    raw-data/<agency>/<docket>/text-<docket>/documents/<documentId>.json
    raw-data/<agency>/<docket>/text-<docket>/comments/<commentId>.json
    raw-data/<agency>/<docket>/text-<docket>/comments/<commentId>_UNAVAILABLE
    raw-data/<agency>/<docket>/binary-<docket>/documents_attachments/<documentId>_content.pdf
    raw-data/<agency>/<docket>/binary-<docket>/comments_attachments/<commentId>_attachment_<n>.<ext>
    raw-data/<agency>/<docket>/binary-<docket>/comments_attachments/<commentId>_attachment_<n>_UNAVAILABLE

An ``_UNAVAILABLE`` file is an empty tombstone: the item or file is gone upstream.

``make_corpus``, ``corpus_changes``, ``mirror_builder`` and ``scale_corpus`` write through this module. The
readers do not: the stand-in server and ``pipeline/sources/mirror.py`` each read the layout
with their own code, so a mistake made here fails their tests instead of being shared by
the writer and its readers.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pipeline.ids import validate_id

UNAVAILABLE = "_UNAVAILABLE"


RAW_DATA = "raw-data"


def raw_data(root: Path) -> Path:
    """The folder that holds every agency's dockets."""
    return Path(root) / RAW_DATA


# The names below are strings relative to a docket's folder (``raw-data/<agency>/<docket>``),
# each made in one step: a listing of many dockets, or a docket of many comments, names
# hundreds of thousands of files, and pathlib's joins cost more than the file's own write.


def docket_key(agency: str, docket_id: str) -> str:
    """A docket's folder relative to the mirror root, as a bucket's keys start."""
    return f"{RAW_DATA}/{agency}/{docket_id}"


def docket_record_name(docket_id: str) -> str:
    return f"text-{docket_id}/docket/{docket_id}.json"


def document_record_name(docket_id: str, document_id: str) -> str:
    return f"text-{docket_id}/documents/{document_id}.json"


def comment_record_name(docket_id: str, comment_id: str) -> str:
    return f"text-{docket_id}/comments/{comment_id}.json"


def comment_attachment_name(docket_id: str, comment_id: str, n: int, extension: str) -> str:
    return f"binary-{docket_id}/comments_attachments/{comment_id}_attachment_{n}.{extension}"


@dataclass(frozen=True)
class DocketFolders:
    """The folders and file paths of one docket; ``base`` is ``raw-data/<agency>/<docket>``."""

    base: Path
    docket_id: str

    @classmethod
    def new(cls, root: Path, agency: str, docket_id: str) -> DocketFolders:
        """Where a docket goes in the mirror at ``root`` (nothing is created)."""
        return cls(Path(root) / docket_key(agency, docket_id), docket_id)

    @classmethod
    def find(cls, root: Path, docket_id: str) -> DocketFolders:
        """An existing docket: the one whose ``text-<docket>`` folder is anywhere under ``root``."""
        validate_id(docket_id, "docket id")
        for candidate in Path(root).rglob(f"text-{docket_id}"):
            if candidate.is_dir():
                return cls(candidate.parent, docket_id)
        raise FileNotFoundError(f"no text-{docket_id} folder under {root}")

    @property
    def text(self) -> Path:
        return self.base / f"text-{self.docket_id}"

    @property
    def binary(self) -> Path:
        return self.base / f"binary-{self.docket_id}"

    @property
    def comments(self) -> Path:
        return self.text / "comments"

    @property
    def comment_attachments(self) -> Path:
        return self.binary / "comments_attachments"

    def create_folders(self) -> None:
        """Every folder a docket has, files or not (as the real mirror has them)."""
        for folder in (self.text / "docket", self.text / "documents", self.comments,
                       self.binary / "documents_attachments", self.comment_attachments):
            folder.mkdir(parents=True, exist_ok=True)

    def docket_file(self) -> Path:
        return self.base / docket_record_name(self.docket_id)

    def document_file(self, document_id: str) -> Path:
        return self.base / document_record_name(self.docket_id, document_id)

    def document_content(self, document_id: str) -> Path:
        return self.binary / "documents_attachments" / f"{document_id}_content.pdf"

    def comment_file(self, comment_id: str) -> Path:
        return self.base / comment_record_name(self.docket_id, comment_id)

    def comment_tombstone(self, comment_id: str) -> Path:
        return self.comments / f"{comment_id}{UNAVAILABLE}"

    def comment_attachment(self, comment_id: str, n: int, extension: str) -> Path:
        return self.base / comment_attachment_name(self.docket_id, comment_id, n, extension)

    def attachment_tombstone(self, comment_id: str, n: int) -> Path:
        return self.comment_attachments / f"{comment_id}_attachment_{n}{UNAVAILABLE}"


def comment_files(root: Path) -> dict[str, Path]:
    """Every comment file of every docket under ``root``, by comment id."""
    return {p.stem: p for p in Path(root).rglob("text-*/comments/*.json")}


def write_json(path: Path, body: dict) -> None:
    """A new JSON file, compact as the mirror has them (its folder made if needed)."""
    write_file(path, json.dumps(body).encode("utf-8"))


def replace_json(path: Path, body: dict) -> None:
    """A JSON file written or rewritten in one step, indented (an edited file reads as one).

    A stand-in server may be reading the folder: it never sees half a file.
    """
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, indent=2), encoding="utf-8")
    tmp.replace(path)


def write_file(path: Path, data: bytes) -> None:
    """An attachment or document content file (its folder made if needed).

    Its folder is made only when the file cannot be created without it: a mkdir before
    every file, and pathlib's ``write_bytes``, tripled the cost of a small file, and a
    generated docket is hundreds of thousands of them (``devtools.scale_corpus``)."""
    try:
        _write(path, data)
    except FileNotFoundError:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        _write(path, data)


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)  # the umask applies, as open() does
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def write_tombstone(path: Path) -> None:
    """An empty ``_UNAVAILABLE`` file: the item or file is gone upstream."""
    write_file(path, b"")
