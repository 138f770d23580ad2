"""Reliability trials of hostile records, a damaged state DB, two processes starting the
embedded index server at once, and a run killed on a PostgreSQL state DB: each ends with
every item decided with a reason, or the store equal to an uninterrupted run's, and one
line, never a traceback, where a run must stop."""

from __future__ import annotations

import multiprocessing.util
import os
import signal
import sqlite3
from datetime import timedelta
from pathlib import Path

from starlette.testclient import TestClient

from pipeline import IndexAll, clock
from pipeline.ops import cli, verify
from pipeline.store.models import Item, ItemState
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.state_fixtures import new_pg_database, run_invocation
from tests.fixtures.trials import trials
from tests.reliability import harness, hostile
from tests.reliability.audit.write_audit import watching
from tests.reliability.harness import lost, problems, record, snapshot, world

MAX_PAGE_BYTES = 2_000_000  # a docket page of 10 comments, whatever their dates


def _outcome(docket: str, item: str) -> str:
    """The item's decided states and reasons, by stage (its files, and a claim of it by a
    listing of this docket, included)."""
    rows = ItemState.select().where((ItemState.docket == docket) & (
        (ItemState.item == item) | ItemState.item.startswith(f"{item}/")
        | (ItemState.item == f"{docket}/foreign-{item}")))
    return "; ".join(sorted(f"{r.stage} {r.state}: {r.reason or ''}"[:160] for r in rows))


EXPECTED = {  # what each spoiled record's outcome must say
    "posted in year 1": "fetch failed: comment", "received in year 2": "is not a possible date",
    "included an object, not a list": "`included` is an object, not a list",
    "an attachment named .. beside a body": "backfill.file failed",
    "a file format that is text, not an object": "is a string, not an object",
    "a count that is a huge fraction": "duplicateComments` is a fraction",
    "its record names another docket": f"belongs to docket {hostile.ANOTHER_DOCKET}, not",
    "lone surrogates and terminal escapes in its title, body and name": "backfill ok: 3 invalid character(s)",
}


def test_hostile_records_end_in_decided_items_and_bounded_pages(tmp_path, pg_server):
    test_process_sockets = multiprocessing.util.get_temp_dir()
    with world(tmp_path, pg_server) as w:
        spoiled = hostile.spoil_records(w.server.root)
        w.server.reload()
        with watching(w.runtime.data_dir, also=[test_process_sockets]) as outside:
            for day in (0, 1):  # a second run: nothing hostile is taken up again as new work
                with clock.shifted(timedelta(days=day, hours=1)):
                    run_invocation(IndexAll())
        failures = problems(w)
        outcomes = {item: _outcome(w.docket, item) for item in spoiled}
        failures += [f"{spoiled[item]}: {text or 'no decided state'}" for item, text in outcomes.items()
                     if EXPECTED[spoiled[item]] not in text or "Traceback" in text or "pending" in text]
        kept = next(item for item, what in spoiled.items() if what.startswith("an attachment named"))
        body = Item.get_by_id(kept).body or ""
        failures += [] if "is kept whatever its files are" in body else [f"{kept}: its body was dropped"]
        failures += [] if kept in w.runtime.index_db().dump_chunks() else [f"{kept}: not indexed"]
        report = verify.run_checks(w.runtime)
        failures += [] if report.passed else ["verify failed: " + "; ".join(report.lines())[:300]]
        for item in spoiled:  # explain names each one's outcome, never an exception
            if cli.main(["explain", item]) not in (0, 2):
                failures.append(f"explain {item} failed")
        with TestClient(make_app(w.runtime, pages.WarmSearch(w.runtime)), base_url="http://127.0.0.1") as client:
            page = client.get(f"/docket/{w.docket}")
            if page.status_code != 200 or len(page.content) > MAX_PAGE_BYTES:
                failures.append(f"docket page {page.status_code}, {len(page.content)} bytes")
            for query, code in ((("q", "rural\x00hospitals"),), 400), ((("q", "rural"), ("to", "9999-12-31")), 200):
                got = client.get("/search", params=dict(query)).status_code
                failures += [] if got == code else [f"search {query}: {got}, not {code}"]
            got = client.get("/search", headers={"Host": "evil.example"}, params={"q": "rural"}).status_code
            failures += [] if got == 400 else [f"Host evil.example: {got}, not 400"]
        record("hostile records (api): " + ", ".join(sorted(spoiled.values())), len(spoiled), failures,
               0, harness.duplicates(w), len(outside),
               ok="every item decided with a reason, the body beside a bad file kept; pages bounded, "
                  "bad search arguments and a foreign Host answered 400")
        print("\n".join(f"{spoiled[k]} -> {v}" for k, v in sorted(outcomes.items())))
        assert not failures and not outside, (failures, outside)


