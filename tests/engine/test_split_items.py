"""Two workers on one docket split the backfill and index stages' items:
item claims with ``FOR UPDATE SKIP LOCKED`` on a real PostgreSQL state DB.

The lease holder runs in this process; as soon as it has claimed its first batch, a second
worker (its own process, host "host-b") starts on the same docket, finds the lease held,
takes every item still free through claims and writes no marker; then the holder goes on,
finds nothing left, and writes the marker. A helper that dies after claiming (SIGKILL at an
item boundary) leaves its claims to expire: the holder takes those items then. Every
assertion is about work done: detail requests in the stand-in's log, item rows and the runs
that wrote them, chunk rows, combined.md reads, against one worker's run of the same corpus.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

import pipeline
from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer
from pipeline.clock import iso, utcnow
from pipeline.counters import COMBINED_READS, counters
from pipeline.engine import claims, markers
from pipeline.engine.completion import Completion
from pipeline.engine.progress import KILL_HOOK
from pipeline.runtime import set_runtime
from pipeline.store import item_states
from pipeline.store.models import Item, ItemClaim, ItemState, Lease, Run
from tests.fixtures.backfill_runs import dump
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database, run_invocation

KEY = "test-key"
BATCH = 2  # claim_batch: the holder's first claim is two items, the helper takes the rest


# --------------------------------------------------------------------------- the helper process
def helper_main(spec_json: str) -> None:
    """The second worker: one `luigi` invocation of ``task`` over the docket, on the same
    stores, in a process of its own; prints what it did (its counters, its claims' done
    statements) on a RESULT line."""
    spec = json.loads(spec_json)
    runtime = make_runtime(Path(spec["folder"]), spec["state_url"], **spec["settings"])
    runtime.state  # noqa: B018
    set_runtime(runtime)
    done_calls: list[int] = []
    real_finish = claims.finish

    def finish(stage, session, items):
        done_calls.append(len(items))
        return real_finish(stage, session, items)

    claims.finish = finish
    with counters.measure() as io:
        ok = run_invocation(getattr(pipeline, spec["task"])(docket=spec["docket"]))
    print("RESULT " + json.dumps({"ok": ok, "io": io, "done_calls": done_calls}), flush=True)
    runtime.close()


@contextmanager
def opened(folder: Path, state_url: str, **settings):
    runtime = make_runtime(folder, state_url, **settings)
    runtime.state  # noqa: B018
    with installed(runtime):
        yield runtime


class Split:
    """One docket's stores (PostgreSQL state and index, a blob folder both workers see) and
    its two workers: the holder here, the helper in a process started from the holder's
    first claim."""

    def __init__(self, tmp_path: Path, server: StandinServer, docket: str, state_url: str,
                 index_url: str) -> None:
        self.tmp_path, self.server, self.docket = tmp_path, server, docket
        self.state_url, self.index_url = state_url, index_url
        self.helper: dict | None = None
        self.holder_done_calls: list[int] = []

    def settings(self, host: str, **extra) -> dict:
        return {"index_url": self.index_url, "blob_url": str(self.tmp_path / "blobs"),
                "api_base": self.server.api_base, "api_key": KEY, "request_budget": 0,
                "extract_workers": 1, "ocr": "false", "claim_batch": BATCH, "lease_seconds": 60,
                "host_id": host, **extra}

    def holder(self):
        return opened(self.tmp_path / "holder", self.state_url, **self.settings("host-a"))

    def run_helper(self, task: str, env: dict[str, str], **settings) -> dict:
        spec = {"folder": str(self.tmp_path / "helper"), "state_url": self.state_url,
                "settings": self.settings("host-b", **settings), "task": task, "docket": self.docket}
        code = "import sys; from tests.engine.test_split_items import helper_main; helper_main(sys.argv[1])"
        environ = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
        done = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], cwd=ROOT,
                              env={**environ, "PYTHONPATH": str(ROOT), **env}, capture_output=True,
                              text=True, timeout=300)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        got = json.loads(lines[0][len("RESULT "):]) if lines else {}
        return {"returncode": done.returncode, "output": done.stdout + done.stderr, **got}

    @contextmanager
    def helper_joins(self, monkeypatch, task: str, env: dict[str, str] | None = None, *,
                     before_any_claim: bool = False, **settings):
        """While the block runs the holder: its first claim that takes items starts the
        helper and waits for it (the split is the same every time: the holder's first
        batch, then whatever the helper leaves); ``before_any_claim``: its first offer does,
        and the helper takes every item."""
        real_offer, real_claim, real_finish = claims.offer, claims.claim, claims.finish

        def join() -> None:
            if self.helper is None:
                self.helper = {}  # once
                self.helper = self.run_helper(task, env or {}, **settings)

        def offer(stage, docket_id, session, items):
            offered = real_offer(stage, docket_id, session, items)
            if offered and before_any_claim:
                join()
            return offered

        def claim(stage, docket_id, session, claimer, items, limit, seconds):
            taken = real_claim(stage, docket_id, session, claimer, items, limit, seconds)
            if taken:
                join()
            return taken

        def finish(stage, session, items):
            self.holder_done_calls.append(len(items))
            return real_finish(stage, session, items)

        self.server.reset_log()  # the requests of the two workers' run alone
        monkeypatch.setattr(claims, "offer", offer)
        monkeypatch.setattr(claims, "claim", claim)
        monkeypatch.setattr(claims, "finish", finish)
        yield
        monkeypatch.setattr(claims, "offer", real_offer)
        monkeypatch.setattr(claims, "claim", real_claim)
        monkeypatch.setattr(claims, "finish", real_finish)
        assert self.helper, "the holder never claimed: nothing was split"


@pytest.fixture
def corpus(tmp_path):
    manifest = make_corpus(tmp_path / "mirror", dockets=1, comments_per_docket=10,
                           corrupt_share=0.0, image_only_share=0.0)
    with StandinServer(tmp_path / "mirror", api_keys=(KEY,)) as server:
        yield server, manifest.dockets[0].id


def detail_requests(server: StandinServer) -> Counter:
    """Detail GETs per item id (list pages have no id in their path)."""
    paths = [path for method, path, _ in list(server.request_log) if method == "GET"]
    return Counter(path.rsplit("/", 1)[1] for path in paths
                   if path.startswith(("/v4/comments/", "/v4/documents/")))


def rows_per_run(stage: str, docket: str) -> dict[str, int]:
    """How many of the stage's item rows each run wrote (each worker has a run row)."""
    return dict(Counter(row.run_id for row in ItemState.select().where(
        (ItemState.stage == stage) & (ItemState.docket == docket))))


