"""Several hosts on one luigid: host identity in leases, expiry as the only
death certificate of another host's holder, renewal on progress, the layouts refused for a
shared state DB, and two worker processes with their own host ids on loopback (luigid, one
embedded PostgreSQL for state and index, moto S3 for blobs, the stand-in API)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

import pipeline
from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer
from pipeline.clock import iso, utcnow
from pipeline.counters import ITEM_STATE_WRITES, STAGE_CALLS, counters
from pipeline.engine import claims, leases, registry
from pipeline.engine.stage import Stage, StageResult
from pipeline.errors import ConfigError, LeaseHeld
from pipeline.runtime import check_layout, set_runtime
from pipeline.store.models import ItemClaim, Lease, Run
from pipeline.tasks import stage_tasks
from tests.fixtures.backfill_runs import dump
from tests.fixtures.luigid_server import api, running_luigid
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database, run_invocation

STAGES = ("fetch", "backfill", "extract", "index")
DOCKETS = 6
COMMENTS = 4


# --------------------------------------------------------------------------- host identity
@pytest.fixture
def host_a(state):
    """The ``state`` runtime (SQLite or PostgreSQL) as host "host-a"."""
    runtime = make_runtime(state.settings.data_path.parent, state.settings.state_url, host_id="host-a")
    runtime.state  # noqa: B018
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.close()


def test_the_holder_is_named_by_the_host_id_setting(host_a):
    leases.acquire("fetch", "AB-2026-0001", 60)
    assert Lease.get().holder == f"host-a:{os.getpid()}"


def test_a_dead_holder_on_another_host_is_known_only_by_expiry(host_a):
    leases.acquire("fetch", "AB-2026-0001", 60)
    Lease.update(holder="host-b:999999").execute()  # no such pid here; but it is host-b's
    with pytest.raises(LeaseHeld, match="host-b:999999"):
        leases.acquire("fetch", "AB-2026-0001", 60)
    Lease.update(expires_at=iso(utcnow() - timedelta(seconds=1))).execute()
    leases.acquire("fetch", "AB-2026-0001", 60)
    assert Lease.get().holder.startswith("host-a:")


def test_a_dead_holder_on_this_host_id_is_taken_over_at_once(host_a):
    leases.acquire("fetch", "AB-2026-0001", 60)
    Lease.update(holder="host-a:999999").execute()
    leases.acquire("fetch", "AB-2026-0001", 60)
    assert Lease.get().holder == f"host-a:{os.getpid()}"


SEEN_EXPIRY: list[tuple[str, str]] = []


def _watch_lease(ctx, docket) -> StageResult:
    """Ages its own lease to the brink, reports progress once, and notes the expiry
    before and after: the report must have renewed it."""
    here = (Lease.stage == "leasewatch") & (Lease.docket == docket.id)
    brink = iso(utcnow() + timedelta(seconds=1))
    Lease.update(expires_at=brink).where(here).execute()
    ctx.progress.start(1)  # a forced report: the task's tick renews the lease
    SEEN_EXPIRY.append((brink, Lease.get(here).expires_at))
    return StageResult()


LEASEWATCH = Stage(name="leasewatch", upstream=None, run=_watch_lease, task="LeaseWatch",
                   wrapper="LeaseWatchAll", doc="test: sees its lease renewed",
                   unfinished=lambda runtime, docket_id, now: 0)


def test_a_progress_report_renews_the_lease(tmp_path):
    runtime = make_runtime(tmp_path, lease_seconds=3600)
    runtime.state  # noqa: B018
    previous = set_runtime(runtime)
    try:
        with registry.added(LEASEWATCH):
            task, _ = stage_tasks(LEASEWATCH, module=__name__)
            from pipeline.store import dockets

            dockets.ensure_dockets(["AB-2026-0001"], "test")
            SEEN_EXPIRY.clear()
            assert run_invocation(task(docket="AB-2026-0001"))
    finally:
        set_runtime(previous)
        runtime.close()
    [(brink, renewed)] = SEEN_EXPIRY
    assert renewed > iso(utcnow() + timedelta(seconds=3000)) > brink


# --------------------------------------------------------------------------- layouts refused
def _settings(tmp_path, **values):
    return make_runtime(tmp_path, **values).settings


@pytest.mark.parametrize(("values", "named"), [
    ({"index_url": "", "blob_url": "s3://b/p"}, "index_url is empty"),
    ({"index_url": "postgresql://h/i", "blob_url": ""}, "blob_url is empty"),
    ({"index_url": "postgresql://h/i", "blob_url": "/srv/blobs"}, "blob_url is a local folder"),
])
def test_a_shared_state_db_refuses_one_host_layouts(tmp_path, values, named):
    with pytest.raises(ConfigError, match=named) as info:
        check_layout(_settings(tmp_path, state_url="postgresql://h/state", **values))
    assert "\n" not in str(info.value)


def test_one_host_and_several_host_layouts_are_accepted(tmp_path):
    check_layout(_settings(tmp_path))  # SQLite, embedded index, local blobs
    check_layout(_settings(tmp_path, state_url="postgresql://h/s", index_url="postgresql://h/i",
                           blob_url="s3://bucket/prefix"))


def test_luigi_refuses_a_shared_state_db_with_the_embedded_index_in_one_line(tmp_path, pg_url):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
               DOCKETEER_DATA_DIR=str(tmp_path / "data"), DOCKETEER_STATE_URL=pg_url,
               DOCKETEER_DISCOVER="none")
    done = subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", "IndexAll",
                           "--local-scheduler"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("docketeer:")]
    assert len(lines) == 1 and "index_url is empty" in lines[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data" / "index-pg").exists()  # no embedded server was started


# --------------------------------------------------------------------------- two hosts, one luigid
LUIGID_CFG = """[scheduler]
# A dead worker's running task fails after seconds without a ping (more than the workers'
# ping_interval, 5 s in the shipped defaults, or a busy worker would count as gone) and is retried at once.
worker_disconnect_delay = 10
retry_delay = 1
prune_on_get_work = true
"""


@contextmanager
def central_scheduler(folder: Path):
    """A luigid of its own: port, state path, logs and the quick retry settings above."""
    folder.mkdir(parents=True)
    (folder / "logs").mkdir()
    (folder / "luigid.cfg").write_text(LUIGID_CFG)
    env = {**os.environ, "LUIGI_CONFIG_PATH": str(folder / "luigid.cfg")}
    with running_luigid(folder / "luigid.state", logdir=folder / "logs", env=env) as (port, _daemon):
        yield port


@dataclass
class Cluster:
    """One shared store (state DB, index DB, S3 prefix) and the hosts that work it."""

    folder: Path
    state_url: str
    index_url: str
    blob_url: str
    s3_endpoint: str
    server: StandinServer
    dockets: list[str]

    def env(self, host: str, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
        return {**env, "PYTHONPATH": str(ROOT), "LUIGI_CONFIG_PATH": str(worker_host_cfg(self.folder)),
                "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "DOCKETEER_HOST_ID": host, "DOCKETEER_DATA_DIR": str(self.folder / host),
                "DOCKETEER_STATE_URL": self.state_url, "DOCKETEER_INDEX_URL": self.index_url,
                "DOCKETEER_BLOB_URL": self.blob_url, "DOCKETEER_S3_ENDPOINT_URL": self.s3_endpoint,
                "DOCKETEER_API_BASE": self.server.api_base, "REGULATIONS_GOV_API_KEY": "DEMO_KEY",
                "DOCKETEER_DISCOVER": "list", "DOCKETEER_DOCKETS": ",".join(self.dockets),
                "DOCKETEER_EMBEDDER": "hashing", "DOCKETEER_PACE_SECONDS": "0",
                "DOCKETEER_OCR": "false", "DOCKETEER_EXTRACT_WORKERS": "1",
                "DOCKETEER_LOG_EVERY_SECONDS": "0.5", **extra}

    def luigi(self, host: str, task: str, *args: str, port: int | None = None, **env: str):
        scheduler = (["--local-scheduler"] if port is None else
                     ["--scheduler-host", "127.0.0.1", "--scheduler-port", str(port)])
        return subprocess.Popen(
            [sys.executable, "-m", "luigi", "--module", "pipeline", task, *scheduler,
             "--log-level", "INFO", *args],
            cwd=self.folder, env=self.env(host, **env), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)

    def discover(self, port: int | None = None) -> None:
        """Discovery first, once: a wrapper then knows every docket task when it schedules,
        so each host's worker offers luigid the whole graph (not only the one that ran
        discovery and yields the tasks from run())."""
        out, _ = self.luigi("discoverer", "DiscoverDockets", port=port).communicate(timeout=120)
        assert "DiscoverDockets" in out and "Traceback" not in out, out[-3000:]

    @contextmanager
    def opened(self):
        """This store's runtime installed in the test process (for dumps)."""
        runtime = make_runtime(self.folder / "reader", self.state_url, index_url=self.index_url,
                               blob_url=self.blob_url, s3_endpoint_url=self.s3_endpoint)
        runtime.state  # noqa: B018
        with installed(runtime):
            yield runtime

    def snapshot(self) -> dict:
        with self.opened() as rt:
            runs = Counter((r.stage, r.docket) for r in Run.select().where(Run.stage.in_(STAGES)))
            blobs = sorted(rt.blobs.list())
            return {"state": dump(stable=True), "chunks": rt.index_db().dump_chunks(),
                    "blobs": blobs, "runs": runs}




