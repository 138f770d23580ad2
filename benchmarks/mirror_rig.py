"""A moto S3 server in its own process with a bucket filled through moto's own backend:
``python -m benchmarks.mirror_rig --bucket B --keys-from FILE`` (every key of the file, one
body for all) or ``--tree ROOT`` (every regular file under ``ROOT/raw-data``, keyed by its
path relative to ``ROOT``, its own bytes as the body: a mirror folder served as a bucket)
prints ``ready URL`` and serves until killed.

Uploading 200,000 objects through the S3 API takes longer than the benchmark itself
(a PUT costs moto several milliseconds of CPU); writing them into the backend of the
server's process costs microseconds each. Listing them is then the real thing: boto3 over
HTTP, one LIST request per 1,000 keys. Its own process, so the listing process's peak
memory is the listing's, not moto's.

**A benchmark-only patch of moto, in this process only** (``--moto-paging``: off): moto
answers each ListObjectsV2 page by walking and sorting every key of the bucket (1.2-1.8 s a
page at 200,000 keys: the listing costs O(keys) per page, O(keys^2 / 1,000) in all), where
S3 pages in O(page). ``serve_listings_from_a_sorted_index`` answers a listing from a
sorted index of the bucket's key names (rebuilt when the number of keys changes: the
benchmark only adds and overwrites keys), a bisect to the page's start (with a delimiter,
a bisect past each folder's keys: the 276,000 docket folders of a ``devtools.scale_corpus
--listing`` list a page's work a page, where moto walks every key for each page), and
moto's own continuation tokens and response. The pipeline never runs this: it is what
makes the rig measure docketeer's listing and diffing instead of moto's paging.
"""

from __future__ import annotations

import argparse
import bisect
import os
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

ACCOUNT = "123456789012"  # moto's default account
_LAST = "\U0010ffff"  # sorts after any character a key can hold: folder + _LAST is past its keys


def serve_listings_from_a_sorted_index():
    """Patch moto's S3 backend (this process): ListObjectsV2 in O(page), with a delimiter
    or without. Returns what undoes the patch."""
    from moto.s3.models import FakeDeleteMarker, S3Backend
    from moto.utilities.utils import md5_hash

    original = S3Backend.list_objects_v2
    index: dict[str, tuple[int, list[str]]] = {}  # bucket name -> (number of keys, sorted names)

    def sorted_names(bucket) -> list[str]:
        count = len(bucket.keys)
        known = index.get(bucket.name)
        if known is None or known[0] != count:
            known = index[bucket.name] = (count, sorted(name for name, _key in bucket.keys.items()))
        return known[1]

    def list_objects_v2(self, bucket, prefix, delimiter, continuation_token, start_after, max_keys):
        if max_keys == 0:
            return original(self, bucket, prefix, delimiter, continuation_token, start_after, max_keys)
        names, prefix = sorted_names(bucket), prefix or ""
        after = self._pagination_tokens.get(continuation_token) if continuation_token else start_after
        at = bisect.bisect_left(names, prefix)
        if after:
            at = max(at, bisect.bisect_right(names, after))
            if delimiter and after.endswith(delimiter):  # a folder ended the last page: past it
                at = max(at, bisect.bisect_left(names, after + _LAST))
        page = []
        while at < len(names) and names[at].startswith(prefix) and len(page) <= max_keys:
            cut = names[at].find(delimiter, len(prefix)) if delimiter else -1
            if cut >= 0:  # a folder (a common prefix): listed once, its keys jumped over
                folder = names[at][:cut + len(delimiter)]
                page.append(folder)
                at = bisect.bisect_left(names, folder + _LAST)
                continue
            key = bucket.keys.get(names[at])
            if key is not None and not isinstance(key, FakeDeleteMarker):
                page.append(key)
            at += 1
        if len(page) <= max_keys:
            return page, False, None
        page = page[:max_keys]  # as moto's _truncate_result: a token names the page's last key
        last = page[-1] if isinstance(page[-1], str) else page[-1].name
        token = md5_hash(last.encode("utf-8")).hexdigest()
        self._pagination_tokens[token] = last
        return page, True, token

    S3Backend.list_objects_v2 = list_objects_v2
    return lambda: setattr(S3Backend, "list_objects_v2", original)


def fill(bucket: str, keys: list[str], body: bytes = b"{}") -> None:
    """The bucket, every key of ``keys`` with the same ``body``."""
    backend = _new_bucket(bucket)
    for key in keys:
        backend.put_object(bucket, key, body)


def fill_tree(bucket: str, root: Path) -> int:
    """The bucket, every regular file under ``root/raw-data`` as the key of its path relative
    to ``root`` (``raw-data/AGENCY/DOCKET/...``, as a mirror folder's files are named) with
    its bytes; returns the number of objects."""
    backend = _new_bucket(bucket)
    count = 0
    for key, path in tree_files(root):
        backend.put_object(bucket, key, path.read_bytes())
        count += 1
    return count


def tree_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(key, path) of every regular file under ``root/raw-data``. Symlinks (to
    a file or a folder), FIFOs and the like are left out: a bucket has no such objects (a
    mirror folder's walk lists such a file and refuses to read it)."""
    for folder, dirs, files in os.walk(root / "raw-data"):  # does not follow symlinked folders
        dirs.sort()
        for name in sorted(files):
            path = Path(folder, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                yield path.relative_to(root).as_posix(), path


def _new_bucket(bucket: str):
    from moto.s3.models import s3_backends

    backend = s3_backends[ACCOUNT]["global"]
    backend.create_bucket(bucket, "us-east-1")
    return backend


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mirror_rig", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bucket", required=True)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--keys-from", type=Path, help="a file of keys, one a line (each with the body {})")
    what.add_argument("--tree", type=Path, metavar="ROOT",
                      help="every regular file under ROOT/raw-data, keyed by its path relative to ROOT")
    parser.add_argument("--moto-paging", action="store_true",
                        help="list as moto does (every key walked for each page), without the sorted index")
    args = parser.parse_args(argv)
    import logging

    if not args.moto_paging:
        serve_listings_from_a_sorted_index()

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # not a line per LIST request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    if args.tree is not None:
        fill_tree(args.bucket, args.tree)
    else:
        fill(args.bucket, args.keys_from.read_text().split())
    host, port = server.get_host_and_port()
    print(f"ready http://{host}:{port}", flush=True)
    threading.Event().wait()  # serve until killed
    return 0


if __name__ == "__main__":
    sys.exit(main())