def stage_runs(stage: str, docket: str) -> list[Run]:
    return list(Run.select().where((Run.stage == stage) & (Run.docket == docket)).order_by(Run.id))


# --------------------------------------------------------------------------- backfill
@pytest.fixture
def backfill_reference(tmp_path, corpus, pg_server) -> dict:
    """The docket fetched and backfilled by one worker on a store of its own."""
    server, docket = corpus
    folder = tmp_path / "reference"
    with opened(folder, new_pg_database(pg_server), index_url=new_pg_database(pg_server),
                blob_url=str(folder / "blobs"), api_base=server.api_base, api_key=KEY,
                request_budget=0) as runtime:
        assert run_invocation(pipeline.BackfillAll(docket=docket))
        marker = markers.read_marker(docket, "backfill")
        return {"dump": dump(stable=True), "blobs": sorted(runtime.blobs.list()),
                "output": marker.output_fingerprint}


@pytest.fixture
def fetched(tmp_path, corpus, pg_server) -> Split:
    """A second store with the docket fetched (backfill to do), and its two workers."""
    server, docket = corpus
    split = Split(tmp_path / "split", server, docket, new_pg_database(pg_server), new_pg_database(pg_server))
    with split.holder():
        assert run_invocation(pipeline.FetchAll(docket=docket))
    return split


def test_two_workers_split_a_backfill_and_end_as_one_worker_would(fetched, backfill_reference, monkeypatch):
    split = fetched
    with split.holder() as runtime:
        items = sorted(item.key for item in Item.select().where(Item.docket == split.docket))
        with split.helper_joins(monkeypatch, "BackfillComments"):
            assert run_invocation(pipeline.BackfillComments(docket=split.docket))
        helper = split.helper
        assert helper["returncode"] == 0 and helper["ok"], helper["output"][-3000:]
        # Every item's detail was asked for once, by one of the two workers.
        assert detail_requests(split.server) == Counter({key: 1 for key in items})
        holder_run, helper_run = stage_runs("backfill", split.docket)
        assert holder_run.clean and helper_run.clean
        per_run = rows_per_run("backfill", split.docket)
        assert per_run == {holder_run.run_id: BATCH, helper_run.run_id: len(items) - BATCH}
        # One done statement per written batch (the API records each item as it is decided).
        assert split.holder_done_calls == [1] * BATCH
        assert helper["done_calls"] == [1] * (len(items) - BATCH)
        assert helper["io"]["stage_calls"] == 1
        # The holder alone wrote the marker, for the rows as both left them.
        marker = markers.read_marker(split.docket, "backfill")
        assert marker is not None and marker.run_id == holder_run.run_id
        assert marker.output_fingerprint == item_states.docket_output_fingerprint("backfill", split.docket)
        assert marker.output_fingerprint == backfill_reference["output"]
        assert dump(stable=True) == backfill_reference["dump"]
        assert sorted(runtime.blobs.list()) == backfill_reference["blobs"]
        assert not ItemClaim.select().exists() and not Lease.select().exists()


