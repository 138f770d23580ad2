"""Backfill's concurrent mirror reads, and S3 buckets read signed or not as they allow.

Real parts: a moto S3 server on loopback behind ``devtools/latency_proxy.py`` (which counts
requests in flight and can refuse unsigned ones), the stand-in API for the comment lists,
local folders. Assertions are about work done (rows, blobs, counters, the proxy's counts).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from devtools.latency_proxy import LatencyProxy
from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer
from pipeline.backfill.stage import STAGE, backfill_docket
from pipeline.counters import ITEM_STATE_WRITES, counters
from pipeline.engine.read_ahead import read_ahead
from pipeline.engine.stage import StageContext, StageResult
from pipeline.errors import AccessRefused, BucketRefused, BudgetSpent
from pipeline.failures import classify
from pipeline.fetch.stage import fetch_docket
from pipeline.runtime import set_runtime
from pipeline.sources import s3 as s3_module
from pipeline.store import dockets
from pipeline.store.models import Attachment, Item, ItemState
from tests.fixtures import s3_fixtures
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import make_runtime

# Columns that differ between two runs doing the same work at different times.
VOLATILE = {"id", "run_id", "written_at", "created_at", "updated_at"}


# --------------------------------------------------------------------------- read_ahead


def test_read_ahead_hands_results_back_in_order_errors_included():
    def read(n):
        if n % 5 == 0:
            raise ValueError(f"bad {n}")
        return n * n

    got = []
    for job, result in read_ahead(read, range(40), concurrency=8):
        try:
            got.append((job, result()))
        except ValueError as exc:
            got.append((job, str(exc)))
    assert got == [(n, f"bad {n}" if n % 5 == 0 else n * n) for n in range(40)]


def test_read_ahead_at_concurrency_one_reads_in_the_callers_thread_one_at_a_time():
    threads, order = set(), []

    def read(n):
        threads.add(threading.current_thread())
        order.append(("read", n))
        return n

    for _job, result in read_ahead(read, range(3), concurrency=1, before_each=lambda: order.append("check")):
        order.append(("got", result()))
    assert threads == {threading.current_thread()}
    assert order == ["check", ("read", 0), ("got", 0), "check", ("read", 1), ("got", 1),
                     "check", ("read", 2), ("got", 2)]


def test_read_ahead_stops_submitting_when_the_budget_is_spent_and_hands_back_what_is_in_flight():
    submitted, checks = [], iter([None] * 5 + [BudgetSpent("time budget spent")] * 100)

    def before_each():
        outcome = next(checks)
        if outcome is not None:
            raise outcome

    got = []
    with pytest.raises(BudgetSpent):
        for _job, result in read_ahead(lambda n: submitted.append(n) or n, range(100), 16, before_each):
            got.append(result())
    assert got == [0, 1, 2, 3, 4] and sorted(submitted) == got  # nothing read past the budget


def test_read_ahead_stopped_by_its_caller_cancels_what_has_not_started_and_waits_for_the_rest():
    started, finished, gate = [], [], threading.Event()

    def read(n):
        started.append(n)
        gate.wait(5)
        finished.append(n)
        return n

    reads = read_ahead(read, range(1000), concurrency=4)
    job, _result = next(reads)
    gate.set()
    reads.close()  # a run-stopping failure in the caller's thread
    assert job == 0 and len(started) <= 8  # never more than 2 x concurrency handed out
    assert sorted(finished) == sorted(started)  # nothing still running once it is closed


# --------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    # reuse_attachments: one file on two comments, which two readers may bring at once
    make_corpus(root, dockets=2, comments_per_docket=14, reuse_attachments=True)
    return root


@pytest.fixture(scope="module")
def docket_ids(corpus) -> list[str]:
    return sorted(p.name for p in (corpus / "raw-data").glob("*/*"))


@pytest.fixture
def standin(corpus):
    with StandinServer(corpus) as server:
        yield server


@pytest.fixture
def no_aws_credentials(monkeypatch, tmp_path):
    """Nothing for boto3's credential chain to find: no variables, files or instance role."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def aws_credentials(no_aws_credentials, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.fixture