# --------------------------------------------------------------------------- the state DB


def _empty(path) -> None:
    path.write_bytes(b"")


def _not_sqlite(path) -> None:
    path.write_bytes(b"PK\x03\x04 an archive, not a database " * 200)


def _foreign(path) -> None:
    path.unlink()
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE songs (title TEXT)")


def _truncated(path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


def _damaged(path) -> None:
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[2 * page: 5 * page] = b"\xa5" * (3 * page)
    path.write_bytes(bytes(data))


DAMAGE = {"0-byte file": _empty, "not SQLite": _not_sqlite, "another program's DB": _foreign,
          "truncated": _truncated, "damaged pages": _damaged}


def _one_line_stop(code: int, output: str, path) -> list[str]:
    if code == 0:
        return ["exit 0"]
    if "Traceback" in output or "Uncaught exception" in output:
        return [f"not one line: {output[-300:]}"]
    return [] if f"state DB {path} is not usable" in output and "docketeer restore" in output else [
        f"no line naming the file and the way back: {output[-300:]}"]


def _sound_state_db(w) -> Path:
    """The world's state DB after one run, whole in its file (no WAL) and closed by the test."""
    code, output = w.luigi()
    assert code == 0, output[-2000:]
    w.runtime.close()  # the test's own connection: the trial damages the file under it
    path = w.runtime.settings.data_path / "state.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def _refused(w, path: Path, shape: str) -> list[str]:
    """The damaged file: a run and a command each stop with one line, and neither writes it."""
    before = path.read_bytes()
    code, output = w.luigi()
    failures = [f"{shape}: luigi {p}" for p in _one_line_stop(code, output, path)]
    said = w.docketeer("dockets")
    failures += [f"{shape}: dockets {p}" for p in _one_line_stop(2, said, path)]
    return failures + ([] if path.read_bytes() == before else [f"{shape}: the damaged file was written"])


def test_a_damaged_state_db_is_refused_in_one_line_and_reinitialise_recovers(tmp_path, pg_server, reference):
    recovered = trials(default=1, full=len(DAMAGE))
    shapes = sorted(DAMAGE.items())
    failures, lost_total, dup_total, outside = [], 0, 0, 0
    for n, (shape, damage) in enumerate(shapes[:recovered]):  # each recovered on a store of its own
        with world(tmp_path / f"s{n}", pg_server) as w:
            path = _sound_state_db(w)
            damage(path)
            failures += _refused(w, path, shape)
            w.docketeer("--reinitialise", "dockets")  # on purpose: moved aside, a new store, refetched
            rerun, rerun_output = w.luigi()
            failures += [] if rerun == 0 else [f"{shape}: rerun exit {rerun}: {rerun_output[-300:]}"]
            got = snapshot(w)
            failures += problems(w)
            failures += [] if got["chunks"] == reference["chunks"] else [f"{shape}: chunks differ"]
            lost_total += lost(reference, got)
            dup_total += harness.duplicates(w)
            outside += w.written_outside()
    if shapes[recovered:]:  # the others refused on one store: its sound file put back before each
        with world(tmp_path / "refused", pg_server) as w:
            path = _sound_state_db(w)
            sound = path.read_bytes()
            for shape, damage in shapes[recovered:]:
                for left in path.parent.glob(f"{path.name}-*"):  # a WAL or journal beside it
                    left.unlink()
                path.write_bytes(sound)
                damage(path)
                failures += _refused(w, path, shape)
            outside += w.written_outside()
    record("state DB damaged (" + ", ".join(sorted(DAMAGE)) + "), a run, then `--reinitialise` and one rerun",
           len(DAMAGE), failures, lost_total, dup_total, outside,
           ok=f"every run and command stopped with one line naming the file and the way back, the file "
              f"untouched; {recovered} of {len(DAMAGE)} reinitialised and rerun: all recovered")
    assert not failures and not lost_total and not dup_total and not outside, failures[:5]


# --------------------------------------------------------------------------- the index server


def test_two_invocations_starting_a_fresh_embedded_index_server_at_once(tmp_path, pg_server, reference):
    count = trials(default=1, full=5)
    failures, lost_total, dup_total, outside = [], 0, 0, 0
    for seed in range(count):
        with world(tmp_path / f"e{seed}", pg_server, seed=seed, index_url="") as w:
            together = [w.luigi(wait=False) for _ in range(2)]
            for process in together:  # one may find a lease held: it says so and exits non-zero
                _, err = process.communicate(timeout=300)
                if "Traceback" in err or "Uncaught exception" in err:
                    failures.append(f"seed {seed}: {err[-300:]}")
            code, output = w.luigi()
            got = snapshot(w)
            failures += problems(w) + ([] if code == 0 else [output[-300:]])
            failures += [] if got == reference else [f"seed {seed}: store differs from one run's"]
            lost_total += lost(reference, got)
            dup_total += harness.duplicates(w)
            outside += w.written_outside()
    record("2 invocations starting a fresh embedded index server at once, then one more run", count,
           failures, lost_total, dup_total, outside)
    assert not failures and not lost_total and not dup_total and not outside, failures[:5]


# --------------------------------------------------------------------------- PostgreSQL state


def test_a_run_killed_on_a_postgresql_state_db_is_finished_by_one_rerun(tmp_path, pg_server, reference,
                                                                         s3_endpoint, s3_client, s3_credentials_env):
    """The run dies holding its leases (killed, or its state server killed under it): the
    rerun on its host takes them over in that rerun, never waits for them to expire."""
    count = trials(default=1, full=8)
    failures, lost_total, dup_total, outside, killed = [], 0, 0, 0, 0
    for trial in range(count):
        bucket = f"rel-{os.getpid()}-{trial}"
        s3_client.create_bucket(Bucket=bucket)
        after = harness.rng(trial).randint(1, harness.COMMENTS - 1)
        with world(tmp_path / f"k{trial}", pg_server, state_url=new_pg_database(pg_server),
                   blob_url=f"s3://{bucket}/blobs", s3_endpoint_url=s3_endpoint, lease_seconds=7200) as w:
            code, output = w.luigi(DOCKETEER_TEST_KILL_AFTER=f"backfill:{after}")
            killed += code == -signal.SIGKILL
            rerun, rerun_output = w.luigi()
            got = snapshot(w)
            found = problems(w) + ([] if rerun == 0 else [f"rerun exit {rerun}: {rerun_output[-300:]}"])
            found += [] if got == reference else ["store differs from the uninterrupted run"]
            failures += [f"backfill:{after} (exit {code}) {p}" for p in found]
            lost_total += lost(reference, got)
            dup_total += harness.duplicates(w)
            outside += w.written_outside()
    record("SIGKILL after N backfill items on a PostgreSQL state DB (S3 blobs, 2 h leases), one rerun",
           count, failures, lost_total, dup_total, outside,
           ok=f"all recovered in the rerun ({killed} of {count} killed mid-run)")
    assert killed, "no trial was killed: the hook never fired"
    assert not failures and not lost_total and not dup_total and not outside, failures[:5]
