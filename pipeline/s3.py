"""S3 plumbing shared by the blob store (``pipeline.store.blobs``) and the mirror source
(``pipeline.sources.mirror``): neither layer reaches into the other for it.

Here: where a store URL points (``s3://bucket/prefix`` or a folder), the boto3 client
(signed, or unsigned for a public bucket), and the requests both make, each counted in
``pipeline.counters``: HEAD and GET with "no such object" mapped to None /
FileNotFoundError, and listings through boto3's paginators. botocore is imported only
when a call needs it: a run on local folders never loads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

from pipeline.counters import S3_GET, S3_LIST, counters
from pipeline.errors import ConfigError
from pipeline.ids import validate_key

# Free-form counters for S3 requests that are neither a LIST nor a GET.
S3_HEAD = "s3_head"
S3_PUT = "s3_put"
S3_DELETE = "s3_delete"


def parse_store_url(url: str, what: str) -> tuple[str, str] | Path:
    """``s3://bucket[/prefix]`` -> (bucket, prefix); ``file:///path`` or a plain path -> the
    Path. ``what`` names the setting in the errors ("blob store URL", "mirror URL")."""
    if not url:
        raise ConfigError(f"{what} is empty")
    parsed = urlparse(url)
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ConfigError(f"{what} has no bucket: {url}")
        return parsed.netloc, parsed.path
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" or len(parsed.scheme) == 1:  # a plain path (or a Windows drive)
        return Path(url).expanduser()
    raise ConfigError(f"unsupported {what} scheme {parsed.scheme!r}: {url}")


def normalise_bucket_prefix(prefix: str) -> str:
    """'' or 'a/b/' from whatever slashes a URL path brings ('/a/b', 'a/b/')."""
    prefix = prefix.strip("/")
    if not prefix:
        return ""
    validate_key(prefix, what="bucket prefix")
    return prefix + "/"


def s3_client(
    *, endpoint_url: str | None = None, unsigned: bool = False, region: str = "us-east-1"
):
    """A boto3 S3 client; unsigned for public buckets such as ``mirrulations``."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    config = Config(retries={"max_attempts": 8, "mode": "standard"}, region_name=region)
    if unsigned:
        config = config.merge(Config(signature_version=UNSIGNED))
    return boto3.client("s3", endpoint_url=endpoint_url, config=config)


def is_s3_not_found(error) -> bool:
    """Whether a botocore ClientError means 'no such object' (GET and HEAD word it differently)."""
    code = str(error.response.get("Error", {}).get("Code", ""))
    return code in ("404", "NoSuchKey", "NotFound")


def head_object(client, bucket: str, key: str) -> dict | None:
    """The object's HEAD response, or None when there is no such object."""
    from botocore.exceptions import ClientError

    counters.incr(S3_HEAD)
    try:
        return client.head_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if is_s3_not_found(error):
            return None
        raise


def get_object(client, bucket: str, key: str) -> dict:
    """The GET response (its ``Body`` streams the bytes); FileNotFoundError when missing."""
    from botocore.exceptions import ClientError

    counters.incr(S3_GET)
    try:
        return client.get_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if is_s3_not_found(error):
            raise FileNotFoundError(f"s3://{bucket}/{key}") from error
        raise


def list_pages(client, operation: str, **params) -> Iterator[dict]:
    """The pages of a listing (``list_objects_v2``, ``list_multipart_uploads``) as boto3's
    paginator fetches them, one S3_LIST count per page (one request each)."""
    for page in client.get_paginator(operation).paginate(**params):
        counters.incr(S3_LIST)
        yield page
