"""S3 plumbing shared by the blob store (``pipeline.store.blobs``) and the mirror source
(``pipeline.sources.mirror``): neither layer reaches into the other for it.

Here: where a store URL points (``s3://bucket/prefix`` or a folder), the boto3 client
(signed, or unsigned for a public bucket), and the requests both make, each counted in
``pipeline.counters``: HEAD and GET with "no such object" mapped to None /
FileNotFoundError, and listings through boto3's paginators. botocore is imported only
when a call needs it: a run on local folders never loads it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

from pipeline.counters import S3_GET, S3_LIST, counters
from pipeline.errors import AccessRefused, BucketRefused, ConfigError
from pipeline.ids import validate_key

log = logging.getLogger("docketeer")

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
    *, endpoint_url: str | None = None, unsigned: bool = False, region: str = "us-east-1",
    max_connections: int = 10, retry_mode: str = "standard", max_attempts: int = 8,
):
    """A boto3 S3 client; unsigned for public buckets such as ``mirrulations``.

    boto3 clients are thread-safe, so one serves a whole pool of reader threads; its
    connection pool (``max_connections``) must be as large as the pool, or urllib3 drops
    and reopens connections. Retries are botocore's own (``standard`` or ``adaptive``,
    which also paces the client when S3 throttles)."""
    from botocore import UNSIGNED
    from botocore.config import Config

    config = Config(retries={"max_attempts": max_attempts, "mode": retry_mode}, region_name=region,
                    max_pool_connections=max_connections)
    if unsigned:
        config = config.merge(Config(signature_version=UNSIGNED))
    return _session().client("s3", endpoint_url=endpoint_url, config=config)


_SESSION = None
_SESSION_LOCK = threading.Lock()


def _session():
    """The process's boto3 session for S3 clients (as boto3's default one: made once, its
    service model loaded once), whose responses parse timestamps with ``s3_timestamp``:
    botocore's default parser (dateutil's general one) costs 0.2 ms a value, most of a LIST
    page's client CPU (1,000 LastModified values) and a share of each GET's."""
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is None:
            import boto3
            import botocore.session

            core = botocore.session.get_session()
            core.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=s3_timestamp)
            _SESSION = boto3.session.Session(botocore_session=core)
        return _SESSION


def s3_timestamp(value: str):
    """A timestamp of an S3 answer as a UTC datetime, as botocore's default parser gives it:
    ISO 8601 in listings (``2026-12-01T20:08:44.000Z``), RFC 1123 in headers
    (``Tue, 01 Dec 2026 20:08:44 GMT``)."""
    from datetime import UTC, datetime
    from email.utils import parsedate_to_datetime

    try:
        if value.endswith("Z") and "T" in value:
            return datetime.fromisoformat(value)
        if value.endswith(" GMT"):
            return parsedate_to_datetime(value).astimezone(UTC)
    except (TypeError, ValueError):
        pass
    from botocore.utils import parse_timestamp

    return parse_timestamp(value)


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


def list_page(client, **params) -> dict:
    """One ``list_objects_v2`` page (one request, one S3_LIST count)."""
    counters.incr(S3_LIST)
    return client.list_objects_v2(**params)


def is_s3_refusal(error) -> bool:
    """Whether a botocore ClientError means 'you may not' (403): S3's AccessDenied, or the
    bare 403 a HEAD answers with (it has no body to name the code)."""
    code = str(error.response.get("Error", {}).get("Code", ""))
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in ("403", "AccessDenied", "AllAccessDisabled") or status == 403


_SIGNED_BUCKETS: set[tuple[str | None, str]] = set()  # (endpoint, bucket) that refused unsigned reads
UNSIGNED_MODES = {"auto": None, "true": True, "false": False}  # the ``mirror_unsigned`` setting


class BucketAccess:
    """One boto3 client for a bucket that may be public or private, shared by every thread.

    ``unsigned=None`` (auto) reads unsigned first: a public bucket such as ``mirrulations``
    needs no credentials. The first refused read switches the client, once and for every
    thread, to a signed one if AWS credentials are configured (boto3's usual chain), and
    that read is tried again. ``True`` or ``False`` forces one way. A refusal that stands is
    one clear error: ``BucketRefused`` (run-stopping) for a listing, ``AccessRefused`` (the
    item's) for one object.
    """

    def __init__(self, bucket: str, make_client, unsigned: bool | None = None, endpoint: str | None = None) -> None:
        self.bucket = bucket
        self.unsigned = unsigned
        self._make_client = make_client  # make_client(unsigned: bool) -> a boto3 client
        self._lock = threading.Lock()
        self._where = (endpoint, bucket)
        # A bucket that refused an unsigned read once in this process is signed from the start.
        self._signed = unsigned is False or (unsigned is None and self._where in _SIGNED_BUCKETS)
        self.client = make_client(unsigned=not self._signed)
        # auto: the first listing and the first object read each go alone, so that one
        # refusal decides for every thread (the same requests at any concurrency).
        self._deciding = {True: threading.Lock(), False: threading.Lock()}
        self._decided: set[bool] = set()
        self._credentials: bool | None = None  # whether boto3 finds any, once asked

    def call(self, request, where: str, *, listing: bool = False):
        """``request(client)``, with the signed fallback and refusals named."""
        if self.unsigned is None and not self._signed and listing not in self._decided:
            with self._deciding[listing]:
                result = self._call(request, where, listing)
                self._decided.add(listing)
                return result
        return self._call(request, where, listing)

    def _call(self, request, where: str, listing: bool):
        from botocore.exceptions import ClientError, NoCredentialsError

        client = self.client
        try:
            return request(client)
        except ClientError as error:
            if not is_s3_refusal(error):
                raise
            fallback = self._fall_back(client)
            if fallback is None:
                raise self._refused(where, listing) from None
        except NoCredentialsError:
            raise self._refused(where, listing, credentials=False) from None
        try:
            return request(fallback)
        except ClientError as error:
            if is_s3_refusal(error):
                raise self._refused(where, listing) from None
            raise

    def pages(self, where: str, spend=lambda: None, **params) -> Iterator[dict]:
        """A ``list_objects_v2`` listing, one request per page, each through ``call``: the
        first page decides how the bucket is read, and a refusal on any later page is the
        same one-line ``BucketRefused`` as on the first (never a raw ``ClientError``)."""
        params = dict(params)
        page_size = params.pop("PaginationConfig", {}).get("PageSize")
        if page_size:
            params["MaxKeys"] = page_size
        token = None
        while True:
            spend()  # a run's budget, before each page (it raises BudgetSpent)
            asked = {**params, "ContinuationToken": token} if token else params
            page = self.call(lambda client, asked=asked: list_page(client, **asked), where, listing=True)
            yield page
            token = page.get("NextContinuationToken") if page.get("IsTruncated") else None
            if not token:
                return

    def _fall_back(self, refused_client):
        """The signed client to try after an unsigned refusal, or None when there is none."""
        if self.unsigned is not None:
            return None  # forced one way: no second try
        with self._lock:
            if self._signed:  # another thread switched already, or the signed read was refused
                return None if refused_client is self.client else self.client
            if self._credentials is None:  # asked once: boto3's chain may ask the network (EC2)
                self._credentials = _have_credentials()
            if not self._credentials:
                return None
            self.client = self._make_client(unsigned=False)
            self._signed = True
            _SIGNED_BUCKETS.add(self._where)
        log.info("s3://%s refuses unsigned reads: reading it with the configured AWS credentials", self.bucket)
        return self.client

    def _refused(self, where: str, listing: bool, credentials: bool = True):
        if not self._signed:
            how = ("unsigned (mirror_unsigned = true)" if self.unsigned
                   else "unsigned, and no AWS credentials are configured to sign with")
            hint = "give AWS credentials (AWS_ACCESS_KEY_ID/AWS_PROFILE) for a private bucket"
        elif not credentials:
            how, hint = "signed (mirror_unsigned = false), but there are no AWS credentials", \
                "give AWS credentials, or mirror_unsigned = auto for a public bucket"
        else:
            how, hint = "with the configured AWS credentials", "check the bucket's policy for them"
        if listing:
            return BucketRefused(f"s3://{self.bucket}: listing {where} refused (403) when read {how}; {hint}")
        return AccessRefused(f"s3://{self.bucket}/{where}: read refused (403) when read {how}")


def _have_credentials() -> bool:
    import boto3

    return boto3.session.Session().get_credentials() is not None
