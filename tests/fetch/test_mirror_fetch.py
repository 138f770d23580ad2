"""Whole dockets from the mirror, no API key (``list_source = mirror``): the real mirror in
../shared/realdata as a folder and as a moto S3 bucket, through every stage; reruns cost
their LIST pages only; a sealed docket costs nothing; a changed record and a new attachment
cost exactly their reads."""

from __future__ import annotations

import collections
import json
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipeline import clock
from pipeline.counters import API_CALLS, S3_GET, S3_LIST, counters
from pipeline.extract.stage import read_combined
from pipeline.index.embedders import HashingEmbedder
from pipeline.index.search import search
from pipeline.runtime import set_runtime
from pipeline.sources import connect
from pipeline.sources.mirror import MIRROR_READS, MIRROR_WALKS
from pipeline.store import dockets as docket_rows
from pipeline.store.models import Attachment, Docket, Item, ItemState, MirrorObject
from tests.fixtures import s3_fixtures
from tests.fixtures.chain_runs import run_at as run_hours_ahead
from tests.fixtures.paths import REALDATA, ROOT, mirror_dockets
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database, run_invocation

DOCKETS = mirror_dockets(REALDATA / "mirror")  # every docket folder: a new one is expected at once
# No API server listens here: a single API call would fail the run.
NO_API = "http://127.0.0.1:9/v4"
# A sentence of a real attachment (ACF-2025-0038-0004's attachment_1.pdf).
SENTENCE = ("The Wisconsin Department of Children and Families (DCF) welcomes the opportunity to "
            "provide comments on the above referenced Request for Public Comment")
STAGES = ("fetch", "backfill", "extract", "index")
# Discovery runs once per fixed UTC window (``discover_seconds``, a day): the runs of a test
# start just after the next window opens, so that a test whose runs span a few hours never
# straddles two windows (a second discovery's LISTs would be counted) whatever the time of day.
_WINDOW = 86400
_TO_NEXT_WINDOW_HOURS = (_WINDOW - clock.utcnow().timestamp() % _WINDOW) / 3600


def run_at(hours: float, **params) -> bool:
    """``run_hours_ahead`` with every test's timeline in one discovery window (above)."""
    return run_hours_ahead(_TO_NEXT_WINDOW_HOURS + hours, **params)


@contextmanager
def mirror_runtime(tmp_path: Path, pg_server, mirror_url: str, monkeypatch, **settings):
    monkeypatch.delenv("REGULATIONS_GOV_API_KEY", raising=False)
    monkeypatch.delenv("DOCKETEER_API_KEY", raising=False)
    runtime = make_runtime(tmp_path, index_url=new_pg_database(pg_server), api_base=NO_API,
                           source="mirror", mirror_url=mirror_url, discover=settings.pop("discover", "mirror"),
                           extract_workers=1, ocr="false", http_attempts=1,
                           retry_base_seconds=86400, **settings)  # DOS files wait a day: reruns see no due retry
    with installed(runtime):
        yield runtime


def local_copy(realdata: Path, tmp_path: Path) -> Path:
    mirror = tmp_path / "mirror"
    shutil.copytree(realdata / "mirror", mirror)
    return mirror


def mirror_keys(mirror: Path, kind: str) -> set[str]:
    return {p.stem for p in mirror.glob(f"raw-data/*/*/text-*/{kind}/*.json")}


def assert_everything_went_through(runtime, mirror: Path) -> None:
    """Every comment and document of the mirror is an item; every item is decided by every
    stage (a state row: ok, or its reason); a real attachment's sentence is found."""
    assert {d.id for d in Docket.select()} == set(DOCKETS)
    stored = {i.key: i.kind for i in Item.select()}
    assert {k for k, kind in stored.items() if kind == "comment"} == mirror_keys(mirror, "comments")
    assert {k for k, kind in stored.items() if kind == "document"} == mirror_keys(mirror, "documents")
    for stage in STAGES[1:3]:
        rows = {r.item: r for r in ItemState.select().where(ItemState.stage == stage)}
        assert set(stored) <= set(rows) | _waiting(), stage
        assert all(r.state == "ok" or r.reason for r in rows.values()), stage
    indexed = set(indexed_items(runtime))
    assert {"USTR-2015-0010-0003", "ACF-2025-0038-0004", "USTR-2015-0010-0016"} <= indexed
    # Its record was fetched without include=attachments: the binary folder says what it has.
    assert [a.filename for a in Attachment.select().where(Attachment.item == "USTR-2015-0010-0003")] == [
        "attachment_1.pdf"]
    hits = search(runtime.index_db(), HashingEmbedder(), SENTENCE, k=3)
    assert hits[0].item_key == "ACF-2025-0038-0004" and "Wisconsin Department" in hits[0].text
    assert counters.get(API_CALLS) == 0


