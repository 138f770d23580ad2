"""A seal never hides unfinished work; every failure is classified, retried or stops the run.

Each test runs the real chain (`IndexAll`, in process, with the pipeline's clock moved
forward instead of sleeping) against the stand-in regulations.gov on loopback, a real
SQLite state DB and a database on the session's embedded PostgreSQL.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.counters import API_CALLS, STAGE_CALLS, counters
from pipeline.ops import verify
from pipeline.store import dockets as docket_rows
from pipeline.store.models import Attachment, DocketStage, Item, ItemState, Run
from tests.fixtures.chain_runs import (
    KEY,
    _env_of,
    assert_all_indexed,
    chain,
    comment_keys,
    comment_with_attachment,
    indexed,
    run_at,
    states,
)
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import real_mirror_runtime, run_invocation


def chunk_sections(runtime, key: str) -> list[str]:
    """The sections an item's chunks come from (``Title`` for an item indexed by its title)."""
    rows = (json.loads(line) for line in runtime.index_db().dump_chunks().splitlines())
    return [row[6] for row in rows if row[1] == key]


def verify_passes(runtime) -> None:
    report = verify.run_checks(runtime)
    assert report.passed, "\n".join(report.lines())


# --------------------------------------------------------------------------- seal and budget


def test_budget_stopped_closed_docket_finishes_every_stage_under_its_seal(tmp_path, pg_server):
    with chain(tmp_path, pg_server, request_budget=12) as (runtime, _server, docket, _root):
        for hour in range(1, 25):  # one cron run an hour: each a new freshness window
            assert run_at(hour)
            if docket_rows.get_docket(docket).sealed_at and len(indexed(runtime, docket)) >= len(comment_keys(docket)) \
                    and _grouped_under_the_seal(docket):
                break
        sealed = docket_rows.get_docket(docket)
        assert sealed.sealed_at, "the closed, quiet docket sealed"
        # The case that used to end 33 of 100: the seal came while backfill was far from done.
        at_seal = json.loads(sealed.counts_at_seal)
        assert sum(at_seal.get("backfill", {}).values()) < len(comment_keys(docket)), at_seal
        assert Run.select().where(Run.budget_spent == True).count() >= 2  # noqa: E712
        for stage in ("backfill", "extract"):
            assert set(states(stage, docket)) >= comment_keys(docket), stage
        assert_all_indexed(runtime, docket)
        verify_passes(runtime)
        with counters.measure() as io:  # and from now on the sealed docket costs nothing
            assert run_at(hour + 1)
        assert io.get(STAGE_CALLS, 0) == 0 and io.get(API_CALLS, 0) == 0


def test_two_invocations_started_together_finish_the_sealed_docket(tmp_path, pg_server):
    with chain(tmp_path, pg_server, request_budget=12, freshness_seconds=1) as (runtime, server, docket, _root):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LUIGI_CONFIG_PATH": str(ROOT / "luigi.cfg"),
               **_env_of(runtime, server, docket)}
        command = [sys.executable, "-m", "luigi", "--module", "pipeline", "IndexAll",
                   "--local-scheduler", "--workers", "2", "--log-level", "WARNING"]
        for _round in range(30):
            pair = [subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True) for _ in range(2)]
            for process in pair:  # one may find a lease held: it says so and steps aside
                _, err = process.communicate(timeout=180)
                assert "Traceback" not in err, err[-2000:]
            if docket_rows.get_docket(docket).sealed_at and len(indexed(runtime, docket)) >= len(comment_keys(docket)) \
                    and _grouped_under_the_seal(docket):
                break
            time.sleep(1.05)  # the next freshness window (1 s)
        assert docket_rows.get_docket(docket).sealed_at
        assert_all_indexed(runtime, docket)
        verify_passes(runtime)
        runs = Run.select().count()
        done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr[-2000:]
        assert Run.select().count() == runs  # nothing ran: every stage pruned by its target


def _grouped_under_the_seal(docket: str) -> bool:
    """IndexAll's last stage, campaigns, recorded done under the docket's seal."""
    marker = DocketStage.get_or_none((DocketStage.docket == docket) & (DocketStage.stage == "campaigns"))
    return marker is not None and marker.sealed_at == docket_rows.get_docket(docket).sealed_at