def opened(tmp_path):
    """open(name, **settings): a runtime, made current; all closed at the end."""
    runtimes = []

    def open_runtime(name: str, **overrides):
        runtime = make_runtime(tmp_path / name, api_key="test-key", request_budget=0, **overrides)
        runtime.state  # noqa: B018 - open and create the schema
        set_runtime(runtime)
        runtimes.append(runtime)
        return runtime

    yield open_runtime
    for runtime in runtimes:
        runtime.close()


def fetch_and_backfill(runtime, ids: list[str], ctx_type=StageContext) -> StageResult:
    dockets.ensure_dockets(ids, "list")
    total = StageResult()
    for docket_id in ids:
        assert fetch_docket(StageContext(runtime, "fetch"), dockets.require_docket(docket_id)).clean
    for docket_id in ids:
        result = backfill_docket(ctx_type(runtime, "run"), dockets.require_docket(docket_id))
        for name, n in result.counts.items():
            total.add(name, n)
        total.clean &= result.clean
        total.budget_spent |= result.budget_spent
    return total


def dump() -> dict[str, list]:
    tables = {
        "item": Item.select().order_by(Item.key),
        "attachment": Attachment.select().order_by(Attachment.item, Attachment.filename),
        "item_state": ItemState.select().where(ItemState.stage != "fetch").order_by(ItemState.stage, ItemState.item),
    }
    return {name: [{k: v for k, v in row.items() if k not in VOLATILE} for row in query.dicts()]
            for name, query in tables.items()}


def blob_dump(blobs) -> dict[str, str]:
    """Every stored blob by key, each checked whole (its bytes hash to its key)."""
    out = {}
    for key in blobs.list("attachments/"):
        digest = hashlib.sha256(blobs.get(key)).hexdigest()
        assert digest == key.rsplit("/", 1)[-1], key
        out[key] = digest
    assert not list(blobs.list("tmp/"))
    return out


def upload_mirror(s3_client, bucket: str, corpus: Path) -> None:
    s3_fixtures.upload_tree(s3_client, bucket, corpus / "raw-data", "raw-data/")


# --------------------------------------------------------------------------- the same at any concurrency


@pytest.mark.usefixtures("aws_credentials")
def test_s3_backfill_at_concurrency_1_4_16_writes_the_same_rows_blobs_and_counters(
        opened, standin, corpus, docket_ids, s3_client, s3_endpoint, s3_bucket):
    upload_mirror(s3_client, s3_bucket, corpus)
    runs = {}
    with LatencyProxy(s3_endpoint, delay_seconds=0.005) as proxy:
        for concurrency in (1, 4, 16):
            runtime = opened(f"c{concurrency}", api_base=standin.api_base, source="mirror",
                             mirror_url=f"s3://{s3_bucket}", s3_endpoint_url=proxy.url,
                             mirror_concurrency=concurrency, mirror_unsigned="false")
            proxy.traffic.reset()
            with counters.measure() as io:
                result = fetch_and_backfill(runtime, docket_ids)
            runs[concurrency] = (result.counts, io_done(io), dump(), blob_dump(runtime.blobs),
                                 proxy.traffic.requests, proxy.traffic.max_in_flight)
    one, four, sixteen = runs[1], runs[4], runs[16]
    assert one[0]["files_stored"] > 0 and one[0]["files_deduplicated"] > 0  # the shared file
    assert one[:5] == four[:5] == sixteen[:5]  # counts, counters, rows, blobs, requests
    assert one[5] == 1  # one request at a time
    assert four[5] >= 2 and sixteen[5] >= 2  # the pool overlaps them