def indexed_items(runtime) -> dict[str, object]:
    return {key: state for docket in DOCKETS for collection in ("comments", "documents")
            for key, state in runtime.index_db().state_for_docket(collection, docket).items()}


def _waiting() -> set[str]:
    """Items whose files the mirror does not hold (the DOS docket): backfill waits to retry,
    so extract has nothing of them yet."""
    return {r.item for r in ItemState.select().where((ItemState.stage == "backfill")
                                                    & (ItemState.state == "retry"))}


def test_list_source_defaults_to_the_mirror_only_without_a_key(tmp_path):
    def chosen(**settings):
        return connect.list_source(make_runtime(tmp_path, **settings).settings)

    assert chosen(source="mirror", api_key="") == "mirror"
    assert chosen(source="mirror", api_key="k") == "api"
    assert chosen(source="api", api_key="") == "api"
    assert chosen(source="mirror", api_key="k", list_source="mirror") == "mirror"


def test_index_all_from_a_local_mirror_with_no_key(tmp_path, pg_server, realdata, monkeypatch):
    mirror = local_copy(realdata, tmp_path)
    with mirror_runtime(tmp_path, pg_server, str(mirror), monkeypatch) as runtime:
        counters.reset()
        assert run_at(1)
        assert_everything_went_through(runtime, mirror)
        assert counters.get(MIRROR_READS) > 0
        listed = {o.key for o in MirrorObject.select()}
        assert listed == {p.relative_to(mirror).as_posix() for p in mirror.rglob("*") if p.is_file()}
        # The next window: each open docket is listed again, and nothing is read.
        with counters.measure() as second:
            assert run_at(3)
        assert second.get(MIRROR_READS, 0) == 0 and second.get(API_CALLS, 0) == 0
        assert second.get(MIRROR_WALKS, 0) >= 1
        # A sealed docket: complete before anything runs, so its folder is not even walked.
        docket_rows.seal("USTR-2015-0010", "manual", clock.utcnow())
        with counters.measure() as sealed:
            assert run_at(5, docket="USTR-2015-0010")
        assert sealed.get(MIRROR_WALKS, 0) == 0 and sealed.get(MIRROR_READS, 0) == 0, sealed


def test_index_all_from_a_bucket_with_no_key(tmp_path, pg_server, realdata, monkeypatch, s3_client,
                                             s3_bucket, s3_endpoint, s3_credentials_env):
    mirror = local_copy(realdata, tmp_path)
    s3_fixtures.upload_tree(s3_client, s3_bucket, mirror)
    with mirror_runtime(tmp_path, pg_server, f"s3://{s3_bucket}", monkeypatch, s3_endpoint_url=s3_endpoint,
                        mirror_unsigned="false") as runtime:
        counters.reset()
        read = []
        monkeypatch.setattr("pipeline.sources.mirror.get_object", spy_get(read))
        assert run_at(1)
        assert_everything_went_through(runtime, mirror)
        # Each object is read once by fetch and backfill (fetch's JSON is handed to backfill
        # through the store; discovery reads the documents for the close dates first), and
        # each docket listed once by them (backfill classifies the listing fetch stored).
        twice = {key for key, n in collections.Counter(read).items() if n > 1}
        assert twice == {p.relative_to(mirror).as_posix() for p in mirror.rglob("documents/*.json")}
        assert max(collections.Counter(read).values()) == 2
        assert {key for key in read if key.endswith(".json")} == {
            p.relative_to(mirror).as_posix() for p in mirror.rglob("*.json")}
        assert not MirrorObject.select().where(MirrorObject.body.is_null(False)).exists()  # used, dropped
        with counters.measure() as second:
            assert run_at(3)
        assert second.get(S3_GET, 0) == 0, second
        assert second.get(S3_LIST, 0) >= 1
        assert second.get(API_CALLS, 0) == 0
        # A sealed docket: its target says complete before anything runs, so no LIST.
        docket_rows.seal("USTR-2015-0010", "manual", clock.utcnow())
        with counters.measure() as sealed:
            assert run_at(5, docket="USTR-2015-0010")
        assert sealed.get(S3_LIST, 0) == 0 and sealed.get(S3_GET, 0) == 0, sealed


