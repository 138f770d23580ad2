"""Kill trials of the derived stages (campaigns, organisations, lineage, topics, positions): a forced
run of one, SIGKILLed just before its N-th state-DB write (N drawn over the writes an
uninterrupted forced run makes), then one `IndexAll`; and three forced runs of one at once,
then one `IndexAll`. Each must leave every derived table, item state and marker equal to an
uninterrupted run's, and `verify` passing: a kill leaves the old rows or the new ones, never
a mix, never a marker over missing rows; overlapping runs take turns."""

from __future__ import annotations

import os
import re
import signal

import pytest

from pipeline.ops import verify
from pipeline.store.db import KILL_AT_WRITE
from tests.fixtures.derived_rows import derived_rows
from tests.fixtures.state_fixtures import new_pg_database
from tests.fixtures.trials import trials
from tests.reliability import harness
from tests.reliability.harness import record, world

WRAPPERS = {"campaigns": "CampaignsAll", "organisations": "OrganisationsAll", "lineage": "LineageAll",
            "topics": "TopicsAll", "positions": "PositionsAll"}
# Sixty comments of eight planted topics make a topic map (the default asks for 100 comments):
# the trial's runs and its own runtime (verify judges the topics' markers by the same terms)
# share the setting.
COMMENTS = 60
SETTINGS = {"topic_min_comments": 2}
ENV = {f"DOCKETEER_{k.upper()}": str(v) for k, v in SETTINGS.items()}
TASKS = {"campaigns": "CampaignGroups", "topics": "TopicMap"}
OVERLAPPING = 3


def _writes_said(stage: str, output: str) -> int:
    """The state-DB writes a forced run of the stage made, as its hook's count line says."""
    said = re.search(rf"{KILL_AT_WRITE}: {stage} made (\d+) state-DB writes", output)
    assert said, output[-2000:]
    return int(said.group(1))


def _differences(reference: dict, got: dict) -> list[str]:
    return [f"{table}: {len(set(reference[table]) - set(got[table]))} rows lost, "
            f"{len(set(got[table]) - set(reference[table]))} rows not in an uninterrupted run's"
            for table in reference if reference[table] != got[table]]


def _checked(w, reference: dict, code: int, output: str) -> list[str]:
    # The killed process's scratch folder stays until a run that has work (a docket task
    # removes dead runs' leftovers when it starts); an IndexAll that finds everything done
    # has none, which is what a kill that lost nothing leaves.
    found = [p for p in harness.problems(w) if not p.startswith("leftovers in ")]
    found += [] if code == 0 else [f"IndexAll exit {code}: {output[-300:]}"]
    found += _differences(reference, derived_rows(w.runtime))
    report = verify.run_checks(w.runtime)
    found += [] if report.passed else ["verify failed: " + "; ".join(report.lines())[:300]]
    return found


@pytest.mark.parametrize("stage", sorted(WRAPPERS))
def test_a_forced_derived_stage_killed_at_a_write_is_made_whole_by_one_index_all(tmp_path, pg_server, stage):
    _kill_trials(tmp_path, pg_server, stage)


@pytest.mark.parametrize("stage", ["campaigns", "topics"])
def test_the_same_on_a_postgresql_state_db(tmp_path, pg_server, stage, s3_endpoint, s3_client,
                                           s3_credentials_env):
    bucket = f"derived-{os.getpid()}-{stage}"  # a shared state DB wants shared blobs
    s3_client.create_bucket(Bucket=bucket)
    _kill_trials(tmp_path, pg_server, stage, state_url=new_pg_database(pg_server),
                 blob_url=f"s3://{bucket}/blobs", s3_endpoint_url=s3_endpoint)


def _kill_trials(tmp_path, pg_server, stage: str, **shared) -> None:
    count = trials(default=1, full=6)
    failures, lost, killed, draws = [], 0, 0, []
    where = " on a PostgreSQL state DB" if shared else ""
    with world(tmp_path, pg_server, comments=COMMENTS, **shared, **SETTINGS) as w:
        code, output = w.luigi(**ENV)
        assert code == 0, output[-2000:]
        reference = derived_rows(w.runtime)
        # An uninterrupted forced run: the same rows again, and how many writes it makes.
        code, output = w.luigi("--force", task=WRAPPERS[stage], DOCKETEER_TEST_KILL_AT_WRITE=f"{stage}:count",
                               **ENV)
        assert code == 0, output[-2000:]
        assert derived_rows(w.runtime) == reference, _differences(reference, derived_rows(w.runtime))
        writes = _writes_said(stage, output)
        assert writes > 2, f"{stage}: the forced run wrote nothing ({writes})"
        rng = harness.rng(sum(map(ord, stage)))
        for _ in range(count):
            at = rng.randint(1, writes)
            draws.append(at)
            code, output = w.luigi("--force", task=WRAPPERS[stage], DOCKETEER_TEST_KILL_AT_WRITE=f"{stage}:{at}",
                                   **ENV)
            killed += code == -signal.SIGKILL
            rerun, rerun_output = w.luigi(**ENV)
            found = _checked(w, reference, rerun, rerun_output)
            failures += [f"{stage} killed at write {at} of {writes} (exit {code}): {p}" for p in found]
            got = derived_rows(w.runtime)
            lost += sum(len(set(reference[t]) - set(got[t])) for t in reference)
            if found:  # the next trial would start from a broken store
                break
    record(f"SIGKILL at the Nth state-DB write of a forced {stage} run{where} (N in 1..{writes}: "
           f"{', '.join(map(str, draws))}), one IndexAll", len(draws), failures, lost, 0, 0,
           ok=f"all equal to an uninterrupted run, verify passed ({killed} of {len(draws)} killed)")
    assert killed == len(draws) or failures, f"the hook fired in {killed} of {len(draws)} trials"
    assert not failures, failures[:5]


@pytest.mark.parametrize("stage", ["campaigns", "topics"])
def test_overlapping_forced_runs_of_a_derived_stage_take_turns(tmp_path, pg_server, stage):
    count = trials(default=1, full=3)
    failures, lost = [], 0
    with world(tmp_path, pg_server, comments=COMMENTS, **SETTINGS) as w:
        code, output = w.luigi(**ENV)
        assert code == 0, output[-2000:]
        reference = derived_rows(w.runtime)
        for trial in range(count):
            # Three different commands (the same command twice is refused by its own lock).
            commands = [(WRAPPERS[stage], ("--force",)), (WRAPPERS[stage], ("--force", "--docket", w.docket)),
                        (TASKS[stage], ("--force", "--docket", w.docket))]
            together = [w.luigi(*args, task=task, wait=False, **ENV) for task, args in commands]
            for process in together:  # one that finds the lease held steps aside: exit 20, held
                _, err = process.communicate(timeout=300)
                stepped_aside = process.returncode == 20 and "HeldByAnotherRun(" in err
                if not (process.returncode == 0 or stepped_aside) or "Traceback" in err:
                    failures.append(f"trial {trial}: a forced run exit {process.returncode}: {err[-300:]}")
            rerun, rerun_output = w.luigi(**ENV)
            failures += [f"trial {trial}: {p}" for p in _checked(w, reference, rerun, rerun_output)]
            got = derived_rows(w.runtime)
            lost += sum(len(set(reference[t]) - set(got[t])) for t in reference)
    record(f"{OVERLAPPING} forced {stage} runs at once, then one IndexAll", count, failures, lost, 0, 0,
           ok="all equal to an uninterrupted run, verify passed")
    assert not failures, failures[:5]