def worker_host_cfg(folder: Path) -> Path:
    """The project's luigi.cfg with what docs/OPERATING.md's worker hosts change: keep_alive, or a
    worker leaves as soon as what is left is being run by the other host; already_running
    and not_run = 0, since Luigi's summary files the tasks the other host ran as "being run
    by another worker" or "not granted run permission" (a failed task still exits 30)."""
    from pipeline.config import LUIGI_DEFAULTS

    shipped = LUIGI_DEFAULTS.read_text()
    for old in ("keep_alive = false", "not_run = 25", "already_running = 10"):
        assert old in shipped, old  # what the package carries, and this file changes
    text = (ROOT / "luigi.cfg").read_text() + (
        "\n[worker]\nkeep_alive = true\n\n[retcode]\nalready_running = 0\nnot_run = 0\n")
    path = folder / "worker-host.cfg"
    path.write_text(text)
    return path

STAGE_LINE = re.compile(r"\b(fetch|backfill|extract|index) ([A-Z]+-\d{4}-\d{4}): .* in \d+\.\d+s")


def stage_runs(output: str) -> Counter:
    """(stage, docket) pairs a host's output says it ran (each task's summary line)."""
    return Counter(STAGE_LINE.search(line).groups() for line in output.splitlines()
                   if STAGE_LINE.search(line))


