"""The backfill stage against real parts: the stand-in API, a moto S3 server, local folders.

Every assertion is about work done (requests in the stand-in's log, pipeline.counters,
rows, blob listings), never about time.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

import pipeline.backfill.stage as backfill_stage
from devtools import standin_server
from devtools.make_corpus import Manifest, make_corpus
from devtools.standin_server import StandinServer
from pipeline import clock
from pipeline import tasks as task_module
from pipeline.backfill.stage import FILE_STAGE, STAGE, backfill_docket
from pipeline.counters import (
    API_CALLS,
    BLOB_WRITES,
    ROWS_WRITTEN,
    S3_GET,
    S3_LIST,
    STAGE_CALLS,
    counters,
)
from pipeline.engine.stage import StageContext, StageResult
from pipeline.runtime import set_runtime
from pipeline.sources.regulations_gov import RegulationsGovClient
from pipeline.store import dockets
from pipeline.store.models import Attachment, Item, ItemState
from tests.fixtures import s3_fixtures
from tests.fixtures.backfill_runs import KEY, Runtimes, dump, fetch
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import run_invocation

# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    make_corpus(root, dockets=2, comments_per_docket=10)
    return root


@pytest.fixture(scope="module")
def manifest(corpus) -> Manifest:
    return Manifest.load(corpus)


@pytest.fixture(autouse=True)
def _no_nagle(monkeypatch):
    # The stand-in writes headers and body separately; with Nagle on, each answer waits
    # ~40 ms for a delayed ACK. Until standin_server sets this itself, the tests do.
    monkeypatch.setattr(standin_server._Handler, "disable_nagle_algorithm", True)


@pytest.fixture
def standin(corpus):
    with StandinServer(corpus) as server:
        yield server


@pytest.fixture(params=["sqlite", "postgres"])
def state_url(request) -> str:
    """The state DB both ways, as the shared ``state`` fixture does."""
    return request.getfixturevalue("pg_url") if request.param == "postgres" else ""


@pytest.fixture
def runtimes(tmp_path):
    opened = Runtimes(tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def pg_or_sqlite_runtimes(tmp_path, state_url):
    opened = Runtimes(tmp_path, state_url)
    yield opened
    opened.close()


# --------------------------------------------------------------------------- helpers


def use(runtime) -> None:
    set_runtime(runtime)


def docket_ids(manifest: Manifest) -> list[str]:
    return [d.id for d in manifest.dockets]


def backfill(runtime, ids: list[str], run_id: str = "run", **kwargs) -> StageResult:
    total = StageResult()
    for docket_id in ids:
        result = backfill_docket(StageContext(runtime, run_id), dockets.require_docket(docket_id), **kwargs)
        for name, n in result.counts.items():
            total.add(name, n)
        total.clean &= result.clean
        total.budget_spent |= result.budget_spent
        total.message = total.message or result.message
    return total


def assert_blobs_whole(blobs) -> list[str]:
    """Every listed blob is complete: its bytes hash to its key. Returns the keys."""
    keys = list(blobs.list("attachments/"))
    for key in keys:
        assert hashlib.sha256(blobs.get(key)).hexdigest() == key.rsplit("/", 1)[-1], key
    assert not [k for k in blobs.list() if k.startswith("tmp/")]
    return keys


def stored_files(manifest: Manifest) -> dict[tuple[str, str], str]:
    """(item, filename) -> sha256 for every file the corpus really holds."""
    files = {(a.comment_id, a.file): a.sha256 for a in manifest.attachments() if a.expected_status != "gone"}
    for docket in manifest.dockets:
        for document in docket.documents:
            content = Path(document.content_path).name.split("_", 1)[1]  # <id>_content.pdf
            files[(document.id, content)] = _sha_of(manifest, document.content_path)
    return files


def _sha_of(manifest: Manifest, relative: str) -> str:
    return hashlib.sha256((manifest.root / relative).read_bytes()).hexdigest()


def attachment_map() -> dict[tuple[str, str], str]:
    return {(a.item, a.filename): a.sha256 for a in Attachment.select()}


@pytest.fixture(autouse=True)
def _manifest_root(corpus, manifest):
    manifest.root = corpus  # where the manifest's relative paths point


# --------------------------------------------------------------------------- API vs mirror


@pytest.mark.usefixtures("s3_credentials_env")
def test_api_and_s3_mirror_store_the_same_blobs_and_rows(
    runtimes, standin, corpus, manifest, s3_client, s3_endpoint, s3_bucket
):
    ids = docket_ids(manifest)
    s3_fixtures.upload_tree(s3_client, s3_bucket, corpus / "raw-data", "raw-data/")
    blob_bucket = f"{s3_bucket}-blobs"
    s3_client.create_bucket(Bucket=blob_bucket)

    api = runtimes.open("api", api_base=standin.api_base)
    fetch(api, ids)
    api_result = backfill(api, ids)
    # The sources word their reasons differently (HTTP 404 / a mirror tombstone).
    api_dump, api_blobs = dump(stable=True, without=("reason",)), assert_blobs_whole(api.blobs)

    mirror = runtimes.open("mirror", api_base=standin.api_base, source="mirror",
                           mirror_url=f"s3://{s3_bucket}", mirror_unsigned="false",
                           s3_endpoint_url=s3_endpoint, blob_url=f"s3://{blob_bucket}/store")
    fetch(mirror, ids)
    with counters.measure() as io:
        mirror_result = backfill(mirror, ids)
    assert io.get(S3_LIST, 0) >= len(ids) and io.get(S3_GET, 0) > 0  # it really read S3
    assert io.get("api.comments.detail", 0) == 0 and io.get("api.downloads", 0) == 0
    mirror_dump, mirror_blobs = dump(stable=True, without=("reason",)), assert_blobs_whole(mirror.blobs)

    assert api_result.clean and mirror_result.clean
    assert mirror_blobs == api_blobs
    assert mirror_dump == api_dump
    assert {k: sha for k, sha in attachment_map().items() if sha} == stored_files(manifest)
    assert api_result.counts["files_gone"] == mirror_result.counts["files_gone"] == 1  # the tombstone
    # The gone file keeps its row from the record, without bytes (the same from either source).
    assert len([k for k, sha in attachment_map().items() if sha is None]) == 1


@pytest.mark.usefixtures("s3_credentials_env")
def test_s3_mirror_rerun_lists_and_gets_nothing_open_or_sealed(
    runtimes, standin, corpus, manifest, s3_client, s3_endpoint, s3_bucket
):
    ids = docket_ids(manifest)
    s3_fixtures.upload_tree(s3_client, s3_bucket, corpus / "raw-data", "raw-data/")
    runtime = runtimes.open("mirror", api_base=standin.api_base, source="mirror",
                            mirror_url=f"s3://{s3_bucket}", mirror_unsigned="false",
                            s3_endpoint_url=s3_endpoint)
    fetch(runtime, ids)
    backfill(runtime, ids)
    before = dump()
    for docket_id in ids[:1]:
        dockets.seal(docket_id, "manual")
    with counters.measure() as io:
        result = backfill(runtime, ids, run_id="rerun")
    assert result.counts == {} and result.clean
    assert io == {}  # no LIST, no GET, no row, no blob
    assert dump() == before


# --------------------------------------------------------------------------- reruns


def test_rerun_downloads_nothing_writes_nothing(pg_or_sqlite_runtimes, standin, manifest):
    ids = docket_ids(manifest)
    runtime = pg_or_sqlite_runtimes.open("api", api_base=standin.api_base)
    fetch(runtime, ids)
    first = backfill(runtime, ids)
    assert first.clean and first.counts["files_stored"] > 0
    before = dump()
    standin.reset_log()
    with counters.measure() as io:
        again = backfill(runtime, ids, run_id="rerun")
    assert again.counts == {}
    assert io.get(API_CALLS, 0) == 0 and io.get(ROWS_WRITTEN, 0) == 0 and io.get(BLOB_WRITES, 0) == 0
    assert standin.request_log == []
    assert dump() == before  # byte-identical, timestamps and run ids included
    dockets.seal(ids[0], "manual")
    with counters.measure() as io:
        backfill(runtime, ids, run_id="sealed")
    assert io == {} and dump() == before


def test_backfill_all_through_luigi_is_pruned_on_rerun(runtimes, standin, manifest):
    ids = docket_ids(manifest)
    runtimes.open("luigi", api_base=standin.api_base)
    assert run_invocation(task_module.BackfillAll(docket=",".join(ids)))
    assert Attachment.select().where(Attachment.sha256.is_null(False)).count() == len(stored_files(manifest))
    before = dump()
    standin.reset_log()
    with counters.measure() as io:
        assert run_invocation(task_module.BackfillAll(docket=",".join(ids)))
    assert io.get(STAGE_CALLS, 0) == 0 and io.get(ROWS_WRITTEN, 0) == 0
    assert standin.request_log == [] and dump() == before


# --------------------------------------------------------------------------- dedupe, documents


def test_same_file_on_two_comments_is_stored_once(runtimes, standin, manifest):
    duplicates = [a for a in manifest.attachments() if a.duplicate_of]
    assert duplicates, "the corpus must hold an identical-bytes duplicate"
    copy = duplicates[0]
    source_item, source_file = copy.duplicate_of.split("/")
    runtime = runtimes.open("api", api_base=standin.api_base)
    ids = docket_ids(manifest)
    fetch(runtime, ids)
    with counters.measure() as io:
        result = backfill(runtime, ids)
    rows = {(a.item, a.filename): a for a in Attachment.select().where(Attachment.sha256.is_null(False))}
    assert rows[(copy.comment_id, copy.file)].sha256 == rows[(source_item, source_file)].sha256 == copy.sha256
    distinct = {a.sha256 for a in rows.values()}
    assert io[BLOB_WRITES] == len(distinct) < len(rows)  # written once per distinct content
    assert result.counts["files_deduplicated"] == len(rows) - len(distinct)
    assert sum(1 for k in runtime.blobs.list("attachments/") if k.endswith(copy.sha256)) == 1


def test_documents_are_backfilled_with_their_content_file(runtimes, standin, manifest):
    runtime = runtimes.open("api", api_base=standin.api_base)
    ids = docket_ids(manifest)
    fetch(runtime, ids)
    backfill(runtime, ids)
    for docket in manifest.dockets:
        document = docket.documents[0]
        row = Attachment.get((Attachment.item == document.id) & (Attachment.filename == "content.pdf"))
        assert row.sha256 == _sha_of(manifest, document.content_path)
        assert runtime.blobs.get(runtime.blobs.attachment_key(row.sha256))[:5] == b"%PDF-"
        state = ItemState.get((ItemState.stage == STAGE) & (ItemState.item == document.id))
        assert state.state == "ok" and Item.get(Item.key == document.id).kind == "document"


# --------------------------------------------------------------------------- faults


class HookedClient(RegulationsGovClient):
    """The real client with a hook before each download (to flip a stand-in fault switch)."""

    def __init__(self, *args, before_download=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.before_download = before_download

    def download(self, url, fileobj, *, max_bytes):
        if self.before_download:
            self.before_download(url)
        return super().download(url, fileobj, max_bytes=max_bytes)


def _client(standin, **kwargs) -> HookedClient:
    return HookedClient(standin.api_base, KEY, sleep=lambda _s: None, **kwargs)


def test_truncated_download_is_retried_and_never_stored_truncated(runtimes, standin, manifest):
    runtime = runtimes.open("api", api_base=standin.api_base)
    ids = docket_ids(manifest)
    fetch(runtime, ids)
    truncated = []

    def truncate_first(url: str) -> None:
        if not truncated:
            truncated.append(url)
            standin.truncate_next = 1

    result = backfill(runtime, ids, api=_client(standin, before_download=truncate_first))
    assert result.clean
    path = "/" + truncated[0].split("/", 3)[3]
    assert sum(1 for _, p, _ in standin.request_log if p == path) == 2  # cut off, then retried
    assert {k: sha for k, sha in attachment_map().items() if sha} == stored_files(manifest)
    for row in Attachment.select().where(Attachment.sha256.is_null(False)):
        assert row.size == row.declared_size
    assert_blobs_whole(runtime.blobs)


def test_download_truncated_every_time_waits_to_retry_and_is_fetched_when_due(runtimes, standin, manifest):
    runtime = runtimes.open("api", api_base=standin.api_base)
    ids = docket_ids(manifest)[:1]
    fetch(runtime, ids)
    victim = []

    def always_truncate(url: str) -> None:
        if not victim:
            victim.append(url)
        if url == victim[0]:
            standin.truncate_next = 3  # every attempt the client makes at this one file

    result = backfill(runtime, ids, api=_client(standin, before_download=always_truncate, max_attempts=3))
    item, filename = victim[0].split("/")[-2:]
    # Transient: the item waits to retry; the run itself is clean (the rest flows on).
    assert result.clean and result.counts["retry"] == 1
    row = ItemState.get((ItemState.stage == STAGE) & (ItemState.item == item))
    assert (row.state, row.attempts, row.detail) == ("retry", 1, "transient") and row.next_attempt_at
    declared = Attachment.get((Attachment.item == item) & (Attachment.filename == filename))
    assert declared.sha256 is None and declared.declared_size  # its row from the record, no bytes yet
    assert ItemState.get((ItemState.stage == FILE_STAGE) & (ItemState.item == f"{item}/{filename}")).state == "failed"
    assert_blobs_whole(runtime.blobs)
    standin.request_log.clear()
    early = backfill(runtime, ids, run_id="early")  # not due yet: no request at all
    assert early.counts == {} and standin.request_log == []
    with clock.shifted(timedelta(hours=2)):  # the first wait is one hour
        again = backfill(runtime, ids, run_id="next")  # the fault is over
    assert again.clean and again.counts.get("ok") == 1
    assert ItemState.get((ItemState.stage == STAGE) & (ItemState.item == item)).attempts is None
    assert {k: sha for k, sha in attachment_map().items() if sha} == {k: v for k, v in stored_files(manifest).items() if k[0].startswith(ids[0])}


def test_too_large_is_permanent_and_costs_no_download(runtimes, standin, manifest):
    limit = 5000
    runtime = runtimes.open("api", api_base=standin.api_base, max_attachment_bytes=limit)
    ids = docket_ids(manifest)
    fetch(runtime, ids)
    backfill(runtime, ids)
    big = {k for k, a in _manifest_sizes(manifest).items() if a > limit}
    assert big
    states = {r.item: r.state for r in ItemState.select().where(ItemState.stage == FILE_STAGE)}
    assert {f"{i}/{f}" for i, f in big} == {k for k, s in states.items() if s == "too_large"}
    downloaded = {p for _, p, _ in standin.request_log if p.startswith("/downloads/")}
    assert not {f"/downloads/{i}/{f}" for i, f in big} & downloaded  # refused on the declared size
    assert not any(a.size > limit for a in Attachment.select().where(Attachment.sha256.is_null(False)))
    refused = {(a.item, a.filename) for a in Attachment.select().where(Attachment.sha256.is_null())}
    assert big <= refused  # each refused file keeps its row from the record
    standin.reset_log()
    with counters.measure() as io:
        backfill(runtime, ids, run_id="again")
    assert standin.request_log == [] and io.get(ROWS_WRITTEN, 0) == 0  # not retried


def _manifest_sizes(manifest: Manifest) -> dict[tuple[str, str], int]:
    sizes = {(a.comment_id, a.file): a.size for a in manifest.attachments() if a.expected_status != "gone"}
    for docket in manifest.dockets:
        for document in docket.documents:
            sizes[(document.id, "content.pdf")] = (manifest.root / document.content_path).stat().st_size
    return sizes


def test_404_detail_is_gone_and_not_retried(runtimes, standin, manifest):
    runtime = runtimes.open("api", api_base=standin.api_base)
    ids = docket_ids(manifest)
    fetch(runtime, ids)
    vanished = next(c.id for c in manifest.comments if c.attachments)
    standin.gone = {vanished}
    backfill(runtime, ids)
    state = ItemState.get((ItemState.stage == STAGE) & (ItemState.item == vanished))
    assert state.state == "gone" and "404" in state.reason
    assert not Attachment.select().where(Attachment.item == vanished).exists()
    standin.reset_log()
    backfill(runtime, ids, run_id="again")
    assert standin.request_log == []


def test_mirror_tombstones_are_gone(runtimes, standin, corpus, manifest, tmp_path):
    mirror_root = tmp_path / "mirror"
    shutil.copytree(corpus / "raw-data", mirror_root / "raw-data")
    tombstoned_file = next(a for a in manifest.attachments() if a.expected_status == "gone")
    comment = next(c for c in manifest.comments if c.attachments and c.id != tombstoned_file.comment_id)
    json_path = mirror_root / comment.path
    json_path.unlink()
    json_path.with_name(f"{comment.id}_UNAVAILABLE").write_bytes(b"")
    runtime = runtimes.open("mirror", api_base=standin.api_base, source="mirror", mirror_url=str(mirror_root))
    ids = docket_ids(manifest)
    fetch(runtime, ids)
    result = backfill(runtime, ids)
    assert result.clean
    states = {(r.stage, r.item): r.state for r in ItemState.select()}
    assert states[(STAGE, comment.id)] == "gone"
    assert states[(FILE_STAGE, f"{tombstoned_file.comment_id}/{tombstoned_file.file}")] == "gone"
    assert not Attachment.select().where(Attachment.item == comment.id).exists()
    with counters.measure() as io:
        backfill(runtime, ids, run_id="again")
    assert io == {}  # gone is permanent: nothing read again


# --------------------------------------------------------------------------- budget


def test_request_budget_stops_cleanly_and_the_next_run_continues(runtimes, standin, manifest):
    ids = docket_ids(manifest)[:1]
    whole = runtimes.open("whole", api_base=standin.api_base)
    fetch(whole, ids)
    assert backfill(whole, ids).clean
    expected = dump(stable=True)

    runtime = runtimes.open("budget", api_base=standin.api_base, request_budget=7)
    fetch(runtime, ids)
    runs = []
    while True:
        result = backfill(runtime, ids, run_id=f"run{len(runs)}")
        runs.append(result)
        assert result.clean  # stopping at the budget is not an error
        if len(runs) == 1:
            assert result.budget_spent
            # Fetch may seal the docket meanwhile: what is left must still be done.
            dockets.seal(ids[0], "manual")
        if not result.budget_spent:
            break
        assert len(runs) < 20
    assert len(runs) > 2
    assert sum(r.counts.get("api.comments.detail", 0) for r in runs) <= len(
        [c for c in manifest.comments if c.docket_id == ids[0]]) + len(runs)
    assert dump(stable=True) == expected


# --------------------------------------------------------------------------- kill


KILLED_RUN = """
import sys
from pipeline.runtime import get_runtime
from pipeline.backfill.stage import backfill_docket
from pipeline.engine.stage import StageContext
from pipeline.store import dockets
rt = get_runtime()
for docket_id in sys.argv[1:]:
    backfill_docket(StageContext(rt, "killed"), dockets.require_docket(docket_id))