def test_folder_backfill_at_concurrency_1_and_16_writes_the_same_rows_blobs_and_counters(
        opened, standin, corpus, docket_ids):
    runs = []
    for concurrency in (1, 16):
        runtime = opened(f"c{concurrency}", api_base=standin.api_base, source="mirror",
                         mirror_url=str(corpus), mirror_concurrency=concurrency)
        with counters.measure() as io:
            result = fetch_and_backfill(runtime, docket_ids)
        assert io.get("mirror_reads", 0) > 0
        runs.append((result.counts, io_done(io), dump(), blob_dump(runtime.blobs)))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("db", ["sqlite", "postgres"])
def test_mirror_backfill_records_a_batch_of_items_in_a_few_statements(opened, standin, corpus, docket_ids,
                                                                       request, db):
    """The rows of decided items go in batches (pending marks per batch handed to the
    readers, then attachment rows, details and states per RECORD_BATCH items): far fewer
    statements than items. One statement per item or more means the batching broke. The
    rows are those of a run at concurrency 1 (SQLite's executemany, psycopg2's batches)."""
    state_url = request.getfixturevalue("pg_url") if db == "postgres" else ""
    one = opened("one", api_base=standin.api_base, source="mirror", mirror_url=str(corpus), mirror_concurrency=1)
    fetch_and_backfill(one, docket_ids)
    expected = dump()
    runtime = opened("batched", api_base=standin.api_base, source="mirror", mirror_url=str(corpus),
                     mirror_concurrency=16, state_url=state_url)
    dockets.ensure_dockets(docket_ids, "list")
    for docket_id in docket_ids:
        assert fetch_docket(StageContext(runtime, "fetch"), dockets.require_docket(docket_id)).clean
    items = Item.select().count()
    with counters.measure() as io, counters.counting_queries():
        for docket_id in docket_ids:
            assert backfill_docket(StageContext(runtime, "run"), dockets.require_docket(docket_id)).clean
    states = [row.state for row in ItemState.select().where(ItemState.stage == STAGE)]
    assert len(states) == items and "pending" not in states and states.count("ok") >= items - 2
    # per docket of 15 items: one pending batch of 15, one record batch (pending, decided)
    assert io[ITEM_STATE_WRITES] <= 3 * len(docket_ids) < items
    # the rest is per docket (its todo pages, listing, handed-over records), not per item:
    # one statement per item or more (as before the batching: 6.8) would pass 100 per docket
    assert io["state_queries"] <= 25 * len(docket_ids)
    assert dump() == expected


# Statements the state DB ran: how many depends on how rows are batched (concurrency 1 marks
# each item pending alone), not on what the run did.
STATEMENT_COUNTERS = {"rows_written", "item_state_writes", "state_queries"}


def io_done(io: dict) -> dict:
    """The work a run did (requests, reads, blobs written), without its statement counts."""
    return {name: n for name, n in io.items() if name not in STATEMENT_COUNTERS}


class SpendsAfter(StageContext):
    """A time budget that is spent after a given number of item boundaries (no clock)."""

    boundaries = 5

    def check_time(self) -> None:
        type(self).boundaries -= 1
        if type(self).boundaries < 0:
            raise BudgetSpent("time budget spent")


def test_a_spent_budget_stops_submitting_finishes_what_is_in_flight_and_the_next_run_completes(
        opened, standin, corpus, docket_ids):
    whole = opened("whole", api_base=standin.api_base, source="mirror", mirror_url=str(corpus))
    fetch_and_backfill(whole, docket_ids[:1])
    expected = dump()

    runtime = opened("budget", api_base=standin.api_base, source="mirror", mirror_url=str(corpus),
                     mirror_concurrency=16)
    SpendsAfter.boundaries = 5
    result = fetch_and_backfill(runtime, docket_ids[:1], ctx_type=SpendsAfter)
    assert result.budget_spent
    states = [row.state for row in ItemState.select().where(ItemState.stage == STAGE)]
    assert len(states) == 5 and "pending" not in states  # the five handed out, each decided
    for attachment in Attachment.select().where(Attachment.sha256.is_null(False)):  # no sha without its blob
        assert runtime.blobs.exists(runtime.blobs.attachment_key(attachment.sha256))
    blob_dump(runtime.blobs)

    assert fetch_and_backfill(runtime, docket_ids[:1]).clean  # the next run finishes the rest
    assert dump() == expected


