"""The blob store: attachment bytes by sha256 and ``combined.md`` per item, on disk or on S3.

This module is the only code that turns ids into storage paths or keys. Every key is
validated before it reaches the filesystem or S3, and every write is atomic: a reader
sees either no object or the whole object, never a partial one.

Key layout (relative to the store root / bucket prefix)::

    attachments/ab/cd/<sha256>          attachment bytes, content-addressed
    combined/<docket_id>/<item_id>.md   extracted text of one comment or document
    tmp/<owner>.<uuid>.part             in-flight writes (local store only); never a blob
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pipeline.counters import BLOB_READS, BLOB_WRITES, counters
from pipeline.errors import (  # noqa: F401 - BlobTooLarge, BlobSizeMismatch are raised here
    BlobSizeMismatch,
    BlobTooLarge,
    DocketeerError,
    InvalidIdentifier,
)
from pipeline.ids import validate_id, validate_key, validate_prefix, validate_sha256
from pipeline.sources.s3 import (
    S3_DELETE,
    S3_PUT,
    get_object,
    head_object,
    list_pages,
    normalise_bucket_prefix,
    parse_store_url,
    s3_client,
)
from pipeline.store import leftovers

TMP_PREFIX = "tmp/"
_SAME_KEY = tuple(threading.Lock() for _ in range(64))  # ingests of one key, one at a time
PUTS_IN_FLIGHT = 4  # S3 PUTs of one put_many at once
CHUNK_SIZE = 1024 * 1024


@dataclass(frozen=True)
class IngestResult:
    sha256: str
    size: int
    key: str
    created: bool  # False when the same bytes were already stored under this key


def validate_blob_key(key: object) -> str:
    """A safe key outside the reserved ``tmp/`` area, where in-flight parts live."""
    validate_key(key)
    if key.startswith(TMP_PREFIX):
        raise InvalidIdentifier(f"key in the reserved tmp/ area: {key!r}")
    return key


def attachment_key(sha256: str) -> str:
    """Content-addressed: the same file attached to many comments is stored once."""
    validate_sha256(sha256)
    return f"attachments/{sha256[:2]}/{sha256[2:4]}/{sha256}"


def combined_key(docket_id: str, item_key: str) -> str:
    validate_id(docket_id, "docket id")
    validate_id(item_key, "item id")
    return f"combined/{docket_id}/{item_key}.md"


class BlobStore(ABC):
    """Keys are '/'-separated relative paths; see the module docstring for the layout."""

    attachment_key = staticmethod(attachment_key)
    combined_key = staticmethod(combined_key)

    @abstractmethod
    def exists(self, key: str) -> bool: ...

    @abstractmethod
    def size(self, key: str) -> int | None:
        """The object's size in bytes, or None when it does not exist."""

    @abstractmethod
    def put_bytes(self, key: str, data: bytes) -> None: ...

    def put_many(self, blobs: Sequence[tuple[str, bytes]]) -> None:
        """``put_bytes`` for each (key, data); a store may do the batch more cheaply."""
        for key, data in blobs:
            self.put_bytes(key, data)

    @abstractmethod
    def put_file(self, key: str, path: Path) -> None:
        """Store a copy of the file at ``path``; the object appears whole or not at all."""

    @abstractmethod
    def open(self, key: str) -> BinaryIO:
        """A readable binary stream (usable with ``with``); FileNotFoundError if missing."""

    def get(self, key: str) -> bytes:
        with self.open(key) as stream:
            return stream.read()

    @abstractmethod
    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys starting with ``prefix`` in lexicographic order; in-flight parts excluded."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the object; deleting a missing object is not an error."""

    def local_path(self, key: str) -> Path | None:
        """A real filesystem path to the object, or None when the store is not local."""
        validate_blob_key(key)
        return None

    def ingest(
        self, src_stream: BinaryIO, *, max_bytes: int, expected_size: int | None = None
    ) -> IngestResult:
        """Store a stream under attachment_key(its sha256), hashing while it is copied.

        The bytes go to a part file first; only a complete stream of the right size is
        promoted, so a failed or killed download never leaves a visible blob.
        """
        if expected_size is not None and expected_size > max_bytes:
            raise BlobTooLarge(
                f"announced size {expected_size} exceeds the limit of {max_bytes} bytes"
            )
        with self._part_file() as part:
            sha256, size = _copy_hashing(src_stream, part, max_bytes)
            if expected_size is not None and size != expected_size:
                raise BlobSizeMismatch(f"got {size} bytes, expected {expected_size}")
            key = attachment_key(sha256)
            # Readers in threads may bring the same bytes at once: one of them stores
            # them, the other finds them stored, as they would one after the other.
            with _SAME_KEY[int(sha256[:8], 16) % len(_SAME_KEY)]:
                if self.exists(key):
                    return IngestResult(sha256, size, key, created=False)
                self._promote_part(part, key)
            counters.incr(BLOB_WRITES)
            return IngestResult(sha256, size, key, created=True)

    @abstractmethod
    def clean_parts(self, older_than_seconds: float) -> int:
        """Remove part files (and, on S3, unfinished uploads) older than the given age."""

    # -- how each store stages and promotes an ingest ---------------------------------

    @abstractmethod
    def _part_file(self):
        """Context manager yielding a Path for a new part file, removed on exit if still there."""

    @abstractmethod
    def _promote_part(self, part: Path, key: str) -> None: ...