def test_a_changed_record_and_a_new_attachment_cost_exactly_their_reads(
        tmp_path, pg_server, realdata, monkeypatch, s3_client, s3_bucket, s3_endpoint, s3_credentials_env):
    mirror = local_copy(realdata, tmp_path)
    s3_fixtures.upload_tree(s3_client, s3_bucket, mirror)
    with mirror_runtime(tmp_path, pg_server, f"s3://{s3_bucket}", monkeypatch, s3_endpoint_url=s3_endpoint,
                        mirror_unsigned="false") as runtime:
        assert run_at(1)
        before = stage_rows()
        base = "raw-data/USTR/USTR-2015-0010/"
        record_key = base + "text-USTR-2015-0010/comments/USTR-2015-0010-0005.json"
        body = json.loads((mirror / record_key).read_text())
        body["data"]["attributes"]["comment"] = "Please find attached our revised comments."
        body["data"]["attributes"]["modifyDate"] = "2015-10-02T10:00:00Z"
        s3_client.put_object(Bucket=s3_bucket, Key=record_key, Body=json.dumps(body).encode())
        file_key = base + "binary-USTR-2015-0010/comments_attachments/USTR-2015-0010-0005_attachment_1.pdf"
        s3_client.put_object(Bucket=s3_bucket, Key=file_key,
                             Body=(mirror / base / "binary-USTR-2015-0010/comments_attachments/"
                                   "USTR-2015-0010-0003_attachment_1.pdf").read_bytes())
        read = []
        monkeypatch.setattr("pipeline.sources.mirror.get_object", spy_get(read))
        with counters.measure() as io:
            assert run_at(3)
        # The record is read once: fetch hands what it read to backfill through the store;
        # and only fetch lists (one LIST per docket): backfill classifies the stored listing.
        assert sorted(read) == sorted([record_key, file_key])
        assert io.get(S3_LIST) == len(DOCKETS) and io.get(S3_GET) == 2, io
        assert MirrorObject.get_by_id(record_key).body is None  # used, then dropped
        after = stage_rows()
        moved = {key for key in after if after[key] != before.get(key)}
        assert moved == {(stage, "USTR-2015-0010-0005") for stage in STAGES}
        assert Item.get_by_id("USTR-2015-0010-0005").body == "Please find attached our revised comments."
        assert Attachment.get(Attachment.item == "USTR-2015-0010-0005").filename == "attachment_1.pdf"
        _front, text = read_combined(runtime.blobs, "USTR-2015-0010", "USTR-2015-0010-0005")
        assert "revised comments" in text and "## attachment_1.pdf" in text


def test_a_comment_the_mirror_marks_unavailable_is_recorded_gone(tmp_path, pg_server, realdata, monkeypatch):
    mirror = local_copy(realdata, tmp_path)
    comments = mirror / "raw-data/USTR/USTR-2015-0010/text-USTR-2015-0010/comments"
    (comments / "USTR-2015-0010-0099_UNAVAILABLE").write_bytes(b"")
    with mirror_runtime(tmp_path, pg_server, str(mirror), monkeypatch):
        assert run_at(1, docket="USTR-2015-0010")
        row = ItemState.get((ItemState.stage == "fetch") & (ItemState.item == "USTR-2015-0010-0099"))
        assert (row.state, row.reason) == ("gone", "marked unavailable in the mirror")


def test_objects_gone_from_the_listing_are_recorded_not_deleted(tmp_path, pg_server, realdata, monkeypatch):
    mirror = local_copy(realdata, tmp_path)
    with mirror_runtime(tmp_path, pg_server, str(mirror), monkeypatch):
        assert run_at(1)
        gone = mirror / "raw-data/USTR/USTR-2015-0010/text-USTR-2015-0010/comments/USTR-2015-0010-0002.json"
        gone.unlink()
        assert run_at(3)
        row = MirrorObject.get_by_id(gone.relative_to(mirror).as_posix())
        assert row.state == "gone" and row.reason == "no longer in the mirror listing"
        assert Item.get_or_none(Item.key == "USTR-2015-0010-0002") is not None


