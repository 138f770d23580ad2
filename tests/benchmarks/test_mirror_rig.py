"""The benchmark rig's sorted-index listing (``benchmarks/mirror_rig.py``, never used by the
pipeline) answers every ListObjectsV2 page exactly as moto's own paging does."""

from __future__ import annotations

import boto3
import pytest

moto = pytest.importorskip("moto")

from benchmarks.mirror_rig import ACCOUNT, serve_listings_from_a_sorted_index  # noqa: E402

BUCKET = "rig-listing"


def _keys() -> list[str]:
    keys = [f"raw-data/EPA/EPA-2026-0001/text-EPA-2026-0001/comments/EPA-2026-0001-{n:05d}.json"
            for n in range(1, 1300)]
    keys += [f"raw-data/EPA/EPA-2026-0002/binary-EPA-2026-0002/comments_attachments/EPA-2026-0002-{n:04d}"
             f"_attachment_1.pdf" for n in range(1, 40)]
    keys += ["raw-data/EPA/EPA-2026-00010/x.json", "raw-data/EPA/a", "top-level.txt"]
    return keys


def _listing(client, **params) -> list[list[tuple]]:
    """Every page of a listing: each page's (key, size, etag) in order, then its folders (common prefixes)."""
    pages = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, **params):
        pages.append([(o["Key"], o["Size"], o["ETag"]) for o in page.get("Contents", [])]
                     + [(p["Prefix"],) for p in page.get("CommonPrefixes", [])])
    return pages


@pytest.mark.parametrize("params", [
    {"Prefix": "raw-data/EPA/EPA-2026-0001/", "PaginationConfig": {"PageSize": 1000}},
    {"Prefix": "raw-data/EPA/EPA-2026-0001/", "PaginationConfig": {"PageSize": 7}},
    {"Prefix": "raw-data/EPA/EPA-2026-0002/"},
    {"Prefix": "raw-data/", "StartAfter": "raw-data/EPA/EPA-2026-0001/text-EPA-2026-0001/comments/"
                                          "EPA-2026-0001-01100.json"},
    {},
    {"Prefix": "nothing-here/"},
    {"Prefix": "raw-data/", "Delimiter": "/"},
    {"Prefix": "raw-data/EPA/", "Delimiter": "/", "PaginationConfig": {"PageSize": 2}},
    {"Prefix": "raw-data/EPA/EPA-2026-0001/", "Delimiter": "/"},
    {"Prefix": "raw-data/EPA/EPA-2026-0001/text-EPA-2026-0001/comments/", "Delimiter": "/",
     "PaginationConfig": {"PageSize": 500}},
    {"Delimiter": "/"},
])
def test_the_sorted_index_pages_as_moto_does(monkeypatch, params):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with moto.mock_aws():
        from moto.s3.models import s3_backends

        backend = s3_backends[ACCOUNT]["global"]
        backend.create_bucket(BUCKET, "us-east-1")
        for key in _keys():
            backend.put_object(BUCKET, key, key.encode()[:20])
        client = boto3.client("s3", region_name="us-east-1")
        client.put_object(Bucket=BUCKET, Key=_keys()[5], Body=b"overwritten")  # a new version
        client.delete_object(Bucket=BUCKET, Key=_keys()[6])
        by_moto = _listing(client, **params)
        undo = serve_listings_from_a_sorted_index()
        try:
            by_index = _listing(client, **params)
            client.put_object(Bucket=BUCKET, Key="raw-data/EPA/EPA-2026-0001/new.json", Body=b"{}")
            added = _listing(client, **params)
        finally:
            undo()
        assert by_index == by_moto
        assert added == _listing(client, **params)  # the index follows a key added