def _copy_hashing(src: BinaryIO, part: Path, max_bytes: int) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(part, "wb") as out:
        while chunk := src.read(CHUNK_SIZE):
            size += len(chunk)
            if size > max_bytes:
                raise BlobTooLarge(f"stream exceeds the limit of {max_bytes} bytes")
            digest.update(chunk)
            out.write(chunk)
        _flush_to_disk(out)
    return digest.hexdigest(), size


@functools.cache
def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _syncfs_available() -> bool:
    return sys.platform.startswith("linux") and hasattr(_libc(), "syncfs")


def _syncfs(folder: str | Path) -> None:
    """Flush every written page of the filesystem holding ``folder`` to disk, and wait."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        if _libc().syncfs(fd) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"syncfs: {os.strerror(errno)}")
    finally:
        os.close(fd)


def _flush_to_disk(f) -> None:
    # A rename after a crash must not expose a file whose data never reached the disk.
    f.flush()
    os.fsync(f.fileno())


def _remove_stale_files(folder: Path, older_than_seconds: float) -> int:
    cutoff = time.time() - older_than_seconds
    removed = 0
    if not folder.is_dir():
        return 0
    for entry in os.scandir(folder):
        if entry.name.endswith(leftovers.OWNER_SUFFIX):  # a live process's lock, see leftovers
            continue
        if entry.is_file() and entry.stat().st_mtime < cutoff:
            with suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed += 1
    return removed


@contextmanager
def _part_in(folder: Path):
    if not os.path.isdir(folder):  # a stat, where a mkdir of an existing folder raises and is caught
        folder.mkdir(parents=True, exist_ok=True)
    part = Path(leftovers.part_path(folder))  # named with its owner: see store/leftovers.py
    try:
        yield part
    finally:
        part.unlink(missing_ok=True)


class LocalBlobStore(BlobStore):
    """Blobs as files under ``root``; part files in ``root/tmp`` so promotion is a rename."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self.tmp_dir = self.root / TMP_PREFIX.rstrip("/")

    def __repr__(self) -> str:
        return f"LocalBlobStore({str(self.root)!r})"

    def _path(self, key: str) -> Path:
        return self.root / validate_blob_key(key)

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def size(self, key: str) -> int | None:
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError:
            return None

    def put_bytes(self, key: str, data: bytes) -> None:
        self.put_many([(key, data)])

    def put_many(self, blobs: Sequence[tuple[str, bytes]]) -> None:
        """Every part written, then one flush of the filesystem for them all (Linux
        ``syncfs``), then every rename: the extract stage writes a combined.md per comment,
        and on a virtual disk one fsync costs 0.2-1.5 ms of CPU, more than reading a short
        PDF. A single blob, or a system without ``syncfs``: each part fsynced on its own.
        (This path skips pathlib and folder checks where it can: they cost as much as a write.)"""
        batch_sync = len(blobs) > 1 and _syncfs_available()
        parts: list[tuple[str, str]] = []
        renamed = 0
        try:
            for key, data in blobs:
                target = str(self._path(key))
                part = leftovers.part_path(self.tmp_dir)
                parts.append((part, target))
                self._write_part(part, data, sync=not batch_sync)
            if batch_sync and parts:
                _syncfs(self.tmp_dir)
            for part, target in parts:
                self._rename(part, target)
                renamed += 1
                counters.incr(BLOB_WRITES)
        finally:
            for part, _ in parts[renamed:]:  # an error stopped the batch: no stray parts
                with suppress(FileNotFoundError):
                    os.unlink(part)

    def _write_part(self, part: str, data: bytes, *, sync: bool = True) -> None:
        try:
            out = open(part, "wb")  # noqa: SIM115 - closed below
        except FileNotFoundError:  # tmp/ itself is new (or was cleaned away)
            os.makedirs(self.tmp_dir, exist_ok=True)
            out = open(part, "wb")  # noqa: SIM115
        with out:
            out.write(data)
            if sync:
                _flush_to_disk(out)

    @staticmethod
    def _rename(part: str, target: str) -> None:
        try:
            os.replace(part, target)  # atomic on one filesystem: tmp/ lives under the root
        except FileNotFoundError:  # the target's folder is new
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(part, target)

    def put_file(self, key: str, path: Path) -> None:
        target = self._path(key)
        with self._part_file() as part:
            shutil.copyfile(path, part)
            with open(part, "rb+") as out:
                _flush_to_disk(out)
            self._replace(part, target)
        counters.incr(BLOB_WRITES)

    def open(self, key: str) -> BinaryIO:
        stream = open(self._path(key), "rb")
        counters.incr(BLOB_READS)
        return stream

    def list(self, prefix: str = "") -> Iterator[str]:
        validate_prefix(prefix)
        # Walk only the deepest folder the prefix names; the rest is a string filter.
        folder = self.root / prefix.rpartition("/")[0]
        keys = []
        for dirpath, dirnames, filenames in os.walk(folder):
            if Path(dirpath) == self.root:
                dirnames[:] = [d for d in dirnames if d != self.tmp_dir.name]
            rel = Path(dirpath).relative_to(self.root).as_posix()
            base = "" if rel == "." else rel + "/"
            keys.extend(base + name for name in filenames if (base + name).startswith(prefix))
        yield from sorted(key for key in keys if not key.startswith(TMP_PREFIX))

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def local_path(self, key: str) -> Path:
        return self._path(key)

    def clean_parts(self, older_than_seconds: float) -> int:
        return _remove_stale_files(self.tmp_dir, older_than_seconds)

    def _part_file(self):
        return _part_in(self.tmp_dir)

    def _promote_part(self, part: Path, key: str) -> None:
        self._replace(part, self._path(key))

    @staticmethod
    def _replace(part: Path, target: Path) -> None:
        # The target's folder is made only when the rename finds none: most exist already,
        # and a mkdir that fails with "exists" cost more than the rename (backfill's ingests).
        LocalBlobStore._rename(str(part), str(target))