@pytest.fixture
def corpus(tmp_path):
    manifest = make_corpus(tmp_path / "mirror", dockets=DOCKETS, comments_per_docket=COMMENTS,
                           corrupt_share=0.0, image_only_share=0.0)
    with StandinServer(tmp_path / "mirror") as server:
        yield server, [d.id for d in manifest.dockets]


@pytest.fixture
def cluster(tmp_path, pg_server, corpus, s3_endpoint, s3_client, s3_credentials_env):
    """A factory of fresh shared stores on the one PostgreSQL server and S3 endpoint."""
    server, dockets = corpus
    bucket = f"multihost-{tmp_path.name[-20:].lower().replace('_', '-')}"
    s3_client.create_bucket(Bucket=bucket)

    def make(name: str) -> Cluster:
        (tmp_path / name).mkdir()
        return Cluster(tmp_path / name, new_pg_database(pg_server), new_pg_database(pg_server),
                       f"s3://{bucket}/{name}", s3_endpoint, server, dockets)
    return make


@pytest.fixture
def reference(cluster) -> dict:
    """The same corpus indexed by one process on one host."""
    single = cluster("single")
    single.discover()
    out, _ = single.luigi("single", "IndexAll").communicate(timeout=300)
    assert "Traceback" not in out, out[-3000:]
    return single.snapshot()


def assert_each_stage_ran_once(snap: dict, dockets: list[str]) -> None:
    assert snap["runs"] == Counter({(stage, d): 1 for stage in STAGES for d in dockets})


@pytest.mark.slow
def test_two_hosts_split_the_dockets_and_end_as_one_process_would(cluster, reference, tmp_path):
    shared = cluster("shared")
    with central_scheduler(tmp_path / "luigid") as port:
        shared.discover(port)
        hosts = {h: shared.luigi(h, "IndexAll", "--workers", "2", port=port) for h in ("a", "b")}
        outputs = {h: p.communicate(timeout=300)[0] for h, p in hosts.items()}
        for host, out in outputs.items():
            (shared.folder / f"{host}.log").write_text(out)
        for host, process in hosts.items():
            assert process.returncode == 0, outputs[host][-3000:]
        assert api(port, "task_list", status="FAILED") == {}
    ran = {h: stage_runs(out) for h, out in outputs.items()}
    assert ran["a"] and ran["b"], "one host did all the work: nothing was split"
    assert ran["a"] + ran["b"] == Counter({(s, d): 1 for s in STAGES for d in shared.dockets})
    got = shared.snapshot()
    assert_each_stage_ran_once(got, shared.dockets)
    assert_each_stage_ran_once(reference, shared.dockets)
    for part in ("state", "chunks", "blobs"):
        assert got[part] == reference[part], part
    assert not [k for k in got["blobs"] if k.startswith("tmp/")]


