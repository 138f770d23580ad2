"""The reliability suite: kills at seeded points, overlapping invocations, API faults and a
sentinel key, each trial checked against an uninterrupted run. A bounded share runs by
default; DOCKETEER_RELIABILITY_TRIALS=all runs every trial (``pytest -m reliability``)."""

from __future__ import annotations

import contextlib
import json
import multiprocessing.util
import os
import signal
import time
from datetime import timedelta

import pytest

from devtools.mirror_layout import comment_files
from devtools.standin_server import API_KEY_MISSING
from pipeline import IndexAll, clock
from pipeline.ops import verify
from pipeline.store.models import ItemState
from tests.fixtures.loopback_recorder import Recorder
from tests.fixtures.luigid_server import api, running_luigid
from tests.fixtures.state_fixtures import run_invocation
from tests.fixtures.trials import TRIALS_ENV, every_trial, trials
from tests.reliability import harness, hostile
from tests.reliability.audit.write_audit import watching
from tests.reliability.harness import lost, problems, record, snapshot, world

STAGES = ("backfill", "extract", "index")
SENTINEL = "SENTINELkey7f3a9c2e"


def test_sigkill_at_seeded_item_boundaries_then_one_rerun_recovers(tmp_path, pg_server, reference):
    count = trials(default=3, full=20 * len(STAGES))
    failures, lost_total, dup_total, outside, killed = [], 0, 0, 0, 0
    for trial in range(count):
        stage = STAGES[trial % len(STAGES)]
        after = harness.rng(trial).randint(1, harness.COMMENTS)
        with world(tmp_path / f"t{trial}", pg_server, traced=True) as w:
            code, output = w.luigi(DOCKETEER_TEST_KILL_AFTER=f"{stage}:{after}")
            killed += code == -signal.SIGKILL  # else the stage had fewer items than N
            rerun, rerun_output = w.luigi()
            got = snapshot(w)
            found = problems(w) + ([] if rerun == 0 else [f"rerun exit {rerun}: {rerun_output[-300:]}"])
            if got != reference:
                found.append(f"{stage}:{after} store differs from the uninterrupted run")
            failures += [f"{stage}:{after} (exit {code}) {p}" for p in found]
            lost_total += lost(reference, got)
            dup_total += harness.duplicates(w)
            outside += w.written_outside()
    record("SIGKILL after N items (backfill, extract, index), one rerun", count, failures,
           lost_total, dup_total, outside,
           ok=f"all recovered ({killed} of {count} killed mid-run; {harness.strace_notice()})")
    assert killed, "no trial was killed: the hook never fired"
    assert not failures and not lost_total and not dup_total and not outside, failures[:5]


@pytest.mark.parametrize("invocations", [2, 3])
def test_overlapping_invocations_on_one_data_folder(tmp_path, pg_server, reference, invocations):
    count = trials(default=1, full=5)
    failures, lost_total, dup_total, outside = [], 0, 0, 0
    for seed in range(count):
        with world(tmp_path / f"s{seed}", pg_server, seed=seed) as w:
            together = [w.luigi("--workers", str(1 + (seed + i) % 2), wait=False) for i in range(invocations)]
            for process in together:  # one may find a lease held: it says so and steps aside
                _, err = process.communicate(timeout=300)
                if "Traceback" in err:
                    failures.append(err[-300:])
            code, output = w.luigi()  # whatever a lease made one skip, the next run does
            got = snapshot(w)
            failures += problems(w) + ([] if code == 0 else [output[-300:]])
            if got != reference:
                failures.append(f"seed {seed}: store differs from one run's: {harness.differences(reference, got)}")
            lost_total += lost(reference, got)
            dup_total += harness.duplicates(w)
            outside += w.written_outside()
    record(f"{invocations} overlapping invocations, then one more run", count, failures,
           lost_total, dup_total, outside)
    assert not failures and not lost_total and not dup_total and not outside, failures[:5]


def _detail_paths(w) -> list[str]:
    """The API paths of the corpus' comment details, in order."""
    return [f"/v4/comments/{key}" for key in sorted(comment_files(w.server.root))]


