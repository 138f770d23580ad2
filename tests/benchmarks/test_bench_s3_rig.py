"""The benchmark rig (``benchmarks/mirror_rig.py``) serves a mirror folder as a bucket:
``--tree ROOT`` puts every regular file under ``ROOT/raw-data`` as the key of its path
relative to ROOT, with its bytes, and nothing else."""

from __future__ import annotations

import os

import boto3
import pytest

moto = pytest.importorskip("moto")

from benchmarks.mirror_rig import fill_tree, tree_files  # noqa: E402

BUCKET = "rig-tree"
FILES = {
    "raw-data/EPA/EPA-2026-0001/text-EPA-2026-0001/comments/EPA-2026-0001-0002.json": b'{"a": 1}',
    "raw-data/EPA/EPA-2026-0001/text-EPA-2026-0001/docket/EPA-2026-0001.json": b'{"d": 2}',
    "raw-data/EPA/EPA-2026-0001/binary-EPA-2026-0001/comments_attachments/"
    "EPA-2026-0001-0002_attachment_1.pdf": b"%PDF-1.4 not really",
    "raw-data/EPA/EPA-2026-0001/text-EPA-2026-0001/comments/empty.json": b"",
}


def test_a_tree_is_its_regular_files_under_raw_data(tmp_path, monkeypatch):
    for key, body in FILES.items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(body)
    (tmp_path / "manifest.json").write_text("{}")  # beside raw-data: not the mirror's
    comments = tmp_path / "raw-data/EPA/EPA-2026-0001/text-EPA-2026-0001/comments"
    os.symlink(comments / "EPA-2026-0001-0002.json", comments / "link.json")
    os.symlink(comments, tmp_path / "raw-data/EPA/linked-folder")
    os.mkfifo(comments / "fifo.json")

    assert {key for key, _path in tree_files(tmp_path)} == set(FILES)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with moto.mock_aws():
        assert fill_tree(BUCKET, tmp_path) == len(FILES)
        client = boto3.client("s3", region_name="us-east-1")
        listed = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET)["Contents"]]
        assert listed == sorted(FILES)
        for key, body in FILES.items():
            assert client.get_object(Bucket=BUCKET, Key=key)["Body"].read() == body
