"""`docketeer verify` holds each derived stage's rows to its marker: in a docket whose marker
says done, rows that disagree with the stage's item states (a membership lost, a campaign's
size, a member's band rows, a topic's counts, an organisation's or a tie's rows) fail the
check named after the stage."""

from __future__ import annotations

import pytest

from pipeline.ops import verify
from pipeline.store.models import (
    Campaign,
    CampaignBand,
    CampaignMember,
    LineageComment,
    OrganisationMember,
    Topic,
    database,
)
from pipeline.tasks import IndexAll
from tests.fixtures.derived_store import derived_runtime, index_database, served_corpus
from tests.fixtures.state_fixtures import run_invocation

pytestmark = pytest.mark.postgres


class Undone(Exception):
    """Rolls the damage back after the check."""


def _failed_checks(rt, damage) -> dict[str, list[str]]:
    """The checks that fail with ``damage`` done to the store (undone afterwards)."""
    try:
        with database.atomic():
            damage()
            report = verify.run_checks(rt)
            raise Undone(report)
    except Undone as undone:
        report = undone.args[0]
    return {c.name: c.problems for c in report.checks if not c.ok and not c.warning_only}


def _first(model, *where):
    query = model.select().where(*where) if where else model.select()
    row = query.order_by(*model._meta.sorted_fields).first()
    assert row is not None, f"no {model._meta.table_name} row to damage"
    return row


def test_verify_names_the_derived_stage_whose_rows_disagree_with_its_marker(tmp_path, pg_server):
    with served_corpus(tmp_path) as (server, docket):
        with derived_runtime(tmp_path, server, index_database(pg_server)) as rt:
            rt.state  # noqa: B018 - open and create the schema
            assert run_invocation(IndexAll(docket=docket))
            report = verify.run_checks(rt)
            assert report.passed, report.lines()
            names = {c.name for c in report.checks}
            assert {"campaigns rows", "organisations rows", "lineage rows", "topics rows"} <= names

            member = _first(CampaignMember)
            banded = _first(CampaignMember, CampaignMember.banding.is_null(False))
            campaign = _first(Campaign)
            topic = _first(Topic, Topic.comments > 0)
            named = _first(OrganisationMember)
            tie = _first(LineageComment)
            damages = {
                "campaigns rows": [
                    lambda: CampaignMember.delete().where(CampaignMember.item == member.item).execute(),
                    lambda: Campaign.update(size=campaign.size + 1).where(Campaign.id == campaign.id).execute(),
                    lambda: CampaignBand.delete().where(CampaignBand.item == banded.item).execute(),
                ],
                "topics rows": [
                    lambda: Topic.update(comments=0, submissions=0, share=0.0).where(Topic.id == topic.id).execute(),
                    lambda: Topic.update(organisations=0).where(Topic.docket == docket).execute(),
                ],
                "organisations rows": [
                    lambda: OrganisationMember.delete().where(OrganisationMember.item == named.item).execute(),
                ],
                "lineage rows": [lambda: LineageComment.delete().where(LineageComment.item == tie.item).execute()],
            }
            for stage_check, ways in damages.items():
                for n, damage in enumerate(ways):
                    failed = _failed_checks(rt, damage)
                    assert stage_check in failed, (stage_check, n, failed)
                    assert all(f" {stage_check.split()[0]}: " in p for p in failed[stage_check]), failed
            assert verify.run_checks(rt).passed  # every damage was undone
