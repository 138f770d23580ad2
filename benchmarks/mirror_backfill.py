"""Backfill from an S3 mirror whose every request costs 20 ms, at several concurrencies.

    .venv/bin/python -m benchmarks mirror_backfill [--comments 2000] [--delay-ms 20]
        [--concurrency 1,16] [--list-from api|mirror] [--corpus DIR] [--json OUT] [--profile OUT]
        [--mirror-unsigned auto|true|false]

A generated docket (``devtools/make_corpus.py``: ``--comments`` comments, about three in
four with an attachment) is uploaded to a moto S3 server, and read through
``devtools/latency_proxy.py``, which adds ``--delay-ms`` to every request as S3's own
latency would; both run as their own processes, so the backfill process has its two cores
to itself as far as this machine allows. For each concurrency a fresh store takes the
comment list from the stand-in API (not timed; ``--list-from mirror``: from the bucket,
as a no-key run does, which hands the records it read to backfill), then
``backfill_docket`` is timed: details and attachments from the bucket, blobs into a local
folder, rows into SQLite. Requests go unsigned as they do to the public mirrulations bucket
(``--mirror-unsigned false``: each one signed, as for a private copy). ``--profile OUT``
writes a cProfile of the timed backfill (meaningful at concurrency 1, where every read is
in the profiled thread).

Reported per concurrency: wall seconds, the requests the proxy forwarded, the most it had
in flight, and the floor — requests x delay / concurrency, what the latency alone costs
with that many requests in flight all the time. The issue's targets: concurrency 16 at
least 10x faster than concurrency 1, and within 2x of its floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.common import ROOT, generated_mirror_docket, open_runtime
from devtools.make_corpus import Manifest
from devtools.standin_server import StandinServer
from pipeline.backfill.stage import backfill_docket
from pipeline.counters import counters
from pipeline.engine.stage import StageContext
from pipeline.fetch.stage import fetch_docket
from pipeline.runtime import set_runtime
from pipeline.store import dockets

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"}
BUCKET = "mirror-bench"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks mirror_backfill", description=__doc__.split("\n\n")[0])
    parser.add_argument("--comments", type=int, default=2000)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", default="1,16", help="comma-separated")
    parser.add_argument("--corpus", type=Path, help="a corpus folder to reuse (made there if empty)")
    parser.add_argument("--json", type=Path, help="write the records here")
    parser.add_argument("--list-from", choices=("api", "mirror"), default="api",
                        help="where the untimed fetch lists the docket")
    parser.add_argument("--profile", type=Path, help="cProfile of each timed backfill: OUT.<concurrency>")
    parser.add_argument("--mirror-unsigned", choices=("auto", "true", "false"), default="auto",
                        help="auto (default): read unsigned, as the public mirrulations bucket is; "
                             "false: every request signed (SigV4), as a private copy is")
    args = parser.parse_args(argv)
    os.environ.update(CREDENTIALS)
    work = Path(tempfile.mkdtemp(prefix="bench-mirror-"))
    try:
        corpus = _corpus(args.corpus or work / "corpus", args.comments)
        records = _run_all(corpus, work, args.delay_ms / 1000,
                           [int(c) for c in args.concurrency.split(",")], args.list_from, args.profile,
                           args.mirror_unsigned)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _print(records, args.delay_ms)
    if args.json:
        args.json.write_text(json.dumps(records, indent=2))
    return 0


def _corpus(root: Path, comments: int) -> Path:
    return generated_mirror_docket(root, comments, attachment_share=0.75)


def _run_all(corpus: Path, work: Path, delay: float, concurrencies: list[int], list_from: str,
             profile: Path | None, unsigned: str) -> list[dict]:
    docket_id = Manifest.load(corpus).dockets[0].id
    with _process(["-m", "moto.server", "-H", "127.0.0.1", "-p", str(_free_port())], "Running on") as moto:
        _upload(moto.url, corpus)
        proxy_argv = ["-m", "devtools.latency_proxy", "--upstream", moto.url, "--delay-ms", str(delay * 1000)]
        with _process(proxy_argv, "http://") as proxy, StandinServer(corpus) as standin:
            servers = {"moto": moto, "proxy": proxy}
            return [_backfill_once(work / f"c{c}", standin.api_base, servers, docket_id, c, delay, list_from,
                                   profile and profile.with_suffix(f".{c}"), unsigned)
                    for c in concurrencies]


def _backfill_once(data_dir: Path, api_base: str, servers: dict, docket_id: str, concurrency: int,
                   delay: float, list_from: str, profile: Path | None, unsigned: str) -> dict:
    import cProfile

    proxy = servers["proxy"]
    runtime = open_runtime({"DOCKETEER_LIST_SOURCE": list_from,
        "DOCKETEER_DATA_DIR": str(data_dir), "DOCKETEER_DISCOVER": "none", "DOCKETEER_PACE_SECONDS": "0",
        "DOCKETEER_REQUEST_BUDGET": "0", "REGULATIONS_GOV_API_KEY": "DEMO_KEY", "DOCKETEER_API_BASE": api_base,
        "DOCKETEER_SOURCE": "mirror", "DOCKETEER_MIRROR_URL": f"s3://{BUCKET}",
        "DOCKETEER_S3_ENDPOINT_URL": proxy.url, "DOCKETEER_MIRROR_CONCURRENCY": str(concurrency),
        "DOCKETEER_MIRROR_UNSIGNED": unsigned,
    })
    try:
        dockets.ensure_dockets([docket_id], "list")
        assert fetch_docket(StageContext(runtime, "fetch"), dockets.require_docket(docket_id)).clean
        proxy.stats(reset=True)
        cpu_before = _cpu_seconds(servers)
        profiler = cProfile.Profile() if profile else None
        with counters.measure() as io, counters.counting_queries():
            started = time.perf_counter()
            if profiler:
                profiler.enable()
            result = backfill_docket(StageContext(runtime, "bench"), dockets.require_docket(docket_id))
            wall = time.perf_counter() - started
        if profiler:
            profiler.disable()
            profiler.dump_stats(profile)
        cpu = {name: round(after - cpu_before[name], 1) for name, after in _cpu_seconds(servers).items()}
        traffic = proxy.stats()
    finally:
        runtime.close()
        set_runtime(None)
    requests = traffic["requests"]
    floor = requests * delay / concurrency
    return {"concurrency": concurrency, "list_from": list_from, "unsigned": unsigned, "wall_s": round(wall, 2), "requests": requests,
            "cpu_s": cpu, "state_statements": io.get("state_queries", 0),
            "max_in_flight": traffic["max_in_flight"], "floor_s": round(floor, 2),
            "of_floor": round(wall / floor, 2) if floor else None, "clean": result.clean,
            "counts": result.counts, "s3_get": io.get("s3_get", 0), "s3_list": io.get("s3_list", 0)}


def _print(records: list[dict], delay_ms: float) -> None:
    base = records[0]["wall_s"]
    print(f"| concurrency | wall s | requests | max in flight | floor s (requests x {delay_ms:g} ms / c) "
          "| x floor | speed-up vs first | CPU s: backfill / moto / proxy |")
    print("|---|---|---|---|---|---|---|---|")
    for r in records:
        cpu = r["cpu_s"]
        print(f"| {r['concurrency']} | {r['wall_s']} | {r['requests']} | {r['max_in_flight']} | {r['floor_s']} "
              f"| {r['of_floor']} | {base / r['wall_s']:.1f}x | {cpu['backfill']} / {cpu['moto']} / {cpu['proxy']} |")
    print(json.dumps({r["concurrency"]: r["counts"] for r in records}))


# --- the servers, each its own process ---------------------------------------------------------


class _Server:
    def __init__(self, process: subprocess.Popen, url: str) -> None:
        self.process, self.url = process, url

    def stats(self, reset: bool = False) -> dict:
        """The proxy's traffic so far (``devtools/latency_proxy.py`` answers it itself)."""
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/__traffic__" + ("?reset" if reset else "")) as answer:
            return json.loads(answer.read())