@pytest.mark.slow
def test_a_killed_host_lease_expires_and_the_other_host_finishes_its_docket(cluster, reference, tmp_path):
    shared = cluster("killed")
    short = {"DOCKETEER_LEASE_SECONDS": "6"}  # host a's lease outlives it by at most this
    with central_scheduler(tmp_path / "luigid-kill") as port:
        shared.discover(port)
        # Host a runs one task at a time in its own process, so the SIGKILL takes the whole
        # host down mid-backfill, its lease still in the state DB.
        doomed = shared.luigi("a", "IndexAll", "--workers", "1", port=port,
                              DOCKETEER_TEST_KILL_AFTER="backfill:2", **short)
        doomed_out, _ = doomed.communicate(timeout=300)
        assert doomed.returncode == -9, doomed_out[-3000:]
        with shared.opened():
            [held] = list(Lease.select())
        assert held.stage == "backfill" and held.holder.startswith("a:")
        # Host b keeps asking luigid until every task is done: the dead host's task comes
        # back once luigid has given up on host a, and b may take its lease once it expired.
        survivor = shared.luigi("b", "IndexAll", "--workers", "2", port=port, **short)
        out, _ = survivor.communicate(timeout=300)
        (shared.folder / "b.log").write_text(out)
        assert "Traceback" not in out, out[-3000:]
    ran_b = stage_runs(out)
    assert ("backfill", held.docket) in ran_b and ("index", held.docket) in ran_b
    got = shared.snapshot()
    for part in ("state", "chunks", "blobs"):
        assert got[part] == reference[part], part
    with shared.opened():
        assert not Lease.select().exists()
    # every (stage, docket) finished once; the killed backfill left one unfinished run row
    assert got["runs"] - Counter({("backfill", held.docket): 1}) == reference["runs"]


# --------------------------------------------------------------------------- item claims
@pytest.fixture
def pg_state(tmp_path, pg_url):
    runtime = make_runtime(tmp_path, pg_url, host_id="host-a", lease_seconds=60, claim_batch=3)
    runtime.state  # noqa: B018
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.close()


ITEMS = [f"AB-2026-0001-{n:04d}" for n in range(10)]


def _claim(session: str, claimer: str, limit: int = 3) -> list[str]:
    return claims.claim("extract", "AB-2026-0001", session, claimer, ITEMS, limit, 60)


def test_claims_split_the_items_skip_locked_rows_and_retake_expired_ones(pg_state, pg_url):
    import psycopg2

    session = leases.acquire("extract", "AB-2026-0001", 60)
    assert claims.offer("extract", "AB-2026-0001", session, ITEMS) == 10
    assert _claim(session, "h1") == ITEMS[0:3]
    assert _claim(session, "h2") == ITEMS[3:6]
    other = psycopg2.connect(pg_url)  # another worker, mid-claim: its rows are locked
    try:
        with other.cursor() as cur:
            cur.execute("SELECT item FROM item_claim WHERE item IN %s FOR UPDATE", (tuple(ITEMS[6:8]),))
            assert _claim(session, "h2") == ITEMS[8:10]  # skipped, not waited for
    finally:
        other.rollback()
        other.close()
    claims.finish("extract", session, ITEMS[0:3])
    ItemClaim.update(expires_at=iso(utcnow() - timedelta(seconds=1))).where(
        ItemClaim.claimer == "h2").execute()  # h2 died: its claims expire
    assert _claim(session, "h1", limit=10) == ITEMS[3:10]  # never the finished three
    leases.release("extract", "AB-2026-0001", session)
    assert claims.offer("extract", "AB-2026-0001", session, ITEMS) == 0  # the session is over
    ItemClaim.update(expires_at="").execute()
    assert _claim(session, "h3") == []


def test_a_new_session_resets_the_rows_of_an_old_one(pg_state):
    old = leases.acquire("extract", "AB-2026-0001", 60)
    claims.offer("extract", "AB-2026-0001", old, ITEMS)
    claims.finish("extract", old, _claim(old, "h1"))
    leases.release("extract", "AB-2026-0001", old)  # a holder that died never cleared them
    new = leases.acquire("extract", "AB-2026-0001", 60)
    claims.offer("extract", "AB-2026-0001", new, ITEMS)
    assert _claim(new, "h2", limit=10) == ITEMS  # done in the old session is no answer now