# --------------------------------------------------------------------------- signed or unsigned


def _public_read_policy(bucket: str) -> str:
    # moto checks HEAD against "s3:HeadObject" (AWS itself uses s3:GetObject for HEAD).
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*",
        "Action": ["s3:GetObject", "s3:HeadObject", "s3:ListBucket"],
        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]})


class SigningCount:
    """Which requests reached the bucket signed: a wrapper around the proxy's forwarding."""

    def __init__(self, proxy: LatencyProxy) -> None:
        self.signed = self.unsigned = self.refused = 0
        forward = proxy.server.upstream

        def counted(method, path, body, headers):
            signed = "Authorization" in headers
            status, answer_headers, answer = forward(method, path, body, headers)
            self.signed += signed
            self.unsigned += not signed
            self.refused += status == 403
            return status, answer_headers, answer

        proxy.server.upstream = counted


@pytest.mark.usefixtures("no_aws_credentials")
def test_public_bucket_is_read_unsigned_without_credentials(
        opened, standin, corpus, docket_ids, s3_client, s3_endpoint, s3_bucket):
    upload_mirror(s3_client, s3_bucket, corpus)
    s3_client.put_bucket_policy(Bucket=s3_bucket, Policy=_public_read_policy(s3_bucket))
    with LatencyProxy(s3_endpoint, delay_seconds=0) as proxy:
        seen = SigningCount(proxy)
        runtime = opened("public", api_base=standin.api_base, source="mirror",
                         mirror_url=f"s3://{s3_bucket}", s3_endpoint_url=proxy.url)
        result = fetch_and_backfill(runtime, docket_ids)
    assert result.clean and result.counts["files_stored"] > 0
    assert seen.unsigned > 0 and seen.signed == 0 and seen.refused == 0


@pytest.mark.usefixtures("aws_credentials")
def test_private_bucket_refuses_unsigned_once_then_is_read_signed(
        opened, standin, corpus, docket_ids, s3_client, s3_endpoint, s3_bucket):
    upload_mirror(s3_client, s3_bucket, corpus)  # no policy: moto refuses unsigned GETs
    reference = opened("signed", api_base=standin.api_base, source="mirror", mirror_url=str(corpus))
    fetch_and_backfill(reference, docket_ids)
    expected = dump()
    with LatencyProxy(s3_endpoint, delay_seconds=0) as proxy:
        seen = SigningCount(proxy)
        runtime = opened("auto", api_base=standin.api_base, source="mirror", mirror_url=f"s3://{s3_bucket}",
                         s3_endpoint_url=proxy.url, mirror_concurrency=1)
        result = fetch_and_backfill(runtime, docket_ids)
    assert result.clean
    # moto lists unsigned (one LIST), refuses the first unsigned GET; every later request,
    # the next docket's included, is signed
    assert seen.refused == 1 and seen.unsigned == 2
    assert {k: v for k, v in dump().items() if k != "attachment"} == \
        {k: v for k, v in expected.items() if k != "attachment"}


@pytest.mark.usefixtures("no_aws_credentials")
def test_private_bucket_without_credentials_gives_each_item_a_reason_not_a_traceback(
        opened, standin, corpus, docket_ids, s3_client, s3_endpoint, s3_bucket, monkeypatch):
    upload_mirror(s3_client, s3_bucket, corpus)
    asked = []  # boto3's credential chain may ask the network (EC2): once per mirror, not per read
    real = s3_module._have_credentials
    monkeypatch.setattr(s3_module, "_have_credentials", lambda: asked.append(1) or real())
    runtime = opened("refused", api_base=standin.api_base, source="mirror", mirror_url=f"s3://{s3_bucket}",
                     s3_endpoint_url=s3_endpoint)
    fetch_and_backfill(runtime, docket_ids[:1])
    rows = list(ItemState.select().where(ItemState.stage == STAGE))
    assert rows and {row.state for row in rows} == {"retry"}
    assert all("read refused (403) when read unsigned, and no AWS credentials" in row.reason for row in rows)
    assert len(rows) > 1 and asked == [1]
    assert Attachment.select().count() == 0


