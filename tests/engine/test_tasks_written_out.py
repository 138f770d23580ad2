"""The Luigi tasks of the pipeline's stages are written out in pipeline/tasks.py, under the
names their declarations give, and are the ones the engine and ``stage_tasks`` hand out."""

from __future__ import annotations

import ast

import luigi

from pipeline import tasks
from pipeline.engine import registry
from pipeline.engine.docket_task import DocketStageTask, task_of
from pipeline.engine.wrapper import DocketWrapper
from pipeline.runtime import set_runtime
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import make_runtime


def pipeline_stages():
    """The pipeline's own stages (tests may have registered stages of their own)."""
    return [stage for stage in registry.stages() if stage.run.__module__.startswith("pipeline.")]


def test_every_declared_stage_has_its_two_tasks_written_out_under_its_names():
    assert [stage.name for stage in pipeline_stages()] == [
        "fetch", "backfill", "extract", "ocr", "index", "campaigns", "organisations", "lineage", "topics",
        "sections", "positions"]
    for stage in pipeline_stages():
        task, wrapper = getattr(tasks, stage.task), getattr(tasks, stage.wrapper)
        assert issubclass(task, DocketStageTask) and issubclass(wrapper, DocketWrapper)
        assert (task.stage, wrapper.stage_task) == (stage, task)
        assert (task.__module__, wrapper.__module__) == ("pipeline.tasks", "pipeline.tasks")
        assert (task.get_task_family(), wrapper.get_task_family()) == (stage.task, stage.wrapper)
        assert task.__doc__ == stage.doc
        assert tasks.stage_tasks(stage) == (task, wrapper) and task_of(stage) is task


def test_luigi_finds_each_by_its_name_and_a_yielded_task_by_the_same(tmp_path):
    set_runtime(make_runtime(tmp_path))
    for stage in pipeline_stages():
        assert luigi.task_register.Register.get_task_cls(stage.task) is getattr(tasks, stage.task)
        assert luigi.task_register.Register.get_task_cls(stage.wrapper) is getattr(tasks, stage.wrapper)
    yielded = tasks.IndexDocket(docket="ACF-2026-0001").as_dynamic_dependency()
    assert yielded.task_family == "IndexDocket" and isinstance(yielded, tasks.IndexDocket)
    assert yielded.task_id == tasks.IndexDocket(docket="ACF-2026-0001").task_id
    assert type(yielded) is type(tasks.IndexDocket(docket="AB-2026-0002").as_dynamic_dependency())  # made once


def test_a_docket_task_requires_its_upstreams_written_out_task(tmp_path):
    set_runtime(make_runtime(tmp_path))
    required = tasks.IndexDocket(docket="ACF-2026-0001").requires()
    assert type(required) in (tasks.OcrText, tasks.ExtractText)


def test_a_reader_finds_each_class_statement_in_the_tasks_module():
    """``grep -n "^class IndexAll" pipeline/`` finds it: the classes are statements, not made."""
    source = (ROOT / "pipeline" / "tasks.py").read_text(encoding="utf-8")
    written = {node.name for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}
    assert {name for stage in pipeline_stages() for name in (stage.task, stage.wrapper)} <= written


def test_the_organisations_task_requires_backfill_whose_fields_it_reads(tmp_path):
    set_runtime(make_runtime(tmp_path))
    assert type(tasks.ResolveOrganisations(docket="ACF-2026-0001").requires()) is tasks.BackfillComments