def test_a_holder_whose_helper_did_every_item_records_the_output_afresh(fetched, backfill_reference,
                                                                      monkeypatch):
    split = fetched
    with split.holder():
        # A marker for another input, whose output the run holds (hold_output) until it ends.
        markers.StateMarkers(Completion("backfill", "fetch")).write(
            split.docket, version=1, sealed_at=None, input_fingerprint="another input", run_id="old")
        markers.set_output(split.docket, "backfill", "output-before-the-run")
        with counters.measure() as io, split.helper_joins(monkeypatch, "BackfillComments",
                                                          before_any_claim=True):
            assert run_invocation(pipeline.BackfillComments(docket=split.docket))
        assert split.helper["returncode"] == 0 and split.helper["ok"], split.helper["output"][-3000:]
        holder_run, helper_run = stage_runs("backfill", split.docket)
        assert not io.get("item_state_writes")  # the holder wrote no item row itself
        assert set(rows_per_run("backfill", split.docket)) == {helper_run.run_id}
        # ... yet its marker vouches for the rows the helper wrote, not the output it held.
        marker = markers.read_marker(split.docket, "backfill")
        assert marker.run_id == holder_run.run_id
        assert marker.output_fingerprint == backfill_reference["output"]
        assert dump(stable=True) == backfill_reference["dump"]


def test_a_helper_killed_after_claiming_loses_no_backfill_item(fetched, backfill_reference, monkeypatch):
    split = fetched
    with split.holder() as runtime:
        items = sorted(item.key for item in Item.select().where(Item.docket == split.docket))
        # The helper claims two items, records the first and dies: its claims expire in 2 s.
        with split.helper_joins(monkeypatch, "BackfillComments", {KILL_HOOK: "backfill:1"}, lease_seconds=2):
            assert run_invocation(pipeline.BackfillComments(docket=split.docket))
        assert split.helper["returncode"] == -9, split.helper["output"][-3000:]
        # The dead helper's claimed, unread item was taken by the holder once its claim expired:
        # still one detail request per item (the helper read nothing past the item it recorded).
        assert detail_requests(split.server) == Counter({key: 1 for key in items})
        holder_run, helper_run = stage_runs("backfill", split.docket)
        assert holder_run.clean and helper_run.finished_at is None  # killed mid-run
        assert rows_per_run("backfill", split.docket) == {holder_run.run_id: len(items) - 1,
                                                          helper_run.run_id: 1}
        assert markers.read_marker(split.docket, "backfill").output_fingerprint == backfill_reference["output"]
        assert dump(stable=True) == backfill_reference["dump"]
        assert sorted(runtime.blobs.list()) == backfill_reference["blobs"]
        assert not ItemClaim.select().exists() and not Lease.select().exists()


def test_a_helper_that_stops_on_its_budget_frees_its_claims_at_once(fetched, backfill_reference, monkeypatch):
    split = fetched
    with split.holder():
        started = time.monotonic()
        # One request allowed: the helper stops at its first item's file, the budget spent;
        # the two items of its claim go back at once (its claims would hold for 60 s).
        with split.helper_joins(monkeypatch, "BackfillComments", request_budget=1):
            assert run_invocation(pipeline.BackfillComments(docket=split.docket))
        assert split.helper["returncode"] == 0 and split.helper["ok"], split.helper["output"][-3000:]
        holder_run, helper_run = stage_runs("backfill", split.docket)
        assert helper_run.budget_spent and holder_run.clean
        assert time.monotonic() - started < 30  # no wait for the helper's claims to expire
        assert set(rows_per_run("backfill", split.docket)) == {holder_run.run_id}
        assert markers.read_marker(split.docket, "backfill").output_fingerprint == backfill_reference["output"]
        assert dump(stable=True) == backfill_reference["dump"]