"""


def test_sigkill_during_a_download_then_rerun_equals_an_uninterrupted_run(runtimes, standin, manifest, tmp_path):
    ids = docket_ids(manifest)[:1]
    whole = runtimes.open("whole", api_base=standin.api_base)
    fetch(whole, ids)
    backfill(whole, ids)
    expected = dump(stable=True)

    runtime = runtimes.open("killed", api_base=standin.api_base)
    fetch(runtime, ids)
    standin.reset_log()
    standin.slow_seconds = 0.2  # every answer waits: the kill lands while a transfer is open
    process = _start_backfill_process(runtime, ids)
    try:
        _wait_for_downloads(standin, process, at_least=3)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    standin.slow_seconds = 0
    assert process.returncode == -signal.SIGKILL
    assert ItemState.select().where((ItemState.stage == STAGE) & (ItemState.state == "pending")).exists()
    assert_blobs_whole(runtime.blobs)  # only complete, sha-verified objects

    result = backfill(runtime, ids, run_id="after-kill")
    assert result.clean
    assert_blobs_whole(runtime.blobs)
    after = dump(stable=True)
    assert len({(a["item"], a["filename"]) for a in after["attachment"]}) == len(after["attachment"])
    assert after == expected


def _start_backfill_process(runtime, ids: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.update({f"DOCKETEER_{k.upper()}": str(v) for k, v in runtime.settings.values.items()
                if isinstance(v, str | int | float) and not isinstance(v, bool)})
    return subprocess.Popen([sys.executable, "-c", KILLED_RUN, *ids], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for_downloads(standin, process, at_least: int) -> None:
    """Until a download request is the latest one in flight (the server sleeps before answering)."""
    for _ in range(2000):
        log = list(standin.request_log)
        if standin.calls("/downloads/") >= at_least and log[-1][1].startswith("/downloads/"):
            return
        if process.poll() is not None:
            pytest.fail(f"the backfill process ended early: {process.stderr.read().decode()[-2000:]}")
        time.sleep(0.01)
    pytest.fail("the backfill process never reached its downloads")


# --------------------------------------------------------------------------- real data


def test_real_docket_backfills_from_the_local_mirror(runtimes, realdata):
    mirror_root = realdata / "mirror"
    docket_id = "ACF-2025-0038"
    binaries = mirror_root / "raw-data/ACF" / docket_id / f"binary-{docket_id}"
    pdf = (binaries / "comments_attachments/ACF-2025-0038-0004_attachment_1.pdf").read_bytes()
    content = (binaries / "documents_attachments/ACF-2025-0038-0001_content.pdf").read_bytes()
    with StandinServer(mirror_root) as server:
        runtime = runtimes.open("real", api_base=server.api_base, source="mirror", mirror_url=str(mirror_root))
        fetch(runtime, [docket_id])
        result = backfill(runtime, [docket_id])
    assert result.clean and result.counts["ok"] == 2
    rows = {(a.item, a.filename): a for a in Attachment.select()}
    assert set(rows) == {("ACF-2025-0038-0004", "attachment_1.pdf"), ("ACF-2025-0038-0001", "content.pdf")}
    attachment, document = rows[("ACF-2025-0038-0004", "attachment_1.pdf")], rows[("ACF-2025-0038-0001", "content.pdf")]
    assert len(pdf) == 133365
    assert (attachment.sha256, attachment.size) == (hashlib.sha256(pdf).hexdigest(), len(pdf))
    assert (document.sha256, document.size) == (hashlib.sha256(content).hexdigest(), len(content))
    assert runtime.blobs.get(runtime.blobs.attachment_key(attachment.sha256)) == pdf
    comment = Item.get(Item.key == "ACF-2025-0038-0004")
    raw = json.loads((mirror_root / "raw-data/ACF" / docket_id / f"text-{docket_id}/comments/ACF-2025-0038-0004.json").read_text())
    assert comment.body == raw["data"]["attributes"]["comment"]
    assert comment.received_date == raw["data"]["attributes"]["receiveDate"]
    assert comment.comment_on_document_id == "ACF-2025-0038-0001"
    assert Item.get(Item.key == "ACF-2025-0038-0001").kind == "document"
    assert_blobs_whole(runtime.blobs)


def test_attachment_titles_are_stored_and_a_reread_record_fills_them_without_a_download(runtimes, realdata):
    mirror_root = realdata / "mirror"
    docket_id, comment = "ACF-2025-0038", "ACF-2025-0038-0004"
    title = "2025-13790 WI Department of Children  Families Comment"
    with StandinServer(mirror_root) as server:
        runtime = runtimes.open("titles", api_base=server.api_base, source="mirror", mirror_url=str(mirror_root))
        fetch(runtime, [docket_id])
        backfill(runtime, [docket_id])
        assert Attachment.get(Attachment.item == comment).title == title
        # A store from before titles were kept, whose comment's summary then changed upstream.
        Attachment.update(title=None).execute()
        Item.update(detail_summary_hash="older").where(Item.key == comment).execute()
        again = backfill(runtime, [docket_id], run_id="again")
    assert again.counts.get("files_unchanged") == 1 and "files_stored" not in again.counts
    assert Attachment.get(Attachment.item == comment).title == title


class _Killed(BaseException):
    """Stands for SIGKILL inside one process: no ``except Exception`` catches it."""


def test_a_kill_between_an_attachment_row_and_its_file_state_leaves_neither(
        runtimes, standin, manifest, monkeypatch):
    ids = docket_ids(manifest)[:1]
    whole = runtimes.open("whole", api_base=standin.api_base)
    fetch(whole, ids)
    backfill(whole, ids)
    expected = dump(stable=True)

    runtime = runtimes.open("killed", api_base=standin.api_base)
    fetch(runtime, ids)
    real_transition = backfill_stage.item_states.transition_many

    def killed_at_the_file_state(rows):
        # the item's attachment rows are written by now, in the same transaction
        rows = list(rows)
        if any(row["stage"] == backfill_stage.FILE_STAGE and row.get("content_hash") for row in rows):
            assert Attachment.select().count() > 0
            raise _Killed
        return real_transition(rows)

    monkeypatch.setattr(backfill_stage.item_states, "transition_many", killed_at_the_file_state)
    with pytest.raises(_Killed):
        backfill(runtime, ids, run_id="killed")
    monkeypatch.setattr(backfill_stage.item_states, "transition_many", real_transition)
    file_rows = {r.item for r in ItemState.select().where(ItemState.stage == backfill_stage.FILE_STAGE)}
    assert all(f"{a.item}/{a.filename}" in file_rows for a in Attachment.select())

    assert backfill(runtime, ids, run_id="after-kill").clean
    assert dump(stable=True) == expected


def test_a_forced_backfill_holds_a_page_of_items_at_a_time(runtimes, standin, manifest, monkeypatch):
    """Items and their attachment rows are read a page at a time (keyset pages of the item
    table): every item is done, and no pass held more than a page (noted by the stage)."""
    from pipeline.backfill import stage

    ids = docket_ids(manifest)[:1]
    runtime = runtimes.open("api", api_base=standin.api_base)
    fetch(runtime, ids)
    monkeypatch.setattr(stage, "TODO_PAGE", 3)
    with counters.peaks() as held:
        first = backfill(runtime, ids)
    assert first.clean and held[stage.BACKFILL_HELD] == 3
    assert stage.unfinished(ids[0], "2999-01-01T00:00:00Z") == 0
    standin.reset_log()
    with counters.peaks() as held:
        forced = backfill_docket(StageContext(runtime, "forced", force=True), dockets.require_docket(ids[0]))
    assert forced.clean and held[stage.BACKFILL_HELD] == 3
    asked = {path for _, path, _ in standin.request_log if path.startswith("/v4/comments/")}
    every = Item.select().where((Item.docket == ids[0]) & (Item.kind == "comment")).count()
    assert len(asked) == every > 3  # every comment's detail again, across several pages
