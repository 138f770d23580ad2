"""A stage a spent budget stopped stays not done (PENDING, exit 20), while the later stages of
its docket work on what it got in the same run, as continuing tasks of their own."""

from __future__ import annotations

import pytest

from pipeline.engine import registry
from pipeline.runtime import set_runtime
from tests.fixtures.state_fixtures import make_runtime
from tests.fixtures.toy_commands import luigi_cmd, sqlite
from tests.fixtures.windows import SAME_WINDOW_ENV

DOCKETS = ("AB-2026-0001", "AB-2026-0002")


def processed_per_docket(tmp_path) -> dict[str, int]:
    return dict(sqlite(tmp_path, "select docket, count(*) from item_state where stage='toyprocess' "
                                 "and state='ok' group by docket"))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_stages_after_a_budget_stopped_one_work_on_what_it_got_in_the_same_run(tmp_path, workers):
    env = {"TOY_ITEMS": "5", "TOY_BUDGET": "3", **SAME_WINDOW_ENV}
    first = luigi_cmd(tmp_path, "ToyAll", "--workers", workers, **env)
    assert first.returncode == 20, first.stderr[-3000:]  # [retcode] missing_data: partial
    # The three items ToyFetch got before its budget was spent were processed in this run.
    assert dict(sqlite(tmp_path, "select docket, count(*) from item_state where stage='toyfetch' "
                                 "group by docket")) == dict.fromkeys(DOCKETS, 3)
    assert processed_per_docket(tmp_path) == dict.fromkeys(DOCKETS, 3)
    lines = [x for x in first.stderr.splitlines() if x.startswith("INFO: toyprocess AB-2026-")]
    assert len(lines) == 2 and all("processed=3 " in x and x.endswith(
        " — on what toyfetch got so far; toyfetch continues next run") for x in lines), lines
    summary = first.stderr.split("Execution Summary")[1]
    succeeded = summary.split("ran successfully:")[1].split("\n* ")[0]
    for docket in DOCKETS:
        assert f"ToyProcess(docket={docket}, version=, continuing=toyfetch," in succeeded, summary
        assert f"ToyFetch(docket={docket}," not in succeeded  # the stopped stage: not done
        assert f"ToyProcess(docket={docket}, version=, continuing=," not in succeeded
        assert f"{docket}: not done: toyfetch partial: budget spent, continues next run" in summary
    assert "not granted run permission" not in summary
    # No marker vouches for work on part of the input.
    assert sqlite(tmp_path, "select count(*) from docket_stage") == [(0,)]

    second = luigi_cmd(tmp_path, "ToyAll", "--workers", workers, **env)
    assert second.returncode == 0, second.stderr[-3000:]
    assert processed_per_docket(tmp_path) == dict.fromkeys(DOCKETS, 5)
    lines = [x for x in second.stderr.splitlines() if x.startswith("INFO: toyprocess AB-2026-")]
    assert len(lines) == 2 and all("processed=2 " in x and "skipped=3 " in x for x in lines), lines
    assert sorted(sqlite(tmp_path, "select stage, docket from docket_stage")) == sorted(
        (stage, docket) for stage in ("toyfetch", "toyprocess") for docket in DOCKETS)

    third = luigi_cmd(tmp_path, "ToyAll", "--workers", workers, **env)
    assert third.returncode == 0 and "Did not run any tasks" in third.stderr, third.stderr[-3000:]


def test_a_continuing_task_that_spends_its_own_budget_is_partial_too(tmp_path):
    env = {"TOY_ITEMS": "5", "TOY_BUDGET": "3", "TOY_PROCESS_BUDGET": "2", **SAME_WINDOW_ENV}
    first = luigi_cmd(tmp_path, "ToyAll", "--docket", DOCKETS[0], **env)
    assert first.returncode == 20, first.stderr[-3000:]
    assert processed_per_docket(tmp_path) == {DOCKETS[0]: 2}
    [line] = [x for x in first.stderr.splitlines() if x.startswith(f"INFO: toyprocess {DOCKETS[0]}")]
    assert (" — on what toyfetch got so far; toyfetch continues next run — partial: budget spent, "
            "continues next run (toy budget spent (2 items); ") in line, line
    summary = first.stderr.split("Execution Summary")[1]
    assert "ran successfully:" not in summary or "continuing=toyfetch" not in summary.split(
        "ran successfully:")[1].split("\n* ")[0], summary
    assert (f"{DOCKETS[0]}: not done: toyfetch partial: budget spent, continues next run (left: "
            "the rest of the docket's toyfetch); toyprocess partial: budget spent") in summary, summary
    # Two more runs: fetch finishes, then the process its last item; then nothing is left.
    assert luigi_cmd(tmp_path, "ToyAll", "--docket", DOCKETS[0], **env).returncode == 20
    assert luigi_cmd(tmp_path, "ToyAll", "--docket", DOCKETS[0], **env).returncode == 0
    assert processed_per_docket(tmp_path) == {DOCKETS[0]: 5}
    assert sqlite(tmp_path, "select count(*) from docket_stage") == [(2,)]


def test_a_continuing_task_is_named_by_the_stage_it_continues_and_runs_from_its_label(tmp_path):
    """The visualiser's "Command to re-run" names a task by its label: a continuing task's
    label runs that task (on what exists, no marker), and a stage it cannot continue is
    one line and exit 2."""
    env = {"TOY_ITEMS": "4", "TOY_BUDGET": "2", **SAME_WINDOW_ENV}
    assert luigi_cmd(tmp_path, "ToyFetchAll", "--docket", DOCKETS[0], **env).returncode == 20
    rerun = luigi_cmd(tmp_path, f"ToyProcess.{DOCKETS[0]}.continuing-toyfetch", "--docket", DOCKETS[0],
                      "--continuing", "toyfetch", **env)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert processed_per_docket(tmp_path) == {DOCKETS[0]: 2}
    assert sqlite(tmp_path, "select count(*) from docket_stage") == [(0,)]
    wrong = luigi_cmd(tmp_path, "ToyFetch", "--docket", DOCKETS[0], "--continuing", "toyprocess", **env)
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr, wrong.stderr[-3000:]
    assert "--continuing toyprocess: give stages toyfetch requires (none), or leave it out" in wrong.stderr


def test_which_stages_continue_a_stopped_one_follows_the_chain_and_what_the_run_asked(tmp_path):
    import pipeline  # noqa: F401 - registers the pipeline's stages

    rt = make_runtime(tmp_path, ocr="false", organisations="true")
    set_runtime(rt)
    settings = rt.settings

    def names(stages):
        return [s.name for s in stages]

    everything = {"index", "campaigns", "organisations", "lineage", "topics"}
    assert names(registry.continuation("backfill", everything, settings)) == [
        "extract", "index", "campaigns", "organisations", "lineage", "topics"]
    # A run that asked for the index only: the stages between, not the follow-ons; and none
    # after a stage nothing asked reads from.
    assert names(registry.continuation("backfill", {"index"}, settings)) == ["extract", "index"]
    assert names(registry.continuation("backfill", {"backfill"}, settings)) == []
    assert names(registry.continuation("index", everything, settings)) == ["campaigns", "topics"]
    # A task continues the stops it requires, up to the last: topics after backfill, then
    # the index, stopped: its organisations task is the one continuing backfill.
    topics, organisations = registry.get("topics"), registry.get("organisations")
    assert registry.continued(topics, ("backfill", "index"), settings) == ("backfill", "index")
    assert registry.continued(organisations, ("backfill", "index"), settings) == ("backfill",)
    assert registry.continued(organisations, ("index",), settings) == ()