# --------------------------------------------------------------------------- mirror lag


def test_mirror_lag_waits_then_the_file_is_fetched_extracted_and_indexed(tmp_path, pg_server):
    lagging = tmp_path / "lagging"
    with chain(tmp_path, pg_server, mirror=lagging) as (runtime, _server, docket, root):
        late, binary = comment_with_attachment(root, docket)
        held = lagging / binary.relative_to(root)
        held.unlink()  # the mirror has the JSON, not the file yet
        assert run_at(1)
        row = states("backfill", docket)[late]
        assert (row.state, row.attempts) == ("retry", 1) and "not in the mirror yet" in row.reason
        assert_all_indexed(runtime, docket)  # the rest flowed through, and its record too
        waiting_sections = chunk_sections(runtime, late)  # its record, titled, before its file
        assert waiting_sections and "attachment_1.pdf" not in waiting_sections
        assert run_at(1.5)  # a new window, the docket closed and quiet: still no seal
        assert docket_rows.get_docket(docket).sealed_at is None
        assert docket_rows.get_docket(docket).retry_due_at == row.next_attempt_at

        shutil.copy(binary, held)  # the mirror catches up
        assert run_at(3)
        assert states("backfill", docket)[late].state == "ok"
        assert states("extract", docket)[late].state == "ok"
        assert late in indexed(runtime, docket) and "attachment_1.pdf" in chunk_sections(runtime, late)
        assert docket_rows.get_docket(docket).retry_due_at is None
        assert run_at(4)  # nothing waits now: the next clean pull seals it
        assert docket_rows.get_docket(docket).sealed_at
        verify_passes(runtime)


def test_mirror_file_that_never_comes_is_failed_after_the_horizon_then_the_docket_seals(tmp_path, pg_server):
    lagging = tmp_path / "lagging"
    with chain(tmp_path, pg_server, mirror=lagging) as (runtime, _server, docket, root):
        late, binary = comment_with_attachment(root, docket)
        (lagging / binary.relative_to(root)).unlink()
        attempts_seen = []
        for day in range(0, 22):  # daily cron for three weeks
            assert run_at(24 * day + 1)
            row = states("backfill", docket)[late]
            attempts_seen.append(row.attempts)
            if row.state != "retry":
                break
            assert docket_rows.get_docket(docket).sealed_at is None
        assert row.state == "failed" and row.reason == "see files", (attempts_seen, row.reason)
        given_up = states("backfill.file", docket)[f"{late}/{binary.name.split('_', 1)[1]}"]
        assert (given_up.state, given_up.detail) == ("failed", "permanent")  # the file, not the record
        assert given_up.reason.startswith("gave up after 6 attempts over 1"), given_up.reason
        assert max(a for a in attempts_seen if a) == 5  # the sixth attempt gave up
        assert run_at(24 * day + 2)  # nothing waits any more: the docket seals
        assert docket_rows.get_docket(docket).sealed_at
        assert_all_indexed(runtime, docket, but={late})  # failed for good: final until Redrive
        verify_passes(runtime)


# --------------------------------------------------------------------------- run-stopping


def test_key_rejected_mid_backfill_stops_the_run_and_blames_no_item(tmp_path, pg_server):
    with chain(tmp_path, pg_server, request_budget=10) as (runtime, server, docket, _root):
        assert run_at(1)  # fetched, and backfill stopped by its budget part-way
        before = {k: r.state for k, r in states("backfill", docket).items()}
        assert 0 < len(before) < len(comment_keys(docket))
        server.api_keys.discard(KEY)  # the key is revoked
        assert not run_at(1.2)  # same window: fetch is complete, backfill hits the 403
        after = {k: r.state for k, r in states("backfill", docket).items()}
        assert after == before  # no item failed, none marked
        assert DocketStage.get_or_none((DocketStage.docket == docket) & (DocketStage.stage == "backfill")) is None
        assert Run.select().where(Run.message.contains("API key was rejected")).exists()

        server.api_keys.add(KEY)  # a good key again: the next runs complete every item
        for hour in range(2, 12):
            assert run_at(hour)
            if len(indexed(runtime, docket)) >= len(comment_keys(docket)):
                break
        assert {r.state for r in states("backfill", docket).values()} <= {"ok", "gone"}
        assert_all_indexed(runtime, docket)


