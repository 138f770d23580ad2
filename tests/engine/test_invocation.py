"""What one `luigi` command run shares travels with its tasks as an Invocation: never in a
task id, rebuilt from Luigi's string parameters, and nothing of it outlives its run."""

from __future__ import annotations

from pipeline.engine.invocation import Invocation
from tests.fixtures.core_stages import ToyAll, ToyProcess

A = "AB-2026-0001"


def test_a_task_keeps_its_invocation_through_luigis_string_parameters(sqlite_state):
    run = Invocation()
    task = ToyProcess(docket=A, invocation=run)
    assert task.task_id == ToyProcess(docket=A).task_id  # not part of what the task is
    rebuilt = ToyProcess.from_str_params(task.to_str_params())  # as a yielded task comes back
    assert rebuilt.invocation is run
    assert ToyProcess(docket=A, invocation=Invocation()) is not task  # a new run: a new object


def test_budgets_given_to_a_wrapper_are_this_runs_settings(sqlite_state):
    run = Invocation()
    ToyAll(docket=A, request_budget=5, invocation=run).docket_tasks()
    settings = run.settings(sqlite_state.settings)
    assert settings.request_budget == 5
    assert settings.budget_seconds == sqlite_state.settings.budget_seconds  # None: not given
    assert Invocation().settings(sqlite_state.settings) is sqlite_state.settings


def test_shared_reads_start_with_a_wrapper_and_end_with_the_run():
    run, loads = Invocation(), []

    def load():
        loads.append(1)
        return {"markers": len(loads)}

    assert run.read_shared("k", load) is None  # no wrapper yet: a task reads its own row
    run.note_scheduled({A: None})
    assert run.read_shared("k", load) == run.read_shared("k", load) == {"markers": 1}
    run.forget("k")  # this process wrote a marker: read again
    assert run.read_shared("k", load) == {"markers": 2}
    assert Invocation().read_shared("k", load) is None


def test_force_resolves_one_version_per_stage_and_run():
    run, asked = Invocation(), []
    for _ in range(3):
        run.forced_version("extract", lambda: asked.append(1) or 7)
    assert run.forced_version("extract", lambda: 9) == 7 and asked == [1]
    assert Invocation().forced_version("extract", lambda: 9) == 9
