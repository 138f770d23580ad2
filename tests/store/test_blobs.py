"""The blob store contract, run unchanged against a local folder and a real S3 protocol (moto)."""

from __future__ import annotations

import hashlib
import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pipeline.counters import BLOB_READS, BLOB_WRITES, S3_LIST, counters
from pipeline.errors import ConfigError, InvalidIdentifier
from pipeline.store.blobs import (
    BlobSizeMismatch,
    BlobTooLarge,
    LocalBlobStore,
    S3BlobStore,
    attachment_key,
    combined_key,
    open_blob_store,
)
from tests.fixtures.paths import ROOT

# pytest finds fixtures among a module's attributes; these make the moto ones visible here.

SHA_OF_HELLO = hashlib.sha256(b"hello").hexdigest()


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        return LocalBlobStore(tmp_path / "blobs")
    client = request.getfixturevalue("s3_client")
    bucket = request.getfixturevalue("s3_bucket")
    return S3BlobStore(bucket, "store/prefix", client=client, spool_dir=tmp_path / "spool")


def parts_left(store) -> list[Path]:
    folder = store.tmp_dir if isinstance(store, LocalBlobStore) else store.spool_dir
    # The live process's owner file stays there (pipeline/store/leftovers.py): not a part.
    return sorted(p for p in folder.glob("*") if p.suffix != ".owner") if folder.is_dir() else []


class BreaksHalfway(io.RawIOBase):
    """A download that dies after ``good`` bytes, as a reset connection would."""

    def __init__(self, good: int) -> None:
        self.left = good

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left <= 0:
            raise ConnectionResetError("connection reset mid-download")
        n = min(len(buffer), self.left, 64 * 1024)
        buffer[:n] = b"x" * n
        self.left -= n
        return n


# -- basic operations ---------------------------------------------------------------------


def test_put_get_exists_size_delete(store):
    key = combined_key("ACF-2025-0038", "ACF-2025-0038-0004")
    assert not store.exists(key)
    assert store.size(key) is None
    store.put_bytes(key, b"# text\n")
    assert store.exists(key)
    assert store.size(key) == 7
    assert store.get(key) == b"# text\n"
    with store.open(key) as stream:
        assert stream.read() == b"# text\n"
    store.put_bytes(key, b"replaced")
    assert store.get(key) == b"replaced"
    store.delete(key)
    assert not store.exists(key)
    store.delete(key)  # deleting what is gone is fine


@pytest.mark.parametrize("one_flush", [True, False], ids=["syncfs", "fsync-each"])
def test_put_many_writes_a_batch_and_counts_each(store, one_flush, monkeypatch):
    from pipeline.counters import BLOB_WRITES, counters
    from pipeline.store import blobs as blob_module

    if not one_flush:  # as on a system without syncfs: every part fsynced on its own
        monkeypatch.setattr(blob_module, "_syncfs_available", lambda: False)
    flushes = {"syncfs": 0, "fsync": 0}
    real_syncfs, real_fsync = blob_module._syncfs, os.fsync

    def count(name, real):
        def counted(*args):
            flushes[name] += 1
            return real(*args)
        return counted

    monkeypatch.setattr(blob_module, "_syncfs", count("syncfs", real_syncfs))
    monkeypatch.setattr(blob_module.os, "fsync", count("fsync", real_fsync))
    batch = [(combined_key("ACF-2025-0038", f"ACF-2025-0038-{n:04d}"), f"# text {n}\n".encode())
             for n in range(1, 6)]
    store.put_bytes(batch[0][0], b"old bytes")
    flushes.update(syncfs=0, fsync=0)
    with counters.measure() as done:
        store.put_many(batch)
    assert done[BLOB_WRITES] == 5
    if isinstance(store, LocalBlobStore):  # the disk is flushed once for the batch, or per file
        linux = sys.platform.startswith("linux")
        assert flushes == ({"syncfs": 1, "fsync": 0} if one_flush and linux else {"syncfs": 0, "fsync": 5})
    assert {key: store.get(key) for key, _ in batch} == dict(batch)
    assert parts_left(store) == []


def test_put_many_stopped_by_a_bad_key_leaves_no_part(store):
    good = combined_key("ACF-2025-0038", "ACF-2025-0038-0001")
    with pytest.raises(InvalidIdentifier):
        store.put_many([(good, b"first"), ("../outside", b"second")])
    assert parts_left(store) == []
    if isinstance(store, LocalBlobStore):
        assert not store.exists(good)  # nothing is renamed before every part is written


def test_missing_key_raises_file_not_found(store):
    with pytest.raises(FileNotFoundError):
        store.get("combined/D-1/nothing.md")