def test_key_rejected_exits_non_zero_with_one_line(tmp_path, pg_server):
    with chain(tmp_path, pg_server, request_budget=0) as (runtime, server, docket, _root):
        from pipeline import FetchAll

        assert run_invocation(FetchAll())  # fetched in this window with the good key
        server.api_keys.discard(KEY)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LUIGI_CONFIG_PATH": str(ROOT / "luigi.cfg"),
               **_env_of(runtime, server, docket)}
        done = subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", "BackfillAll",
                               "--local-scheduler"], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=180)
        assert done.returncode != 0
        output = done.stdout + done.stderr
        assert "Traceback" not in output, output[-3000:]
        lines = [line for line in output.splitlines() if "API key was rejected" in line]
        assert len(lines) == 1 and "KeyRejected" in lines[0], output[-3000:]
        assert KEY not in output
        assert not [r for r in states("backfill", docket).values() if r.state == "failed"]


# --------------------------------------------------------------------------- transient answers


def test_html_truncated_and_malformed_answers_wait_to_retry_while_the_rest_is_indexed(tmp_path, pg_server):
    with chain(tmp_path, pg_server) as (runtime, server, docket, _root):
        victims = sorted(p.stem for p in _root.glob(f"raw-data/*/{docket}/text-{docket}/comments/*.json"))[:3]
        server.path_faults.update({f"/v4/comments/{victims[0]}": "html",
                                   f"/v4/comments/{victims[1]}": "truncate",
                                   f"/v4/comments/{victims[2]}": "malformed"})
        assert run_at(1)
        rows = states("backfill", docket)
        assert [rows[v].state for v in victims] == ["retry"] * 3
        assert "HTML" in rows[victims[0]].reason and "not JSON" in rows[victims[2]].reason
        assert_all_indexed(runtime, docket, but=set(victims))
        assert docket_rows.get_docket(docket).retry_due_at

        server.path_faults.clear()  # the CDN recovered
        assert run_at(1.2)  # not due yet: no detail call for them
        assert [states("backfill", docket)[v].state for v in victims] == ["retry"] * 3
        assert run_at(2.5)  # due: retried by the normal run, no Redrive
        assert {states("backfill", docket)[v].state for v in victims} == {"ok"}
        assert_all_indexed(runtime, docket)
        verify_passes(runtime)


# --------------------------------------------------------------------------- hostile records


def _hostile_records(key: str, good: dict) -> dict[str, bytes]:
    """Five bad versions of comment ``good`` (its real detail record), by what they break."""
    def variant(change) -> bytes:
        record = json.loads(json.dumps(good))
        change(record)
        return json.dumps(record).encode()

    def attachment(record: dict) -> dict:
        record["included"] = [{"id": "a1", "type": "attachments", "attributes": {
            "docOrder": 1, "fileFormats": [{"fileUrl": "https://downloads.regulations.gov/x/attachment_1.pdf",
                                            "format": "pdf", "size": 10}]}}]
        return record["included"][0]

    def string_attributes(record): record["data"]["attributes"] = "not an object"  # noqa: E704
    def attachment_string_attributes(record): attachment(record)["attributes"] = "nope"  # noqa: E704
    def file_url(record): attachment(record)["attributes"]["fileFormats"][0]["fileUrl"] = "file:///etc/passwd"  # noqa: E704
    def doc_order(record): attachment(record)["attributes"]["docOrder"] = 10**40  # noqa: E704

    depth = 200_000
    return {
        "deep": b'{"data": ' + b"[" * depth + b"]" * depth + b"}",
        "attributes": variant(string_attributes),
        "included": variant(attachment_string_attributes),
        "fileUrl": variant(file_url),
        "docOrder": variant(doc_order),
    }


def _detail_record(root: Path, docket: str, key: str) -> dict:
    return json.loads(next(root.glob(f"raw-data/*/{docket}/text-{docket}/comments/{key}.json")).read_text())