def stage_rows() -> dict[tuple[str, str], tuple]:
    """(stage, item) -> what the stage last did to the item (its run and its input)."""
    return {(r.stage, r.item): (r.run_id, r.fingerprint, r.content_hash)
            for r in ItemState.select().where(ItemState.stage.in_(STAGES))} | index_rows()


def index_rows() -> dict[tuple[str, str], tuple]:
    from pipeline.runtime import get_runtime

    return {("index", key): (state,) for key, state in indexed_items(get_runtime()).items()}


def spy_get(read: list[str]):
    from pipeline.sources import s3

    def get(client, bucket, key):
        read.append(key)
        return s3.get_object(client, bucket, key)

    return get


@pytest.fixture(autouse=True)
def _no_key_from_the_environment(monkeypatch):
    monkeypatch.delenv("REGULATIONS_GOV_API_KEY", raising=False)


def test_a_store_built_from_the_api_equals_one_built_from_its_mirror(tmp_path, pg_server, monkeypatch):
    from devtools.make_corpus import make_corpus
    from devtools.standin_server import StandinServer

    corpus = tmp_path / "corpus"
    manifest = make_corpus(corpus, dockets=2, comments_per_docket=10, image_only_share=0.0)
    ids = [d.id for d in manifest.dockets]
    with StandinServer(corpus, api_keys=("k",)) as server:
        api_store = build(tmp_path / "api", pg_server, ids, api_base=server.api_base, api_key="k")
    monkeypatch.delenv("REGULATIONS_GOV_API_KEY", raising=False)
    mirror_store = build(tmp_path / "mirror", pg_server, ids, api_base=NO_API, source="mirror",
                         mirror_url=str(corpus))
    tables, texts = api_store
    assert len(tables["item"]) >= 20 and len(tables["attachment"]) >= 5 and len(texts) >= 20
    assert mirror_store[0] == tables
    assert mirror_store[1] == texts


def build(root: Path, pg_server, ids: list[str], **settings) -> tuple:
    """IndexAll over ``ids`` into a fresh store; its items, attachments and combined texts."""
    import pipeline
    from tests.fixtures.backfill_runs import dump
    from tests.fixtures.state_fixtures import run_invocation

    runtime = make_runtime(root, index_url=new_pg_database(pg_server), extract_workers=1, ocr="false",
                           http_attempts=1, **settings)
    previous = set_runtime(runtime)
    try:
        assert run_invocation(pipeline.IndexAll(docket=",".join(ids)))
        tables = dump(stable=True, without=("reason",))
        texts = {(i.docket, i.key): read_combined(runtime.blobs, i.docket, i.key)
                 for i in Item.select() if _has_combined(runtime, i)}
        return tables, texts
    finally:
        set_runtime(previous)
        runtime.close()


def _has_combined(runtime, item) -> bool:
    try:
        read_combined(runtime.blobs, item.docket, item.key)
    except FileNotFoundError:
        return False
    return True


@pytest.mark.parametrize("concurrency", [1, 16])
def test_hybrid_lists_from_the_api_and_takes_from_it_only_what_the_mirror_lacks(tmp_path, pg_server, concurrency,
                                                                               monkeypatch):
    """At any concurrency: the mirror's reads on the pool, the API's in the stage's thread."""
    from devtools.standin_server import REAL_DOWNLOADS
    from tests.fixtures.chain_runs import chain, comment_with_attachment, states

    lagging = tmp_path / "lagging"
    with chain(tmp_path, pg_server, mirror=lagging, comments=8, list_source="api",
               mirror_fallback="true", mirror_concurrency=concurrency) as (runtime, server, docket, root):
        late, binary = comment_with_attachment(root, docket)
        (lagging / binary.relative_to(root)).unlink()  # the mirror has the record, not the file
        record = next(lagging.glob(f"raw-data/*/{docket}/text-{docket}/comments/{late}.json"))
        # Its fileUrl names the real download host; here, the stand-in's.
        record.write_text(record.read_text().replace(REAL_DOWNLOADS, server.downloads_base))
        unlisted = sorted(p for p in (lagging / binary.relative_to(root)).parents[2].glob("text-*/comments/*.json")
                          if p.stem != late)[0]
        unlisted.unlink()  # nor this record yet
        threads = {"mirror": set(), "api": set()}
        _spy_threads(monkeypatch, threads)
        with counters.measure() as io:
            assert run_at(1)
        assert threads["api"] == {"MainThread"}
        assert {name.startswith("read-ahead") for name in threads["mirror"]} == {concurrency > 1}
        assert {r.state for r in states("backfill", docket).values()} == {"ok"}
        assert io.get("api.comments.detail", 0) == 1  # only the record the mirror lacks
        assert io.get("api.downloads", 0) == 1 + _files_of(unlisted.stem)
        assert io.get("api.documents.detail", 0) == 0
        assert Attachment.select().where(Attachment.item == late).count() >= 1