def test_a_dead_holders_unexpired_lease_is_taken_over_not_joined(fetched, backfill_reference):
    """A run whose state server was killed under it dies holding its lease (its release never
    reached the database). The rerun on its host must not join it as a helper (nothing would
    be offered: the items stayed unbackfilled until the lease expired, two hours by default):
    the rule ``leases.acquire`` takes over by applies to joining too."""
    split = fetched
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: its pid names no process
    with split.holder() as runtime:
        Lease.insert(stage="backfill", docket=split.docket, token="dead-run", holder=f"host-a:{dead.pid}",
                     expires_at=iso(utcnow() + timedelta(hours=2))).execute()
        assert claims.session_of("backfill", split.docket) is None
        assert run_invocation(pipeline.BackfillComments(docket=split.docket))
        assert markers.read_marker(split.docket, "backfill").output_fingerprint == backfill_reference["output"]
        assert dump(stable=True) == backfill_reference["dump"]
        assert sorted(runtime.blobs.list()) == backfill_reference["blobs"]
        assert not Lease.select().exists()
        # A live holder's lease (this process, on this host) is still joined.
        Lease.insert(stage="backfill", docket=split.docket, token="live-run", holder=f"host-a:{os.getpid()}",
                     expires_at=iso(utcnow() + timedelta(hours=2))).execute()
        assert claims.session_of("backfill", split.docket) == "live-run"


# --------------------------------------------------------------------------- index
@pytest.fixture
def extracted(tmp_path, corpus, pg_server):
    """The docket extracted and indexed by one worker (the reference chunks), and a second,
    empty index DB on the same state DB for the two workers."""
    server, docket = corpus
    state_url = new_pg_database(pg_server)
    reference = Split(tmp_path / "one", server, docket, state_url, new_pg_database(pg_server))
    with reference.holder() as runtime:
        assert run_invocation(pipeline.IndexAll(docket=docket))
        index_db = runtime.index_db()
        chunks = index_db.dump_chunks()
        keys = sorted(index_db.state_for_docket("comments", docket)) + sorted(
            index_db.state_for_docket("documents", docket))
    assert chunks and len(keys) >= 8
    split = Split(tmp_path / "split", server, docket, state_url, new_pg_database(pg_server))
    split.tmp_path.mkdir()
    (split.tmp_path / "blobs").symlink_to(reference.tmp_path / "blobs")  # extract's combined.md
    return split, chunks, keys


def index_runs(docket: str) -> list[Run]:
    """The index runs on the split's index DB (the reference's came first)."""
    return stage_runs("index", docket)[1:]


def embedded(run: Run) -> int:
    return json.loads(run.counters or "{}").get("embedded", 0)


def test_two_workers_split_an_index_run_and_end_as_one_worker_would(extracted, monkeypatch):
    split, reference_chunks, keys = extracted
    with split.holder() as runtime:
        with counters.measure() as io, split.helper_joins(monkeypatch, "IndexDocket"):
            assert run_invocation(pipeline.IndexDocket(docket=split.docket))
        helper = split.helper
        assert helper["returncode"] == 0 and helper["ok"], helper["output"][-3000:]
        holder_run, helper_run = index_runs(split.docket)
        assert holder_run.clean and helper_run.clean
        # Every item chunked and embedded once, by one of the two workers.
        assert (embedded(holder_run), embedded(helper_run)) == (BATCH, len(keys) - BATCH)
        assert io[COMBINED_READS] == BATCH and helper["io"][COMBINED_READS] == len(keys) - BATCH
        # One done statement per embed batch written (all of a worker's items fit in one).
        assert split.holder_done_calls == [BATCH] and helper["done_calls"] == [len(keys) - BATCH]
        index_db = runtime.index_db()
        assert index_db.dump_chunks() == reference_chunks  # no chunk twice, none missing
        assert index_db.docket_marker("comments", split.docket) is not None  # the holder's
        assert not ItemClaim.select().exists() and not Lease.select().exists()


def test_a_helper_killed_after_claiming_loses_no_index_item(extracted, monkeypatch):
    split, reference_chunks, keys = extracted
    with split.holder() as runtime:
        # embed_batch 1: the helper writes its first item's chunks and dies before its claims
        # hear of it; the holder takes both items of that claim once it expired (2 s).
        with counters.measure() as io, split.helper_joins(
                monkeypatch, "IndexDocket", {KILL_HOOK: "index:1"}, lease_seconds=2, embed_batch=1):
            assert run_invocation(pipeline.IndexDocket(docket=split.docket))
        assert split.helper["returncode"] == -9, split.helper["output"][-3000:]
        holder_run, helper_run = index_runs(split.docket)
        assert holder_run.clean and helper_run.finished_at is None
        # The holder did every item but the ones the helper had claimed; then those, expired.
        assert embedded(holder_run) == len(keys) and io[COMBINED_READS] == len(keys)
        index_db = runtime.index_db()
        assert index_db.dump_chunks() == reference_chunks
        assert index_db.docket_marker("comments", split.docket) is not None
        assert not ItemClaim.select().exists() and not Lease.select().exists()
