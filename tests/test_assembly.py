"""The one stage list (pipeline/assembly.py): the registry answers in its order, discovery
runs before every wrapper, and every task it implies is importable from ``pipeline``, by the
names the stages' declarations give."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pipeline
from pipeline import assembly, tasks
from pipeline.discover.task import DiscoverDockets
from pipeline.engine import registry
from pipeline.engine.wrapper import DocketWrapper
from tests.fixtures.paths import ROOT

ENV = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}


def fresh(statement: str) -> dict:
    """What a clean interpreter prints as JSON after ``statement`` (this checkout first)."""
    done = subprocess.run([sys.executable, "-c", statement], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**ENV, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_the_registry_answers_in_the_assemblys_order():
    assert [s for s in registry.stages() if s in assembly.STAGES] == list(assembly.STAGES)
    assert [s.name for s in assembly.STAGES] == [
        "fetch", "backfill", "extract", "ocr", "index", "campaigns", "organisations", "lineage", "topics", "sections",
        "positions"]


def test_every_wrapper_runs_the_pipelines_discovery():
    assert DocketWrapper.discovery is DiscoverDockets
    assert all(wrapper.discovery is DiscoverDockets for _, wrapper in tasks._made.values())


def test_every_task_of_every_stage_is_importable_from_pipeline():
    names = {name for stage in assembly.STAGES for name in (stage.task, stage.wrapper)}
    assert names | {"DiscoverDockets", "Redrive", "DocketStageTask", "DocketWrapper"} == set(tasks.TASK_NAMES)
    for name in tasks.TASK_NAMES:
        assert getattr(pipeline, name) is getattr(tasks, name), name
    assert set(tasks.TASK_NAMES) <= set(dir(pipeline))


def test_a_fresh_interpreter_imports_them_from_pipeline_by_name():
    found = fresh("from pipeline import LineageAll, LinkRule, TopicsAll, DiscoverDockets, Redrive; "
                  "import json; print(json.dumps([LineageAll.__module__, DiscoverDockets.__module__]))")
    assert found == ["pipeline.tasks", "pipeline.discover.task"]


def test_the_engine_imports_no_stage():
    found = fresh("import pipeline.engine.registry, pipeline.engine.wrapper, pipeline.engine.docket_task, "
                  "sys, json; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[1:2] in "
                  f"{[[s.name] for s in assembly.STAGES] + [['discover']]!r})))")
    assert found == []


def test_a_process_that_opened_only_the_runtime_gets_the_stages_on_its_first_question():
    """``docketeer explain`` asks the registry after opening the runtime alone."""
    found = fresh("import pipeline.runtime, json; from pipeline.engine import registry; "
                  "print(json.dumps(registry.names()))")
    assert found == [s.name for s in assembly.STAGES]