def test_put_file_and_local_path(store, tmp_path):
    source = tmp_path / "in.pdf"
    source.write_bytes(b"%PDF-1.7 fake")
    store.put_file("attachments/x/y/file", source)
    assert store.get("attachments/x/y/file") == b"%PDF-1.7 fake"
    local = store.local_path("attachments/x/y/file")
    if isinstance(store, LocalBlobStore):
        assert local.read_bytes() == b"%PDF-1.7 fake"  # openable in place, no copy
    else:
        assert local is None


def test_list_is_a_string_prefix_in_key_order(store):
    for key in [
        "combined/D-1/b.md",
        "combined/D-1/a.md",
        "combined/D-10/a.md",
        "attachments/aa/bb/x",
    ]:
        store.put_bytes(key, b"1")
    assert list(store.list("combined/D-1/")) == ["combined/D-1/a.md", "combined/D-1/b.md"]
    assert list(store.list("combined/D-1")) == [
        "combined/D-1/a.md",
        "combined/D-1/b.md",
        "combined/D-10/a.md",
    ]
    assert list(store.list()) == [
        "attachments/aa/bb/x",
        "combined/D-1/a.md",
        "combined/D-1/b.md",
        "combined/D-10/a.md",
    ]
    assert list(store.list("nothing/")) == []


def test_list_more_than_one_page(store):
    keys = [f"combined/BIG-1/item-{i:05d}.md" for i in range(1005)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: store.put_bytes(k, b"."), keys))
    with counters.measure() as delta:
        listed = list(store.list("combined/BIG-1/"))
    assert listed == keys
    if isinstance(store, S3BlobStore):
        assert delta[S3_LIST] == 2  # S3 pages hold at most 1000 keys


def test_counts_reads_and_writes(store):
    with counters.measure() as delta:
        store.put_bytes("combined/D-1/a.md", b"x")
        store.get("combined/D-1/a.md")
    assert delta[BLOB_WRITES] == 1
    assert delta[BLOB_READS] == 1


# -- ingest -------------------------------------------------------------------------------


def test_ingest_is_content_addressed(store):
    first = store.ingest(io.BytesIO(b"hello"), max_bytes=100, expected_size=5)
    assert first.sha256 == SHA_OF_HELLO
    assert first.key == f"attachments/{SHA_OF_HELLO[:2]}/{SHA_OF_HELLO[2:4]}/{SHA_OF_HELLO}"
    assert first.size == 5 and first.created
    again = store.ingest(io.BytesIO(b"hello"), max_bytes=100)
    assert again == first.__class__(first.sha256, 5, first.key, created=False)
    assert list(store.list("attachments/")) == [first.key]
    assert store.get(first.key) == b"hello"
    assert parts_left(store) == []


def test_ingest_multipart_sized_file(store):
    data = os.urandom(9 * 1024 * 1024)  # above boto3's 8 MB multipart threshold
    result = store.ingest(io.BytesIO(data), max_bytes=len(data), expected_size=len(data))
    assert result.sha256 == hashlib.sha256(data).hexdigest()
    assert store.size(result.key) == len(data)
    assert store.get(result.key) == data


def test_ingest_size_mismatch_stores_nothing(store):
    with pytest.raises(BlobSizeMismatch):
        store.ingest(io.BytesIO(b"hello"), max_bytes=100, expected_size=6)
    assert list(store.list()) == []
    assert parts_left(store) == []


def test_ingest_over_max_bytes_stores_nothing(store):
    with pytest.raises(BlobTooLarge):
        store.ingest(io.BytesIO(b"x" * 101), max_bytes=100)
    assert list(store.list()) == []
    assert parts_left(store) == []


def test_ingest_refuses_announced_oversize_before_reading(store):
    stream = io.BytesIO(b"x" * 10)
    with pytest.raises(BlobTooLarge):
        store.ingest(stream, max_bytes=5, expected_size=10)
    assert stream.tell() == 0


def test_stream_failing_halfway_leaves_no_blob(store):
    with pytest.raises(ConnectionResetError):
        store.ingest(io.BufferedReader(BreaksHalfway(300_000)), max_bytes=10**7)
    assert list(store.list()) == []
    assert parts_left(store) == []