def _spy_threads(monkeypatch, threads: dict[str, set]) -> None:
    """Which threads read the mirror's files and asked the API."""
    import threading

    from pipeline.backfill.sources import ApiSource
    from pipeline.sources.mirror import LocalMirror

    def spied(cls, name: str, kind: str) -> None:
        real = getattr(cls, name)

        def call(self, *args, **kwargs):
            threads[kind].add(threading.current_thread().name)
            return real(self, *args, **kwargs)
        monkeypatch.setattr(cls, name, call)

    spied(LocalMirror, "open_binary", "mirror")
    spied(ApiSource, "detail", "api")
    spied(ApiSource, "fetch_file", "api")


def _files_of(item_key: str) -> int:
    return Attachment.select().where(Attachment.item == item_key).count()


def test_the_luigi_command_fetches_from_the_mirror_without_a_key(tmp_path, pg_server, realdata):
    """Was: FetchComments failed with a traceback ending ``ConfigError:
    REGULATIONS_GOV_API_KEY is not set``."""
    import os
    import subprocess
    import sys

    root = ROOT
    mirror = local_copy(realdata, tmp_path)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DOCKETEER_") and k != "REGULATIONS_GOV_API_KEY"}
    env.update(PYTHONPATH=str(root), LUIGI_CONFIG_PATH=str(root / "luigi.cfg"),
               DOCKETEER_DATA_DIR=str(tmp_path / "data"), DOCKETEER_INDEX_URL=new_pg_database(pg_server),
               DOCKETEER_DISCOVER="mirror", DOCKETEER_SOURCE="mirror", DOCKETEER_MIRROR_URL=str(mirror),
               DOCKETEER_API_BASE=NO_API, DOCKETEER_EMBEDDER="hashing", DOCKETEER_OCR="false",
               DOCKETEER_EXTRACT_WORKERS="1")
    done = subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", "FetchAll", "--local-scheduler"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "REGULATIONS_GOV_API_KEY" not in done.stderr
    assert "fetch USTR-2015-0010: created=4" in done.stderr


def test_a_request_budget_stops_a_mirror_fetch_cleanly_and_the_next_run_reads_only_the_rest(
        tmp_path, pg_server, realdata, monkeypatch, caplog):
    from pipeline.sources.mirror import LocalMirror
    from pipeline.store.models import DocketStage
    from pipeline.tasks import FetchAll

    mirror = local_copy(realdata, tmp_path)
    docket = "USTR-2015-0010"
    records = {p.relative_to(mirror).as_posix() for p in (mirror / "raw-data/USTR" / docket).rglob("text-*/*/*.json")}
    read = []
    real = LocalMirror._read_bytes
    monkeypatch.setattr(LocalMirror, "_read_bytes", lambda self, key: read.append(key) or real(self, key))
    with mirror_runtime(tmp_path, pg_server, str(mirror), monkeypatch, discover="none") as runtime:
        runtime.state  # noqa: B018 - open the state DB
        docket_rows.ensure_dockets([docket], "list")
        with counters.measure() as first:
            assert run_invocation(FetchAll(docket=docket, request_budget=6))  # no task failed: partial
        # 6 requests: the folder walk and 5 records; the walk stopped before the 7th.
        assert first.get(MIRROR_WALKS) == 1 and len(read) == 5
        assert not DocketStage.select().where((DocketStage.docket == docket) & (DocketStage.stage == "fetch")).exists()
        # One line from the stage; its task, and the wrapper with it, wait on the next run
        # (Luigi's summary ends with the docket's line, see tests/engine/test_luigid.py).
        lines = [r.getMessage() for r in caplog.records if "budget spent" in r.getMessage()]
        assert len(lines) == 1 and "request budget spent (6 requests)" in lines[0] and "\n" not in lines[0]
        assert f"fetch {docket}: " in lines[0] and "partial: budget spent, continues next run" in lines[0]
        assert MirrorObject.select().where(MirrorObject.key.in_(read)).count() == 5  # what it read is kept
        created_first = Item.select().where(Item.docket == docket).count()
        assert run_invocation(FetchAll(docket=docket))
        # Every record read exactly once over the two runs, every item there, the marker written.
        assert sorted(read) == sorted(records)
        assert Item.select().where(Item.docket == docket).count() == len(records) - 1  # all but the docket's own
        assert created_first > 0
        assert DocketStage.select().where((DocketStage.docket == docket) & (DocketStage.stage == "fetch")).exists()


