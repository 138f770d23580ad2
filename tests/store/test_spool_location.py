"""An S3 blob store spools its part files in the data folder's scratch, never in the system's
temporary folder: nothing is written outside the data folder, and a dead run's part is a
leftover that the next run removes (pipeline/store/leftovers.py)."""

from __future__ import annotations

import io
import os
import tempfile

import pytest

from pipeline.store import leftovers
from pipeline.store.blobs import S3BlobStore
from tests.fixtures.state_fixtures import make_runtime


class WatchedStream(io.RawIOBase):
    """A body that, half way through, notes which part files exist where."""

    def __init__(self, size: int, folders) -> None:
        self.left, self.folders, self.seen = size, folders, {}

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if not self.seen:
            self.seen = {str(f): sorted(p.name for p in f.glob("*.part")) for f in self.folders if f.is_dir()}
        n = min(len(buffer), self.left, 65536)
        buffer[:n] = b"x" * n
        self.left -= n
        return n


def test_an_s3_blob_store_spools_in_the_data_folders_scratch(tmp_path, s3_bucket, s3_endpoint,
                                                             s3_credentials_env):
    runtime = make_runtime(tmp_path, blob_url=f"s3://{s3_bucket}/p", s3_endpoint_url=s3_endpoint)
    scratch = leftovers.scratch_dir(runtime.data_dir)
    system_tmp = tempfile.gettempdir()
    before = set(os.listdir(system_tmp))
    body = WatchedStream(300_000, [scratch])
    stored = runtime.blobs.ingest(io.BufferedReader(body), max_bytes=10**7)
    assert runtime.blobs.exists(stored.key)
    assert len(body.seen[str(scratch)]) == 1  # the part was in the data folder's scratch
    assert set(os.listdir(system_tmp)) - before == set()
    assert scratch in leftovers.scratch_folders(runtime.data_dir, runtime.blobs)


def test_an_s3_blob_store_refuses_to_spool_in_the_system_temp_folder(s3_client):
    with pytest.raises(ValueError, match="spool_dir"):
        S3BlobStore("bucket", "p", client=s3_client)