@pytest.mark.parametrize("source", ["api", "mirror"])
def test_each_hostile_record_fails_its_item_and_every_other_item_is_indexed(tmp_path, pg_server, source):
    mirror = tmp_path / "mirror-copy" if source == "mirror" else None
    with chain(tmp_path, pg_server, mirror=mirror) as (runtime, server, docket, root):
        keys = sorted(k.stem for k in root.glob(f"raw-data/*/{docket}/text-{docket}/comments/*.json"))
        victims = dict(zip(["deep", "attributes", "included", "fileUrl", "docOrder"], keys, strict=False))
        for kind, key in victims.items():
            body = _hostile_records(key, _detail_record(root, docket, key))[kind]
            if source == "api":
                server.path_bodies[f"/v4/comments/{key}"] = body
            else:
                next(mirror.glob(f"raw-data/*/{docket}/text-{docket}/comments/{key}.json")).write_bytes(body)
        assert run_at(1)  # item failures are per item: the run succeeds
        rows = states("backfill", docket)
        expected = {"deep": "nested", "attributes": "attributes` is a string, not an object",
                    "included": "attributes` is a string, not an object",
                    "fileUrl": "not an http(s) URL", "docOrder": "out of range"}
        for kind, key in victims.items():
            assert rows[key].state == "failed" and rows[key].detail == "permanent", (kind, rows[key].reason)
            assert expected[kind] in rows[key].reason, (kind, rows[key].reason)
        assert not [r for r in rows.values() if r.state in ("pending", "retry")]
        assert_all_indexed(runtime, docket, but=set(victims.values()))
        assert run_at(2)  # and nothing is retried: permanent until Redrive
        assert {k: r.state for k, r in states("backfill", docket).items()} == {k: r.state for k, r in rows.items()}
        verify_passes(runtime)


# --------------------------------------------------------------------------- real dockets


def test_real_dockets_flow_through_and_the_file_the_mirror_lacks_waits(tmp_path, pg_server, realdata):
    """ACF, USTR and DOS as the mirror holds them: the DOS attachment is not in the mirror."""
    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, ids):
        assert run_at(1) and run_at(2)  # two pulls: the quiet, closed dockets may seal
        lacking = set()
        for docket in ids:
            rows = states("backfill", docket)
            waiting = {k for k, r in rows.items() if r.state == "retry"}
            assert all("not in the mirror yet" in rows[k].reason for k in waiting)
            sealed = docket_rows.get_docket(docket).sealed_at
            assert (sealed is None) == bool(waiting), (docket, sealed, waiting)
            # Items waiting for their files are extracted and indexed by what they have (titles).
            assert set(states("extract", docket)) == set(rows)
            assert comment_keys(docket) <= indexed(runtime, docket)
            lacking |= waiting
        assert lacking == {"DOS-2022-0004-0001", "DOS-2022-0004-0003"}  # what the README says is absent
        verify_passes(runtime)