class _process:  # noqa: N801 - used as a context manager, like open()
    def __init__(self, argv: list[str], ready: str) -> None:
        self.argv, self.ready = argv, ready

    def __enter__(self) -> _Server:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen([sys.executable, *self.argv], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env)
        for line in self.process.stdout:
            if self.ready in line:
                url = line[line.index("http://"):].split()[0].rstrip("/")
                # Keep reading its output, or a chatty server blocks on a full pipe.
                threading.Thread(target=self.process.stdout.read, daemon=True).start()
                return _Server(self.process, url)
        raise RuntimeError(f"{' '.join(self.argv)} exited before it was ready")

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _cpu_seconds(servers: dict) -> dict[str, float]:
    """CPU time (user + system) so far of this process (every thread) and of each server:
    on a shared machine, what the work cost apart from waiting for the delay."""
    import psutil

    seconds = {name: sum(psutil.Process(server.process.pid).cpu_times()[:2]) for name, server in servers.items()}
    seconds["backfill"] = sum(psutil.Process().cpu_times()[:2])
    return seconds


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _upload(endpoint: str, corpus: Path) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    # Public, as the mirrulations bucket is: anyone may list and read it, unsigned.
    client.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject", "s3:ListBucket"],
        "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"]}]}))
    paths = sorted(p for p in (corpus / "raw-data").rglob("*") if p.is_file())
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: client.upload_file(str(p), BUCKET, p.relative_to(corpus).as_posix()), paths))
