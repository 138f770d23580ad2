"""The Luigi tasks users run: two per stage, one over a docket and one over every docket.

``FetchComments`` ... ``IndexDocket`` run one stage for one docket; ``FetchAll`` ...
``IndexAll`` run it for every known docket with work (after discovery), or the named ones:
the names users type (``luigi --module pipeline IndexAll``) and the visualiser shows. What
each does is its stage's (``pipeline.<stage>.stage``); how a task runs and says it is done
is the engine's (``pipeline.engine``); which stages there are, in which order, is the
assembly's (``pipeline.assembly``), and the names this module exports (``TASK_NAMES``, which
``pipeline`` exports too) follow from it. A stage declared outside the pipeline gets its two
tasks from ``stage_tasks``.
"""

from __future__ import annotations

import types

import pipeline.runtime  # noqa: F401 - hands the engine how to open the process's runtime
from pipeline import assembly
from pipeline.backfill import stage as backfill
from pipeline.campaigns import stage as campaigns
from pipeline.discover.task import DiscoverDockets
from pipeline.engine.docket_task import DocketStageTask, runtime_or_exit
from pipeline.engine.stage import Stage
from pipeline.engine.wrapper import DocketWrapper
from pipeline.extract import stage as extract
from pipeline.fetch import stage as fetch
from pipeline.index import stage as index
from pipeline.lineage import stage as lineage
from pipeline.ocr import stage as ocr
from pipeline.ops.redrive import Redrive
from pipeline.organisations import stage as organisations
from pipeline.positions import stage as positions
from pipeline.sections import stage as sections
from pipeline.topics import stage as topics


class FetchComments(DocketStageTask):
    __doc__ = fetch.DECLARATION.doc
    stage = fetch.DECLARATION


class FetchAll(DocketWrapper):
    """FetchComments for every known docket (after discovery), or the named ones."""

    stage_task = FetchComments


class BackfillComments(DocketStageTask):
    __doc__ = backfill.DECLARATION.doc
    stage = backfill.DECLARATION


class BackfillAll(DocketWrapper):
    """BackfillComments for every known docket (after discovery), or the named ones."""

    stage_task = BackfillComments


class ExtractText(DocketStageTask):
    __doc__ = extract.DECLARATION.doc
    stage = extract.DECLARATION


class ExtractAll(DocketWrapper):
    """ExtractText for every known docket (after discovery), or the named ones."""

    stage_task = ExtractText


class OcrText(DocketStageTask):
    __doc__ = ocr.DECLARATION.doc
    stage = ocr.DECLARATION


class OcrAll(DocketWrapper):
    """OcrText for every known docket (after discovery), or the named ones."""

    stage_task = OcrText


class IndexDocket(DocketStageTask):
    __doc__ = index.DECLARATION.doc
    stage = index.DECLARATION


class CampaignGroups(DocketStageTask):
    __doc__ = campaigns.DECLARATION.doc
    stage = campaigns.DECLARATION


class CampaignsAll(DocketWrapper):
    """CampaignGroups for every known docket (after discovery), or the named ones."""

    stage_task = CampaignGroups


class IndexAll(DocketWrapper):
    """IndexDocket for every known docket (after discovery), or the named ones; then the
    follow-on stages whose settings are on (``FOLLOW_ON``: campaigns by default) for them too."""

    stage_task = IndexDocket

    def follow_ons(self) -> list[DocketWrapper]:
        """The follow-on wrappers this run also requires, those whose settings are all on (the
        same dockets and budgets; never forced: ``--force`` on IndexAll re-indexes, and a
        follow-on reads its own inputs, not the index)."""
        settings = runtime_or_exit().settings
        return [wrapper(docket=self.docket, budget_seconds=self.budget_seconds,
                        request_budget=self.request_budget, invocation=self.invocation)
                for wrapper, names in follow_on_stages()
                if all(getattr(settings, name) for name in names)]

    def judged_with(self, version: int) -> list[tuple[type[DocketStageTask], int]]:
        # The follow-on stages are judged with the index: one read per store for the run.
        return [*super().judged_with(version),
                *((wrapper.stage_task, wrapper.asked_version()) for wrapper in self.follow_ons())]

    def requires(self):
        # The follow-on tasks themselves, not their wrappers: a wrapper judges its dockets once
        # per invocation, so as a dependency it would still say "not done" after they ran.
        required = super().requires()
        for wrapper in self.follow_ons():
            required = [*required, *(task for task in wrapper.requires()
                                     if isinstance(task, wrapper.stage_task))]
        return required

    def complete(self) -> bool:
        if not super().complete():
            return False
        return not any(wrapper.docket_tasks() for wrapper in self.follow_ons())

    def run(self):
        if not self.named():  # named dockets' tasks were required, so they are done by now
            tasks = [*self.docket_tasks()]
            for wrapper in self.follow_ons():
                tasks.extend(wrapper.docket_tasks())
            yield [task.as_dynamic_dependency() for task in tasks]
        yield from self.report_unfinished()