@pytest.mark.usefixtures("no_aws_credentials")
def test_a_bucket_that_refuses_its_listing_stops_the_run_in_one_line(
        opened, standin, corpus, docket_ids, s3_client, s3_endpoint, s3_bucket):
    upload_mirror(s3_client, s3_bucket, corpus)
    with LatencyProxy(s3_endpoint, delay_seconds=0, refuse_unsigned=True) as proxy:
        runtime = opened("private", api_base=standin.api_base, source="mirror",
                         mirror_url=f"s3://{s3_bucket}", s3_endpoint_url=proxy.url)
        with pytest.raises(BucketRefused) as refused:
            fetch_and_backfill(runtime, docket_ids[:1])
    message = str(refused.value)
    assert classify(refused.value).stops_run and "\n" not in message
    assert message.startswith(f"s3://{s3_bucket}: listing raw-data/") and "no AWS credentials" in message
    assert not ItemState.select().where(ItemState.stage == STAGE).exists()  # no item blamed or marked
    assert Attachment.select().count() == 0


@pytest.mark.usefixtures("aws_credentials")
def test_forced_unsigned_does_not_sign_after_a_refusal(
        opened, standin, corpus, docket_ids, s3_client, s3_endpoint, s3_bucket):
    upload_mirror(s3_client, s3_bucket, corpus)
    runtime = opened("forced", api_base=standin.api_base, source="mirror", mirror_url=f"s3://{s3_bucket}",
                     s3_endpoint_url=s3_endpoint, mirror_unsigned="true")
    fetch_and_backfill(runtime, docket_ids[:1])
    reasons = {row.reason for row in ItemState.select().where(ItemState.stage == STAGE)}
    assert reasons and all("(mirror_unsigned = true)" in reason for reason in reasons)
    assert isinstance(AccessRefused("x"), Exception) and classify(AccessRefused("x")).state == "retry"


@pytest.mark.usefixtures("no_aws_credentials")
def test_a_refused_listing_through_luigi_exits_non_zero_with_one_line(
        tmp_path, standin, docket_ids, corpus, s3_client, s3_endpoint, s3_bucket):
    upload_mirror(s3_client, s3_bucket, corpus)
    root = ROOT
    with LatencyProxy(s3_endpoint, delay_seconds=0, refuse_unsigned=True) as proxy:
        env = {**os.environ, "PYTHONPATH": str(root), "LUIGI_CONFIG_PATH": str(root / "luigi.cfg"),
               "DOCKETEER_DATA_DIR": str(tmp_path / "data"), "DOCKETEER_API_BASE": standin.api_base,
               "REGULATIONS_GOV_API_KEY": "test-key", "DOCKETEER_DISCOVER": "list",
               "DOCKETEER_DOCKETS": docket_ids[0], "DOCKETEER_PACE_SECONDS": "0", "DOCKETEER_SOURCE": "mirror",
               "DOCKETEER_MIRROR_URL": f"s3://{s3_bucket}", "DOCKETEER_S3_ENDPOINT_URL": proxy.url}
        done = subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", "BackfillAll",
                               "--local-scheduler"], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in output, output[-3000:]
    lines = [line for line in output.splitlines() if "listing raw-data/" in line]
    assert len(lines) == 1 and "BucketRefused" in lines[0] and "no AWS credentials" in lines[0], output[-3000:]