def test_a_comment_whose_file_never_comes_keeps_its_body_and_other_files_past_the_horizon(tmp_path, pg_server):
    """Nothing is lost, and nothing of the comment waits for a file: while one of its files
    lags in the mirror, its body, submitter, organisation and other files are stored,
    extracted and indexed at once, the lagging file waiting on its own row; once the retry
    horizon passes, that file is failed for good and the comment is recorded like any item
    with a failed file. A rerun writes nothing; Redrive sends it back."""
    from pipeline.ops.redrive import redrive
    from pipeline.reading import reports

    lagging = tmp_path / "lagging"
    body = "Keep the marsh heron nesting buffer at two hundred metres."
    with chain(tmp_path, pg_server, mirror=lagging, retry_max_attempts=2, retry_horizon_days=1) as (
            runtime, _server, docket, root):
        seconds = sorted(root.glob(f"raw-data/*/{docket}/binary-{docket}/comments_attachments/*_attachment_2.*"))
        assert seconds, "the corpus has a comment with two files"
        late = seconds[0].name.split("_attachment_")[0]
        record_path = next(root.glob(f"raw-data/*/{docket}/text-{docket}/comments/{late}.json"))
        for copy in (record_path, lagging / record_path.relative_to(root)):  # a body of its own
            record = json.loads(copy.read_text())
            record["data"]["attributes"].update(comment=body, firstName="Ada", lastName="Heron",
                                                organization="Marsh Friends")
            copy.write_text(json.dumps(record))
        missing = seconds[0].name.split("_", 1)[1]  # attachment_2.<ext>
        (lagging / seconds[0].relative_to(root)).unlink()  # the mirror never gets this file

        for hours in (1, 3):  # before the horizon: the file waits, the comment's own fields do not
            assert run_at(hours)
            row = states("backfill", docket)[late]
            assert row.state == "retry", (row.state, row.reason)
            stored = Item.get(Item.key == late)
            assert (stored.body, stored.submitter, stored.organization) == (body, "Ada Heron", "Marsh Friends")
            sections = chunk_sections(runtime, late)
            assert "Inline comment" in sections and missing not in sections, sections
            assert states("extract.file", docket)[f"{late}/attachment_1.pdf"].state in ("ok", "ocr_needed")
        assert states("backfill.file", docket)[f"{late}/{missing}"].state == "missing"
        waiting = Attachment.get((Attachment.item == late) & (Attachment.filename == missing))
        assert waiting.sha256 is None and waiting.declared_size  # its row from the record
        detailed_while_waiting = reports.comment_progress()[docket]["detailed"]

        assert run_at(27)  # a day later, past the horizon: given up, the rest kept
        row = states("backfill", docket)[late]
        assert (row.state, row.reason, row.attempts) == ("failed", "see files", None)
        stored = Item.get(Item.key == late)
        assert (stored.body, stored.submitter, stored.organization) == (body, "Ada Heron", "Marsh Friends")
        # `docketeer dockets` counted it as detailed while it waited: its detail was stored.
        assert reports.comment_progress()[docket]["detailed"] == detailed_while_waiting
        gave_up = states("backfill.file", docket)[f"{late}/{missing}"]
        assert (gave_up.state, gave_up.detail) == ("failed", "permanent")
        assert gave_up.reason.startswith("gave up after 3 attempts over 1.1 days: "), gave_up.reason
        assert "not in the mirror yet" in gave_up.reason
        files = {a.filename: a.sha256 for a in Attachment.select().where(Attachment.item == late)}
        assert files.keys() == {"attachment_1.pdf", missing} and files["attachment_1.pdf"] and not files[missing]
        assert states("backfill.file", docket)[f"{late}/attachment_1.pdf"].state == "ok"
        assert states("extract", docket)[late].state != "retry"
        texts = [row[4] for row in map(json.loads, runtime.index_db().dump_chunks().splitlines())
                 if row[1] == late]
        assert any("marsh heron nesting buffer" in text for text in texts), texts
        assert docket_rows.get_docket(docket).retry_due_at is None

        before = _item_rows(runtime, docket)
        assert run_at(28)  # a rerun rewrites nothing of it
        assert _item_rows(runtime, docket) == before
        verify_passes(runtime)

        assert redrive("backfill", docket, "failed", 10, run_id="redrive").items == [late]
        assert run_at(29)  # sent back: the file is tried again and waits, its body kept
        assert states("backfill", docket)[late].state == "retry"
        assert Item.get(Item.key == late).body == body
        shutil.copy(seconds[0], lagging / seconds[0].relative_to(root))  # the mirror catches up
        assert run_at(31)  # due: retried by the normal run
        assert states("backfill", docket)[late].state == "ok"
        assert states("backfill.file", docket)[f"{late}/{missing}"].state == "ok"
        assert Attachment.select().where((Attachment.item == late) & Attachment.sha256.is_null(False)).count() == 2


def _item_rows(runtime, docket: str) -> tuple:
    """Every row backfill, extract and the index wrote for the docket's items, timestamps too."""
    rows = sorted((r.stage, r.item, r.state, r.reason, r.content_hash, r.fingerprint, r.detail, r.written_at)
                  for r in ItemState.select().where((ItemState.docket == docket)
                                                    & (ItemState.stage != "fetch")))
    found = sorted((i.key, i.detail_hash, i.body, i.updated_at) for i in Item.select().where(Item.docket == docket))
    attachments = sorted((a.item, a.filename, a.sha256) for a in Attachment.select())
    index = runtime.index_db()
    return rows, found, attachments, index.dump_chunks(), index.dump_state().split("--\n")[0]