def _key_rejected_mid_run(w, elsewhere) -> None:
    w.server.path_faults[_detail_paths(w)[harness.COMMENTS // 2]] = "403"


def _redirected_to_another_host(w, elsewhere) -> None:
    for path in _detail_paths(w)[:3]:
        w.server.path_faults[path] = f"redirect:{elsewhere.base}{path}"


FAULTS = {  # name -> how to break the stand-in (every switch is turned off after the first run)
    "5xx storm": lambda w, _: setattr(w.server, "fail_5xx_rate", 0.4),
    "429 bursts with Retry-After": lambda w, _: setattr(w.server, "burst_429", 6),
    "resets mid-body": lambda w, _: setattr(w.server, "reset_next", 4),
    "truncated bodies": lambda w, _: setattr(w.server, "truncate_next", 4),
    "HTML 200": lambda w, _: setattr(w.server, "html_error_next", 4),
    "403 mid-run (key rejected)": _key_rejected_mid_run,
    "hangs past the request deadline": lambda w, _: setattr(w.server, "slow_seconds", 3.0),
    "redirects to another host": _redirected_to_another_host,
}
SWITCHES = ("fail_5xx_rate", "burst_429", "reset_next", "truncate_next", "html_error_next", "slow_seconds")


@pytest.fixture
def elsewhere():
    """Another host (127.0.0.2) that answers like the API without a key: it must never see one."""
    server = Recorder("127.0.0.2", lambda path: (403, {"Content-Type": "application/json"},
                                                 json.dumps(API_KEY_MISSING).encode()))
    yield server
    server.shutdown()


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_api_faults_are_retried_until_the_store_equals_an_uninterrupted_run(tmp_path, pg_server,
                                                                           reference, fault, elsewhere):
    # In-process, the extract pool's forkserver socket goes to the test process's own folder
    # (a `luigi` run puts it in its data folder: the kill trials watch that).
    test_process_sockets = multiprocessing.util.get_temp_dir()
    with world(tmp_path, pg_server, request_seconds=1) as w, \
            watching(w.runtime.data_dir, also=[test_process_sockets]) as outside:
        FAULTS[fault](w, elsewhere)
        with clock.shifted(timedelta(hours=1)):
            run_invocation(IndexAll())
        for switch in SWITCHES:
            setattr(w.server, switch, 0)
        w.server.path_faults.clear()
        for day in range(1, 40):  # cron, once a day, past every retry's next attempt
            with clock.shifted(timedelta(days=day)):
                run_invocation(IndexAll())
            if snapshot(w)["chunks"] == reference["chunks"]:
                break
        got = snapshot(w)
        failures = problems(w) + ([] if got["chunks"] == reference["chunks"] else ["chunks differ"])
        report = verify.run_checks(w.runtime)
        failures += [] if report.passed else ["verify failed"]
        failures += [f"the key reached {elsewhere.base}" for path, headers in elsewhere.seen
                     if w.key in path or w.key in str(headers)]
        record(f"API fault: {fault}", 1, failures, lost(reference, got), harness.duplicates(w), len(outside))
        assert not failures and not outside, (failures, outside)


@pytest.fixture
def luigid_files(tmp_path):
    """A real luigid as cron's @reboot line starts it: its task history in --state-path (a
    pickle written when it stops) and its own log output in a file; ``stop()`` ends it
    (SIGTERM: it saves its state) so both can be read."""
    folder = tmp_path / "luigid"
    folder.mkdir()
    state, log = folder / "state.pickle", folder / "luigid.log"
    with log.open("ab") as out, running_luigid(state, output=out, stop_seconds=30) as (port, daemon):

        def stop() -> tuple[bytes, bytes]:
            if daemon.poll() is None:
                daemon.terminate()
                daemon.wait(timeout=30)
            return (state.read_bytes() if state.exists() else b""), log.read_bytes()

        yield port, stop


def test_a_sentinel_key_appears_in_no_channel(tmp_path, pg_server, reference, luigid_files, elsewhere):
    luigid, stop_luigid = luigid_files
    with world(tmp_path, pg_server, key=SENTINEL) as w:
        # Errors too, whose texts are a channel: 5xx, the key rejected, a redirect elsewhere.
        _redirected_to_another_host(w, elsewhere)
        w.server.path_faults[_detail_paths(w)[3]] = "503"
        w.server.path_faults[_detail_paths(w)[4]] = "403"
        outputs, job_log = [], w.runtime.data_dir / "logs" / "indexall.log"  # as cron.example appends it
        for _ in range(4):  # the failed first run, then until a run is clean
            code, output = w.luigi("--log-level", "DEBUG", scheduler_port=luigid, log_file=job_log)
            outputs.append(output)
            w.server.path_faults.clear()
            if code == 0:
                break
        report = verify.run_checks(w.runtime)
        scheduler = [api(luigid, "task_list", status=status)
                     for status in ("DONE", "FAILED", "PENDING", "RUNNING", "DISABLED")]
        scheduler += [api(luigid, "graph"), api(luigid, "task_search", task_str="")]
        dest = w.folder / "snap"
        taken = w.docketeer("snapshot", str(dest))
        luigid_state, luigid_log = stop_luigid()
        channels = {
            "the job's log file": job_log.read_text(errors="replace"),
            "luigid's state file": luigid_state.decode("latin-1"),
            "luigid's log": luigid_log.decode("latin-1"),
            "logs, task ids, exception texts": "".join(outputs),
            "luigid's task list and graph": json.dumps(scheduler),
            "state DB dump": str(snapshot(w)["state"]),
            "index DB dump": w.runtime.index_db().dump_chunks() + w.runtime.index_db().dump_state(),
            "verify output": "\n".join(report.lines()) + w.docketeer("verify"),
            "snapshot (output and files)": taken + "".join(
                p.read_bytes().decode("latin-1") for p in dest.rglob("*") if p.is_file()),
            "files in the data folder": "".join(
                p.read_bytes().decode("latin-1") for p in w.runtime.data_dir.rglob("*")
                if p.is_file() and p.stat().st_size < 50_000_000),
            "the other host's requests": json.dumps(elsewhere.seen),
        }
        leaked = [name for name, text in channels.items() if SENTINEL in text]
        assert code == 0, output[-2000:]
        assert len(outputs) > 1 and "rejected" in outputs[0], outputs[0][-3000:]  # the errors happened
        assert elsewhere.seen and any(t["name"] == "IndexAll" for t in scheduler[0].values())
        assert (dest / "snapshot.json").is_file(), taken
        assert b"IndexAll" in luigid_state and "IndexAll" in channels["the job's log file"]  # both were written
        record("sentinel API key in " + ", ".join(channels), len(channels),
               [f"leaked in {n}" for n in leaked], 0, 0, w.written_outside(), ok="absent from every channel")
        assert not leaked and not w.written_outside(), (leaked, w.writes_outside())


def _outcome(docket: str, item: str) -> str:
    """The item's furthest decided state and its reason, by stage (files included)."""
    rows = ItemState.select().where((ItemState.docket == docket)
                                    & ((ItemState.item == item) | ItemState.item.startswith(f"{item}/")))
    return "; ".join(sorted(f"{r.stage} {r.state}: {r.reason or ''}"[:160] for r in rows))


@pytest.mark.parametrize("source", ["api", "mirror"])
def test_a_hostile_corpus_ends_in_decided_items_with_reasons(tmp_path, pg_server, source):
    if source == "mirror" and not every_trial():
        pytest.skip(f"the mirror's hostile corpus runs when {TRIALS_ENV} is set (the CI share: the API's)")
    mirror = {"source": "mirror", "mirror_url": str(tmp_path / "corpus")} if source == "mirror" else {}
    test_process_sockets = multiprocessing.util.get_temp_dir()
    with world(tmp_path, pg_server, max_docx_bytes=8 * 1024 * 1024, file_seconds=20, **mirror) as w:
        spoiled = hostile.spoil(w.server.root)
        w.server.reload()
        with watching(w.runtime.data_dir, also=[test_process_sockets]) as outside:
            for day in (0, 1):  # a second run: nothing hostile is taken up again as new work
                with clock.shifted(timedelta(days=day, hours=1)):
                    run_invocation(IndexAll())  # a traceback out of the chain fails the test here
        failures = problems(w)
        outcomes = {item: _outcome(w.docket, item) for item in spoiled}
        failures += [f"{spoiled[item]}: no decided state" for item, text in outcomes.items() if not text]
        failures += [f"{spoiled[item]}: not past fetch" for item, text in outcomes.items()
                     if "fetch ok" in text and "backfill" not in text]
        failures += [f"{spoiled[item]}: {text}" for item, text in outcomes.items()
                     if "pending" in text or "Traceback" in text]
        chunks = w.runtime.index_db().dump_chunks()
        failures += ["a script reached the index"] if hostile.SCRIPT in chunks else []
        record(f"hostile corpus ({source}): " + ", ".join(sorted(set(spoiled.values()))), len(spoiled),
               failures, 0, harness.duplicates(w), len(outside),
               ok="every item decided with a reason, the rest indexed")
        print("\n".join(f"{spoiled[k]} -> {v}" for k, v in sorted(outcomes.items())))
        assert not failures and not outside, (failures, outside)


@pytest.mark.parametrize("fault", ["disk full", "read-only blob folder"])
def test_a_full_or_read_only_disk_stops_cleanly_then_a_run_recovers_everything(tmp_path, pg_server, reference, fault):
    with harness.tmpfs("20m") as point:
        if fault == "disk full":  # the data folder on a tmpfs with little room left
            settings = {"data_dir": point}
        else:  # blobs on a tmpfs mounted read-only
            settings = {"blob_url": str(point / "blobs")}
        with world(tmp_path, pg_server, **settings) as w:
            if fault == "disk full":
                filler = harness.fill(point, leave_bytes=160 * 1024)
            else:
                harness.remount(point, "ro")
            code, output = w.luigi()
            line = harness.stop_line(output)
            if fault == "disk full":
                filler.unlink()
            else:
                harness.remount(point, "rw")
            rerun, rerun_output = w.luigi()
            got = snapshot(w)
            failures = problems(w) + ([] if rerun == 0 else [f"rerun exit {rerun}: {rerun_output[-300:]}"])
            failures += [] if code != 0 else ["the run did not stop"]
            failures += [] if line else [f"no clean one-line stop: {output[-600:]}"]
            failures += [] if got == reference else ["store differs from an uninterrupted run's"]
            record(f"{fault} (tmpfs 20 MB), then the room back and one rerun", 1, failures,
                   lost(reference, got), harness.duplicates(w), w.written_outside(),
                   ok=f"stopped with one line (`{(line or '').strip()[:60]}`), then all recovered")
            assert not failures and not w.written_outside(), (failures, w.writes_outside())


def _postmaster_pid(data_dir, job) -> int | None:
    """The embedded index server's pid while it runs (its postmaster.pid), or None once the
    job has ended (a fast run can finish before the kill's seeded time)."""
    pid_file = data_dir / "index-pg" / "postmaster.pid"
    while job.poll() is None:
        with contextlib.suppress(FileNotFoundError, ValueError, IndexError):
            pid = int(pid_file.read_text().split()[0])
            if pid > 0:  # negative: initdb's single-user bootstrap, not the server
                return pid
        time.sleep(0.02)
    return None


def _kill(pid: int | None) -> bool:
    """SIGKILL ``pid``; False when there was none or it had already gone."""
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def _wait_for(path, job) -> None:
    while not path.exists() and job.poll() is None:
        time.sleep(0.02)


def test_the_index_postgres_killed_mid_run_then_one_rerun_recovers(tmp_path, pg_server, reference):
    """Timed kills of the embedded index server (SIGKILL of its postmaster) while a run works."""
    count = trials(default=1, full=12)
    failures, lost_total, dup_total, outside, stopped, permissions, killed = [], 0, 0, 0, 0, 0, 0
    for trial in range(count):
        for attempt in range(3):  # a fast run can end before the seeded time: again, killing at once
            with world(tmp_path / f"p{trial}.{attempt}", pg_server, index_url="", traced=True) as w:
                job = w.luigi(wait=False)
                _wait_for(w.runtime.data_dir / "blobs" / "combined", job)  # extract writes
                time.sleep(harness.rng(trial).uniform(0.0, 0.3) if attempt == 0 else 0.0)
                hit = _kill(_postmaster_pid(w.runtime.data_dir, job))
                out, err = job.communicate(timeout=300)
                if not hit and attempt < 2:
                    continue
                killed += hit
                stopped += job.returncode != 0
                if "Traceback" in out + err:
                    said = out + err
                    failures.append(f"trial {trial}: a traceback, not one line: {said[said.index('Traceback'):][:1500]}")
                rerun, rerun_output = w.luigi()
                got = snapshot(w)
                found = problems(w) + ([] if rerun == 0 else [f"rerun exit {rerun}: {rerun_output[-300:]}"])
                found += [] if got == reference else ["store differs from the uninterrupted run"]
                failures += [f"trial {trial}: {p}" for p in found]
                lost_total += lost(reference, got)
                dup_total += harness.duplicates(w)
                outside += w.written_outside()
                permissions += w.permission_changes()
            break
    record("SIGKILL of the index PostgreSQL (embedded) at a seeded time once extract writes, one rerun",
           count, failures, lost_total, dup_total, outside,
           ok=f"all recovered ({killed} of {count} servers killed mid-run, {stopped} of those runs stopped "
              f"by it, the others restarted it themselves; {harness.strace_notice()}; "
              f"permissions changed outside the data folder: {permissions})")
    assert killed, "no server was killed"
    assert not failures and not lost_total and not dup_total and not outside and not permissions, failures[:5]
