"""The reliability suite: kills at seeded points, overlapping invocations, API faults and a
sentinel key, each trial checked against an uninterrupted run. A bounded share runs by
default; DOCKETEER_RELIABILITY_TRIALS=all runs every trial (``pytest -m reliability``)."""

from __future__ import annotations

import signal
import subprocess
from datetime import timedelta

import pytest

from pipeline import IndexAll, clock, verify
from tests.reliability import harness
from tests.reliability.harness import lost, problems, record, snapshot, trials, world
from tests.state_fixtures import run_invocation

STAGES = ("backfill", "extract", "index")
SENTINEL = "SENTINELkey7f3a9c2e"


@pytest.fixture(scope="module")
def reference(tmp_path_factory, pg_server) -> dict:
    """The store after one uninterrupted run."""
    with world(tmp_path_factory.mktemp("reference"), pg_server) as w:
        code, output = w.luigi()
        assert code == 0, output[-2000:]
        return snapshot(w)


def test_sigkill_at_seeded_item_boundaries_then_one_rerun_recovers(tmp_path, pg_server, reference):
    count = trials(default=3, full=20 * len(STAGES))
    failures, lost_total, dup_total, outside, killed = [], 0, 0, 0, 0
    for trial in range(count):
        stage = STAGES[trial % len(STAGES)]
        after = harness.rng(trial).randint(1, harness.COMMENTS)
        with world(tmp_path / f"t{trial}", pg_server) as w:
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
           lost_total, dup_total, outside, ok=f"all recovered ({killed} of {count} killed mid-run)")
    assert killed, "no trial was killed: the hook never fired"
    assert not failures and not lost_total and not dup_total and not outside, failures[:5]


@pytest.mark.parametrize("invocations", [2, 3])
def test_overlapping_invocations_on_one_data_folder(tmp_path, pg_server, reference, invocations):
    count = trials(default=1, full=5)
    failures, lost_total, dup_total, outside = [], 0, 0, 0
    for seed in range(count):
        with world(tmp_path / f"s{seed}", pg_server, seed=seed) as w:
            together = [w.luigi("--workers", str(1 + (seed + i) % 2), wait=False) for i in range(invocations)]
            for process in together:  # one may find a lease held: it says so and exits non-zero
                _, err = process.communicate(timeout=300)
                if "Traceback" in err:
                    failures.append(err[-300:])
            code, output = w.luigi()  # whatever a lease made one skip, the next run does
            got = snapshot(w)
            failures += problems(w) + ([] if code == 0 else [output[-300:]])
            if got != reference:
                failures.append(f"seed {seed}: store differs from one run's")
            lost_total += lost(reference, got)
            dup_total += harness.duplicates(w)
            outside += w.written_outside()
    record(f"{invocations} overlapping invocations, then one more run", count, failures,
           lost_total, dup_total, outside)
    assert not failures and not lost_total and not dup_total and not outside, failures[:5]


FAULTS = {
    "5xx storm": {"fail_5xx_rate": 0.4},
    "429 bursts with Retry-After": {"burst_429": 6},
    "resets mid-body": {"reset_next": 4},
    "truncated bodies": {"truncate_next": 4},
    "HTML 200": {"html_error_next": 4},
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_api_faults_are_retried_until_the_store_equals_an_uninterrupted_run(tmp_path, pg_server,
                                                                           reference, fault):
    with world(tmp_path, pg_server) as w:
        for name, value in FAULTS[fault].items():
            setattr(w.server, name, value)
        with clock.shifted(timedelta(hours=1)):
            run_invocation(IndexAll())
        for name in FAULTS[fault]:
            setattr(w.server, name, 0)
        for day in range(1, 40):  # cron, once a day, past every retry's next attempt
            with clock.shifted(timedelta(days=day)):
                run_invocation(IndexAll())
            if snapshot(w)["chunks"] == reference["chunks"]:
                break
        got = snapshot(w)
        failures = problems(w) + ([] if got["chunks"] == reference["chunks"] else ["chunks differ"])
        report = verify.run_checks(w.runtime)
        failures += [] if report.passed else ["verify failed"]
        record(f"API fault: {fault}", 1, failures, lost(reference, got), harness.duplicates(w), 0)
        assert not failures, failures


def test_a_sentinel_key_appears_in_no_channel(tmp_path, pg_server, reference):
    with world(tmp_path, pg_server, key=SENTINEL) as w:
        w.server.fail_next_5xx = 2  # errors too: their texts are a channel
        outputs = []
        for _ in range(3):  # the failed first run, then until a run is clean
            code, output = w.luigi("--log-level", "DEBUG")
            outputs.append(output)
            if code == 0:
                break
        report = verify.run_checks(w.runtime)
        cli = subprocess.run([harness.sys.executable, "-m", "pipeline.cli", "verify"],
                             env=w.env(), cwd=w.folder, capture_output=True, text=True, timeout=300)
        channels = {
            "logs and task ids": "".join(outputs),
            "state DB dump": str(snapshot(w)["state"]),
            "index DB dump": w.runtime.index_db().dump_chunks() + w.runtime.index_db().dump_state(),
            "verify output": "\n".join(report.lines()) + cli.stdout + cli.stderr,
            "files in the data folder": "".join(
                p.read_bytes().decode("latin-1") for p in w.runtime.data_dir.rglob("*")
                if p.is_file() and p.stat().st_size < 50_000_000),
        }
        leaked = [name for name, text in channels.items() if SENTINEL in text]
        assert code == 0, output[-2000:]
        record("sentinel API key in logs, task ids, state DB, index DB, verify, data files",
               len(channels), [f"leaked in {n}" for n in leaked], 0, 0, w.written_outside(),
               ok="absent from every channel")
        assert not leaked
