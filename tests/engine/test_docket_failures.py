"""A stage that raises for one docket of two: that docket stage's failure is recorded with its
reason and shown by `docketeer dockets` and `stats`, the status page and the docket page; the
other docket is done; the next clean run of the stage clears it. (The exit code and the log
line: tests/engine/test_core_luigi_cli.py; the visualiser: tests/engine/test_luigid.py.)"""

from __future__ import annotations

import html

import pytest

from pipeline.engine import markers
from pipeline.ops import cli
from pipeline.store import docket_failures, dockets
from pipeline.store.models import Run
from tests.fixtures.core_stages import TOYPROCESS, ToyAll, ToyProcess
from tests.fixtures.state_fixtures import installed, make_runtime
from tests.fixtures.state_fixtures import run_invocation as build
from tests.fixtures.web_fixtures import page_client

A, B = "AB-2026-0001", "AB-2026-0002"
REASON = f"RuntimeError: toy failure in {B}"


def printed(capsys, *argv: str) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def line_of(text: str, docket: str) -> str:
    [line] = [x for x in text.splitlines() if x.startswith(docket)]
    return line


@pytest.fixture
def failed_once(state, monkeypatch):
    dockets.ensure_dockets([A, B], "list")
    monkeypatch.setenv("TOY_FAIL", B)
    assert build(ToyAll())
    monkeypatch.delenv("TOY_FAIL")
    return state


def test_the_failure_is_recorded_and_the_other_docket_done(failed_once):
    assert markers.read_marker(A, "toyprocess") is not None
    assert markers.read_marker(B, "toyprocess") is None  # no marker: the next run tries again
    assert markers.read_marker(B, "toyfetch") is not None  # its other stages are unaffected
    [failure] = docket_failures.current()
    assert (failure.docket, failure.stage, failure.reason, failure.attempts) == (B, "toyprocess", REASON, 1)
    assert failure.first_failed_at == failure.failed_at


def test_dockets_and_stats_show_the_reason_until_the_stage_runs_clean(failed_once, capsys):
    shown = printed(capsys, "dockets")
    assert shown.splitlines()[0].rstrip().endswith("failed")
    assert f"toyprocess: {REASON} (" in line_of(shown, B)
    assert line_of(shown, A).rstrip().endswith(" -")
    stats = printed(capsys, "stats")
    assert "docket stages that failed (no marker; the next run tries again):" in stats
    failed_row = line_of(stats.split("docket stages that failed")[1], B)
    assert "toyprocess" in failed_row and failed_row.rstrip().endswith(REASON)
    assert "docket stages that failed" not in printed(capsys, "stats", "--docket", A)

    assert build(ToyAll())  # the cause gone: the stage runs clean and its failure is cleared
    assert docket_failures.current() == []
    assert line_of(printed(capsys, "dockets"), B).rstrip().endswith(" -")
    assert "docket stages that failed" not in printed(capsys, "stats")


def test_the_status_and_docket_pages_show_the_reason_until_the_stage_runs_clean(failed_once):
    with page_client(failed_once) as client:
        status = html.unescape(client.get("/status").text)
        assert f'<a href="/docket/{B}#problems">{B}</a>' in status
        assert f'<td class="reason">{REASON}</td>' in status
        assert "Nothing failed and nothing waits." not in status
        page = html.unescape(client.get(f"/docket/{B}").text)
        assert f'<td class="reason">{REASON}</td>' in page and "stage failed" in page
        assert "Nothing failed and nothing waits." in client.get(f"/docket/{A}").text

        assert build(ToyAll())
        assert "Nothing failed and nothing waits." in client.get("/status").text
        assert REASON not in html.unescape(client.get(f"/docket/{B}").text)


def test_the_reason_is_one_line_with_every_secret_masked(tmp_path, monkeypatch):
    import dataclasses

    key = "sekret-key-123"
    runtime = make_runtime(tmp_path, api_key=key)
    runtime.state  # noqa: B018 - open and create the schema

    def leaks(ctx, docket):
        raise RuntimeError(f"GET https://api.example/v4?api_key={key}\n  refused")

    with installed(runtime):
        dockets.ensure_dockets([A], "list")
        monkeypatch.setattr(ToyProcess, "stage", dataclasses.replace(TOYPROCESS, run=leaks))
        assert build(ToyAll())
        [failure] = docket_failures.current()
        assert failure.reason == "RuntimeError: GET https://api.example/v4?api_key=*** refused"
        failed_run = Run.get((Run.docket == A) & (Run.stage == "toyprocess"))
        assert failed_run.message == failure.reason and failed_run.clean is False


def test_a_stage_that_keeps_its_work_but_cannot_finish_fails_that_docket_stage_too(sqlite_state, monkeypatch):
    """A walk broken off by a server error: its work is kept, no marker, one failure with the
    stage's own reason, no exception out of run() (it used to fail the task: exit 30)."""
    import dataclasses

    from pipeline.engine.stage import StageResult

    def breaks_off(ctx, docket):
        if docket.id == B:
            return StageResult(counts={"processed": 1}, clean=False, message=f"walk of {B} broke off: HTTP 503")
        return TOYPROCESS.run(ctx, docket)

    dockets.ensure_dockets([A, B], "list")
    monkeypatch.setattr(ToyProcess, "stage", dataclasses.replace(TOYPROCESS, run=breaks_off))
    assert build(ToyAll())
    assert markers.read_marker(A, "toyprocess") is not None and markers.read_marker(B, "toyprocess") is None
    assert [(f.docket, f.reason) for f in docket_failures.current()] == [(B, f"walk of {B} broke off: HTTP 503")]
    monkeypatch.undo()
    assert build(ToyAll())
    assert docket_failures.current() == [] and markers.read_marker(B, "toyprocess") is not None


@pytest.mark.postgres
def test_index_all_goes_on_when_the_topic_map_raises_for_one_docket(tmp_path, pg_server, monkeypatch, capsys):
    """The case met on real data: TopicMap raised inside HDBSCAN for one docket and IndexAll
    failed every run while every surface said nothing failed."""
    import dataclasses

    from pipeline.tasks import TopicMap
    from tests.fixtures.pipeline_fixtures import built_store

    with built_store(tmp_path, pg_server, dockets=2, comments=4, build=False) as store:
        good, bad = store.dockets
        real = TopicMap.stage
        crash = "ValueError: min_samples (5) must be at most the number of samples in X (4)"

        def raises_for_one(ctx, docket):
            if docket.id == bad:
                raise ValueError(crash.removeprefix("ValueError: "))
            return real.run(ctx, docket)

        monkeypatch.setattr(TopicMap, "stage", dataclasses.replace(real, run=raises_for_one))
        assert store.run()  # no task failed: the docket stage's failure is recorded
        assert markers.read_marker(good, "topics") is not None and markers.read_marker(bad, "topics") is None
        assert all(markers.read_marker(d, "campaigns") is not None for d in store.dockets)
        assert [(f.docket, f.stage, f.reason) for f in docket_failures.current()] == [(bad, "topics", crash)]
        assert f"topics: {crash}" in line_of(printed(capsys, "dockets"), bad)

        monkeypatch.setattr(TopicMap, "stage", real)
        assert store.run()  # the cause gone, the next run maps it and clears the failure
        assert markers.read_marker(bad, "topics") is not None
        assert docket_failures.current() == []