class ResolveOrganisations(DocketStageTask):
    __doc__ = organisations.DECLARATION.doc
    stage = organisations.DECLARATION


class OrganisationsAll(DocketWrapper):
    """ResolveOrganisations for every known docket (after discovery), or the named ones."""

    stage_task = ResolveOrganisations


class LinkRule(DocketStageTask):
    __doc__ = lineage.DECLARATION.doc
    stage = lineage.DECLARATION


class LineageAll(DocketWrapper):
    """LinkRule for every known docket (after discovery), or the named ones."""

    stage_task = LinkRule


class TopicMap(DocketStageTask):
    __doc__ = topics.DECLARATION.doc
    stage = topics.DECLARATION


class TopicsAll(DocketWrapper):
    """TopicMap for every known docket (after discovery), or the named ones."""

    stage_task = TopicMap


class DocumentSections(DocketStageTask):
    __doc__ = sections.DECLARATION.doc
    stage = sections.DECLARATION


class DocumentSectionsAll(DocketWrapper):
    """DocumentSections for every known docket (after discovery), or the named ones."""

    stage_task = DocumentSections


class Positions(DocketStageTask):
    __doc__ = positions.DECLARATION.doc
    stage = positions.DECLARATION


class PositionsAll(DocketWrapper):
    """Positions for every known docket (after discovery), or the named ones."""

    stage_task = Positions


_made: dict[str, tuple[type[DocketStageTask], type[DocketWrapper]]] = {  # stage name -> tasks
    stage.name: (globals()[stage.task], globals()[stage.wrapper]) for stage in assembly.STAGES}

__all__ = ["DiscoverDockets", "DocketStageTask", "DocketWrapper", "Redrive", "runtime_or_exit", "stage_tasks"]
# Each stage's two tasks, by the names its declaration gives, in pipeline order.
STAGE_TASK_NAMES: tuple[str, ...] = tuple(
    name for stage in assembly.STAGES for name in (stage.task, stage.wrapper))
__all__ += STAGE_TASK_NAMES
# Every task class ``luigi --module pipeline`` offers (``pipeline`` exports them too):
# discovery, Redrive, the engine's two bases, and each stage's two.
TASK_NAMES: tuple[str, ...] = tuple(name for name in __all__ if name[0].isupper())


def follow_on_stages() -> list[tuple[type[DocketWrapper], tuple[str, ...]]]:
    """The stages ``IndexAll`` runs after indexing, each with the settings that must all be on
    for it to: one list, so a new follow-on stage is one line here and one setting."""
    return [(CampaignsAll, ("campaigns",)), (OrganisationsAll, ("organisations",)), (LineageAll, ("lineage",)),
            (TopicsAll, ("topics", "campaigns")), (DocumentSectionsAll, ("sections",)),
            (PositionsAll, ("positions", "campaigns"))]


def stage_tasks(stage: Stage, module: str = __name__) -> tuple[type[DocketStageTask], type[DocketWrapper]]:
    """The stage's task over one docket and its wrapper: the pipeline's own above, or, for a
    stage declared outside the pipeline, made on first ask (Luigi knows a task by its class
    name: each is made once per process). ``module`` is where Luigi finds them again (it
    imports it to rebuild a yielded task): the module that asks."""
    if stage.name not in _made:
        task = types.new_class(stage.task, (DocketStageTask,), exec_body=lambda ns: ns.update(
            stage=stage, __doc__=stage.doc, __module__=module))
        wrapper = types.new_class(stage.wrapper, (DocketWrapper,), exec_body=lambda ns: ns.update(
            stage_task=task, __module__=module,
            __doc__=f"{stage.task} for every known docket (after discovery), or the named ones."))
        _made[stage.name] = (task, wrapper)
    return _made[stage.name]