@pytest.mark.usefixtures("aws_credentials")
def test_a_listing_refused_on_a_later_page_is_the_same_one_line_as_a_refused_bucket(
        corpus, docket_ids, s3_client, s3_endpoint, s3_bucket):
    from pipeline.sources.mirror import open_mirror

    upload_mirror(s3_client, s3_bucket, corpus)
    # The first page is answered; every page after it (asked with a continuation token) is 403.
    with LatencyProxy(s3_endpoint, delay_seconds=0, refuse_containing="continuation-token") as proxy:
        mirror = open_mirror(f"s3://{s3_bucket}", s3_endpoint_url=proxy.url, unsigned=False)
        mirror.page_size = 5
        with counters.measure() as io, pytest.raises(BucketRefused) as refused:
            mirror.docket_listing(docket_ids[0])
        assert proxy.traffic.refused >= 1
    message = str(refused.value)
    assert io.get("s3_list") >= 2  # the first page was read, the refusal came on a later one
    assert classify(refused.value).stops_run and "\n" not in message
    assert message.startswith(f"s3://{s3_bucket}: listing raw-data/") and "refused (403)" in message


# --------------------------------------------------------------------------- killed mid-batch


KILLED_RUN = """
import sys
import pipeline.backfill.sources as backfill_sources
import pipeline.backfill.stage as backfill
from pipeline.engine.progress import Progress
from pipeline.runtime import get_runtime
from pipeline.engine.stage import StageContext
from pipeline.store import dockets
backfill_sources.RECORD_BATCH = int(sys.argv[2])
progress = Progress("backfill " + sys.argv[1])  # the kill hook counts backfill's items
backfill.backfill_docket(StageContext(get_runtime(), "killed", progress=progress),
                         dockets.require_docket(sys.argv[1]))
"""


@pytest.mark.parametrize(("batch", "after"), [(100, 9), (4, 11)])
def test_sigkill_mid_batch_on_a_pool_then_one_rerun_equals_an_uninterrupted_run(
        opened, standin, corpus, docket_ids, batch, after):
    """Killed after ``after`` items were decided: the batches written by then hold whole
    items, the rest of what was handed out is pending, and one rerun makes the store an
    uninterrupted run makes."""
    settings = {"api_base": standin.api_base, "source": "mirror", "mirror_url": str(corpus),
                "mirror_concurrency": 16}
    whole = opened("whole", **settings)
    fetch_and_backfill(whole, docket_ids[:1])
    expected, expected_blobs = dump(), blob_dump(whole.blobs)

    runtime = opened("killed", **settings)
    dockets.ensure_dockets(docket_ids[:1], "list")
    assert fetch_docket(StageContext(runtime, "fetch"), dockets.require_docket(docket_ids[0])).clean
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "DOCKETEER_TEST_KILL_AFTER": f"backfill:{after}"}
    env.update({f"DOCKETEER_{k.upper()}": str(v) for k, v in runtime.settings.values.items()
                if isinstance(v, str | int | float) and not isinstance(v, bool)})
    killed = subprocess.run([sys.executable, "-c", KILLED_RUN, docket_ids[0], str(batch)], env=env,
                            cwd=ROOT, capture_output=True, timeout=300)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]

    rows = {row.item: row.state for row in ItemState.select().where(ItemState.stage == STAGE)}
    decided = [key for key, state in rows.items() if state != "pending"]
    assert len(decided) == after // batch * batch  # whole batches only, each of whole items
    assert "pending" in rows.values()  # handed out, never recorded: the next run redoes them
    recorded = {a.item for a in Attachment.select()}
    assert recorded <= set(decided)  # no attachment row of an item the kill left pending
    file_rows = {r.item for r in ItemState.select().where(ItemState.stage == "backfill.file")}
    assert all(f"{a.item}/{a.filename}" in file_rows for a in Attachment.select())

    assert fetch_and_backfill(runtime, docket_ids[:1]).clean
    assert dump() == expected and blob_dump(runtime.blobs) == expected_blobs
    assert not ItemState.select().where(ItemState.state == "pending").exists()