KILLED_INGEST = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pipeline.store.blobs import LocalBlobStore, S3BlobStore
    import boto3
    if {kind!r} == "local":
        store = LocalBlobStore(Path({location!r}))
    else:
        client = boto3.client("s3", endpoint_url={endpoint!r}, region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")
        store = S3BlobStore({bucket!r}, "store/prefix", client=client, spool_dir=Path({location!r}))
    store.ingest(sys.stdin.buffer, max_bytes=10**9)
    """
)


def test_killed_process_leaves_only_a_stale_part(store, tmp_path):
    """kill -9 mid-download: no blob appears, and clean_parts removes the orphan part."""
    is_local = isinstance(store, LocalBlobStore)
    script = KILLED_INGEST.format(
        kind="local" if is_local else "s3",
        location=str(store.root if is_local else store.spool_dir),
        endpoint="" if is_local else store.client.meta.endpoint_url,
        bucket="" if is_local else store.bucket,
    )
    # This checkout's package, whatever an installed one points at.
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        child.stdin.write(b"y" * 3_000_000)
        child.stdin.flush()
        _wait_for_part_bytes(store)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdin.close()
    assert list(store.list()) == []
    assert len(parts_left(store)) == 1
    assert store.clean_parts(older_than_seconds=3600) == 0  # a fresh part may be in use
    assert store.clean_parts(older_than_seconds=0) == 1
    assert parts_left(store) == []


def _wait_for_part_bytes(store, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.stat().st_size > 0 for p in parts_left(store)):
            return
        time.sleep(0.05)
    raise AssertionError("the child never started writing its part file")


def test_s3_clean_parts_aborts_stale_multipart_uploads(s3_client, s3_bucket, tmp_path):
    store = S3BlobStore(s3_bucket, "p", client=s3_client, spool_dir=tmp_path / "spool")
    upload = s3_client.create_multipart_upload(Bucket=s3_bucket, Key="p/attachments/aa/bb/half")
    s3_client.upload_part(
        Bucket=s3_bucket,
        Key="p/attachments/aa/bb/half",
        UploadId=upload["UploadId"],
        PartNumber=1,
        Body=b"z" * 1024,
    )
    assert list(store.list()) == []  # an unfinished upload is not an object
    assert store.clean_parts(older_than_seconds=0) == 1
    assert s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []


# -- unsafe keys --------------------------------------------------------------------------

UNSAFE_KEYS = [
    "",
    "../etc/passwd",
    "combined/../../x",
    "/abs/path",
    "combined\\D-1\\a.md",
    "combined/D-1/a\x00.md",
    "combined//a.md",
    "./combined/a.md",
    "tmp/abc.part",
    None,
]


@pytest.mark.parametrize("key", UNSAFE_KEYS)
def test_unsafe_keys_are_rejected(store, key, tmp_path):
    source = tmp_path / "f"
    source.write_bytes(b"1")
    for operation in (
        lambda: store.put_bytes(key, b"1"),
        lambda: store.put_file(key, source),
        lambda: store.get(key),
        lambda: store.exists(key),
        lambda: store.size(key),
        lambda: store.delete(key),
        lambda: store.local_path(key),
    ):
        with pytest.raises(InvalidIdentifier):
            operation()
    assert list(store.list()) == []


@pytest.mark.parametrize("prefix", ["../", "/", "a\\", "a//"])
def test_unsafe_list_prefix_is_rejected(store, prefix):
    with pytest.raises(InvalidIdentifier):
        list(store.list(prefix))


def test_key_builders_validate_their_parts():
    assert attachment_key(SHA_OF_HELLO).startswith("attachments/2c/f2/")
    assert combined_key("ACF-2025-0038", "ACF-2025-0038-0004") == (
        "combined/ACF-2025-0038/ACF-2025-0038-0004.md"
    )
    for bad in ["", "../x", "ABC", SHA_OF_HELLO.upper(), SHA_OF_HELLO[:-1]]:
        with pytest.raises(InvalidIdentifier):
            attachment_key(bad)
    for docket, item in [("../D", "I"), ("D", "a/b"), ("D", ".."), ("", "I")]:
        with pytest.raises(InvalidIdentifier):
            combined_key(docket, item)


# -- opening from a URL -------------------------------------------------------------------


def test_open_local_store_from_url_or_path(tmp_path):
    for url in [f"file://{tmp_path}/a", str(tmp_path / "a")]:
        store = open_blob_store(url)
        assert isinstance(store, LocalBlobStore) and store.root == (tmp_path / "a").resolve()


def test_open_s3_store_from_url(s3_endpoint, s3_bucket, s3_credentials_env, tmp_path):
    store = open_blob_store(f"s3://{s3_bucket}/some/prefix/", s3_endpoint_url=s3_endpoint,
                            spool_dir=tmp_path / "spool")
    assert isinstance(store, S3BlobStore) and store.prefix == "some/prefix/"
    store.put_bytes("combined/D-1/a.md", b"x")
    assert list(store.list()) == ["combined/D-1/a.md"]


@pytest.mark.parametrize("url", ["", "s3://", "ftp://host/x"])
def test_bad_store_urls(url):
    with pytest.raises(ConfigError):
        open_blob_store(url)
