"""A moto S3 server in its own process with a bucket filled through moto's own backend:
``python -m benchmarks.mirror_rig --bucket B --keys-from FILE`` prints its URL and serves
until killed.

Uploading 200,000 objects through the S3 API takes longer than the benchmark itself
(a PUT costs moto several milliseconds of CPU); writing them into the backend of the
server's process costs microseconds each. Listing them is then the real thing: boto3 over
HTTP, one LIST request per 1,000 keys. Its own process, so the listing process's peak
memory is the listing's, not moto's.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

ACCOUNT = "123456789012"  # moto's default account


def fill(bucket: str, keys: list[str], body: bytes = b"{}") -> None:
    from moto.s3.models import s3_backends

    backend = s3_backends[ACCOUNT]["global"]
    backend.create_bucket(bucket, "us-east-1")
    for key in keys:
        backend.put_object(bucket, key, body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mirror_rig", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--keys-from", type=Path, required=True, help="a file of keys, one a line")
    args = parser.parse_args(argv)
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # not a line per LIST request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    fill(args.bucket, args.keys_from.read_text().split())
    host, port = server.get_host_and_port()
    print(f"ready http://{host}:{port}", flush=True)
    threading.Event().wait()  # serve until killed
    return 0


if __name__ == "__main__":
    sys.exit(main())