def test_the_holder_waits_for_a_helper_and_takes_its_items_once_they_expire(pg_state):
    session = leases.acquire("extract", "AB-2026-0001", 60)
    claims.offer("extract", "AB-2026-0001", session, ITEMS)
    # a helper that will die: its claims run out in two seconds
    helper_took = claims.claim("extract", "AB-2026-0001", session, "helper", ITEMS, 2, 2)
    waited: list[int] = []
    holder = claims.ItemClaims("extract", "AB-2026-0001", session, "holder", holder=True, batch=3,
                               seconds=60, on_wait=lambda: waited.append(1))
    taken = holder.take(ITEMS)
    assert [next(taken) for _ in range(8)] == ITEMS[2:]
    helper = claims.ItemClaims("extract", "AB-2026-0001", session, "late", holder=False, batch=3, seconds=60)
    assert list(helper.take(ITEMS)) == []  # a helper leaves when nothing is free
    assert list(taken) == helper_took  # the holder waited, then took the dead helper's items
    assert waited  # ... renewing its lease while it waited


@pytest.fixture
def backfilled(tmp_path, pg_url, pg_server):
    """One docket backfilled by the pipeline on a PostgreSQL state DB (extract to do)."""
    manifest = make_corpus(tmp_path / "mirror", dockets=1, comments_per_docket=8,
                           corrupt_share=0.0, image_only_share=0.0)
    with StandinServer(tmp_path / "mirror") as server:
        runtime = make_runtime(tmp_path, pg_url, index_url=new_pg_database(pg_server),
                               api_base=server.api_base, api_key="DEMO_KEY", extract_workers=1,
                               ocr="false", claim_batch=2, host_id="host-b")
        runtime.state  # noqa: B018
        previous = set_runtime(runtime)
        docket = manifest.dockets[0].id
        try:
            assert run_invocation(pipeline.BackfillAll(docket=docket))
            yield runtime, docket
        finally:
            set_runtime(previous)
            runtime.close()


def test_a_second_worker_helps_the_lease_holder_then_the_holder_finishes(backfilled):
    from pipeline.engine import markers
    from pipeline.extract import stage as extract
    from pipeline.store import item_states

    runtime, docket = backfilled
    todo = sorted(k for page, _ in extract.planned(docket, False, extract.EXTRACTOR_VERSION) for k in page)
    assert len(todo) >= 6
    # Another host holds extract's lease on the docket and is working its first two items.
    session = leases.acquire("extract", docket, 600)
    Lease.update(holder="host-a:1").execute()
    claims.offer("extract", docket, session, todo)
    mine = claims.claim("extract", docket, session, "host-a:1", todo, 2, 600)
    with counters.measure() as io:
        assert run_invocation(pipeline.ExtractText(docket=docket))  # helps; no LeaseHeld
    assert io[STAGE_CALLS] == 1
    assert set(item_states.states_for_docket("extract", docket)) == set(todo) - set(mine)
    assert markers.read_marker(docket, "extract") is None  # the holder writes it, not a helper
    assert not ItemClaim.select().where(~ItemClaim.done & (ItemClaim.item.not_in(mine))).exists()
    # The holder ends without having finished its two (it died): the next run does them.
    leases.release("extract", docket, session)
    with counters.measure() as io:
        assert run_invocation(pipeline.ExtractText(docket=docket))
    assert io[ITEM_STATE_WRITES] and set(item_states.states_for_docket("extract", docket)) == set(todo)
    assert markers.read_marker(docket, "extract") is not None
    assert not ItemClaim.select().exists()  # the holder's session is cleared with its lease
    assert [r.docket for r in Run.select().where(Run.stage == "extract") if not r.clean] == []


def test_hosts_starting_at_once_on_a_new_state_db_create_its_schema_once(tmp_path, pg_server):
    url = new_pg_database(pg_server)
    opener = ("import sys; from pathlib import Path; from pipeline.store import db; "
              "db.open_state_db(sys.argv[1], Path(sys.argv[2]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    starting = [subprocess.Popen([sys.executable, "-c", opener, url, str(tmp_path)], env=env,
                                 stderr=subprocess.PIPE, text=True) for _ in range(6)]
    errors = [p.communicate(timeout=120)[1] for p in starting]
    assert [p.returncode for p in starting] == [0] * 6, errors
    runtime = make_runtime(tmp_path, url)
    from pipeline.store import db as state_db

    assert state_db.schema_version(runtime.state) == state_db.SCHEMA_VERSION
    runtime.close()