class S3BlobStore(BlobStore):
    """Blobs as objects under ``s3://bucket/prefix``.

    Ingest parts are spooled to a local folder (``spool_dir``), because the key is the
    sha256 and is only known once the whole stream has been read; the upload that follows
    is a single PUT or a multipart upload, and S3 shows the object only when it completes.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        unsigned: bool = False,
        client=None,
        region: str = "us-east-1",
        spool_dir: Path | None = None,
        **client_settings,
    ) -> None:
        self.bucket = bucket
        self.prefix = normalise_bucket_prefix(prefix)
        # client_settings: s3_client's max_connections, retry_mode, max_attempts.
        self.client = client or s3_client(
            endpoint_url=endpoint_url, unsigned=unsigned, region=region, **client_settings
        )
        if spool_dir is None:  # never the system's temp folder: nothing is written outside the data folder
            raise ValueError("an S3 blob store needs a spool_dir (the data folder's scratch)")
        self.spool_dir = Path(spool_dir)

    def __repr__(self) -> str:
        return f"S3BlobStore('s3://{self.bucket}/{self.prefix}')"

    def _key(self, key: str) -> str:
        return self.prefix + validate_blob_key(key)

    def _head(self, key: str) -> dict | None:
        return head_object(self.client, self.bucket, self._key(key))

    def exists(self, key: str) -> bool:
        return self._head(key) is not None

    def size(self, key: str) -> int | None:
        head = self._head(key)
        return None if head is None else int(head["ContentLength"])

    def put_bytes(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)
        counters.incr(S3_PUT)
        counters.incr(BLOB_WRITES)

    def put_many(self, blobs: Sequence[tuple[str, bytes]]) -> None:
        # Each PUT waits on the network, not on the CPU: a few of them in flight at once.
        with ThreadPoolExecutor(max_workers=PUTS_IN_FLIGHT, thread_name_prefix="s3-put") as pool:
            list(pool.map(lambda blob: self.put_bytes(*blob), blobs))  # raises if one failed

    def put_file(self, key: str, path: Path) -> None:
        # upload_file switches to multipart for big files; either way the object
        # becomes visible only when the upload completes.
        self.client.upload_file(str(path), self.bucket, self._key(key))
        counters.incr(S3_PUT)
        counters.incr(BLOB_WRITES)

    def open(self, key: str) -> BinaryIO:
        response = get_object(self.client, self.bucket, self._key(key))
        counters.incr(BLOB_READS)
        return response["Body"]

    def list(self, prefix: str = "") -> Iterator[str]:
        validate_prefix(prefix)
        pages = list_pages(self.client, "list_objects_v2", Bucket=self.bucket,
                           Prefix=self.prefix + prefix)
        for page in pages:
            for item in page.get("Contents", []):
                key = item["Key"][len(self.prefix) :]
                if not key.startswith(TMP_PREFIX):
                    yield key

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))
        counters.incr(S3_DELETE)

    def clean_parts(self, older_than_seconds: float) -> int:
        removed = _remove_stale_files(self.spool_dir, older_than_seconds)
        return removed + self._abort_stale_uploads(older_than_seconds)

    def _abort_stale_uploads(self, older_than_seconds: float) -> int:
        """Abort multipart uploads a killed process left behind (they cost storage)."""
        cutoff = time.time() - older_than_seconds
        aborted = 0
        for page in list_pages(self.client, "list_multipart_uploads", Bucket=self.bucket,
                               Prefix=self.prefix):
            for upload in page.get("Uploads", []):
                if upload["Initiated"].timestamp() < cutoff:
                    self.client.abort_multipart_upload(
                        Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                    )
                    aborted += 1
        return aborted

    def _part_file(self):
        return _part_in(self.spool_dir)

    def _promote_part(self, part: Path, key: str) -> None:
        self.client.upload_file(str(part), self.bucket, self._key(key))
        counters.incr(S3_PUT)


def open_blob_store(url: str, *, s3_endpoint_url: str | None = None,
                    spool_dir: Path | None = None, **client_settings) -> BlobStore:
    """``file:///path``, a plain path, or ``s3://bucket/prefix`` (whose part files are spooled
    in ``spool_dir``: the data folder's scratch, where ``leftovers`` removes a dead run's).
    ``client_settings`` go to the S3 client (``max_connections`` as many as the threads that
    write at once)."""
    where = parse_store_url(url, "blob store URL")
    if isinstance(where, Path):
        return LocalBlobStore(where)
    bucket, prefix = where
    return S3BlobStore(bucket, prefix, endpoint_url=s3_endpoint_url, spool_dir=spool_dir, **client_settings)