def test_a_spent_time_budget_stops_a_mirror_fetch_before_its_listing(tmp_path, pg_server, realdata, monkeypatch):
    import time

    from pipeline.engine.stage import StageContext
    from pipeline.fetch.mirror import fetch_from_mirror

    mirror = local_copy(realdata, tmp_path)
    with mirror_runtime(tmp_path, pg_server, str(mirror), monkeypatch, discover="none") as runtime:
        runtime.state  # noqa: B018 - open the state DB
        docket_rows.ensure_dockets(["USTR-2015-0010"], "list")
        with counters.measure() as io:
            result = fetch_from_mirror(StageContext(runtime, "run", deadline=time.monotonic() - 1),
                                       docket_rows.require_docket("USTR-2015-0010"))
        assert result.budget_spent and not result.complete and result.message == "time budget spent"
        assert io.get(MIRROR_WALKS, 0) == 0 and io.get(MIRROR_READS, 0) == 0
        assert not MirrorObject.select().exists() and not Item.select().exists()


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_newer_copy_of_a_record_updates_its_item_once(tmp_path, pg_server, realdata, monkeypatch, where,
                                                        request):
    """The collector writes a re-downloaded record as ``<id>(1).json`` beside ``<id>.json``:
    the next fetch reads the copy alone, updates the item and sends it back to backfill;
    the run after finds nothing to do."""
    mirror = local_copy(realdata, tmp_path)
    settings = {}
    if where == "s3":
        client, bucket = request.getfixturevalue("s3_client"), request.getfixturevalue("s3_bucket")
        settings = {"s3_endpoint_url": request.getfixturevalue("s3_endpoint"), "mirror_unsigned": "false"}
        request.getfixturevalue("s3_credentials_env")
        s3_fixtures.upload_tree(client, bucket, mirror)
    url = f"s3://{bucket}" if where == "s3" else mirror.as_uri()
    with mirror_runtime(tmp_path, pg_server, url, monkeypatch, **settings):
        assert run_at(1)
        before = stage_rows()
        folder = "raw-data/USTR/USTR-2015-0010/text-USTR-2015-0010/comments/"
        body = json.loads((mirror / folder / "USTR-2015-0010-0005.json").read_text())
        body["data"]["attributes"]["title"] = "Comment from the re-downloaded copy"
        copy_key = folder + "USTR-2015-0010-0005(1).json"
        if where == "s3":
            client.put_object(Bucket=bucket, Key=copy_key, Body=json.dumps(body).encode())
        else:
            (mirror / copy_key).write_text(json.dumps(body))
        with counters.measure() as io:
            assert run_at(3)
        assert io.get("mirror_copies_superseded") == 1  # the first copy, passed over
        assert (io.get(S3_GET) if where == "s3" else io.get(MIRROR_READS)) == 1, io
        assert Item.get_by_id("USTR-2015-0010-0005").title == "Comment from the re-downloaded copy"
        assert MirrorObject.get_by_id(copy_key).body is None  # read, handed to backfill, dropped
        after = stage_rows()
        moved = {key for key in after if after[key] != before.get(key)}
        # the changed title reaches every stage that reads it in this same run
        assert {stage for stage, item in moved} >= {"fetch", "backfill", "extract", "index"}, moved
        assert {item for _stage, item in moved} == {"USTR-2015-0010-0005"}
        with counters.measure() as rerun:
            assert run_at(5)
        assert rerun.get(S3_GET, 0) == 0 and rerun.get(MIRROR_READS, 0) == 0, rerun
        assert rerun.get("mirror_copies_superseded") == 1
        assert stage_rows() == after  # nothing is redone
