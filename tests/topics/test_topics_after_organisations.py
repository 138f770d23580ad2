"""Topics read the organisations' rows (each topic's organisation count), so its task
requires the organisations task: a topic map made where organisations never ran counts the
organisations its members name, not 0."""

from __future__ import annotations

import pytest

from pipeline.store.models import OrganisationMember, Topic
from pipeline.tasks import IndexAll, TopicMap, TopicsAll
from pipeline.topics import consistency, queries
from tests.fixtures.derived_store import derived_runtime, index_database, served_corpus
from tests.fixtures.state_fixtures import run_invocation

pytestmark = pytest.mark.postgres


def test_topics_run_before_organisations_ever_ran_count_the_organisations(tmp_path, pg_server):
    index_url = index_database(pg_server)
    with served_corpus(tmp_path) as (server, docket):
        with derived_runtime(tmp_path, server, index_url, organisations="false", topics="false") as rt:
            rt.state  # noqa: B018 - open and create the schema
            assert run_invocation(IndexAll(docket=docket))
            assert not OrganisationMember.select().exists()  # organisations never ran
        with derived_runtime(tmp_path, server, index_url) as rt:
            rt.state  # noqa: B018
            assert run_invocation(TopicsAll(docket=docket))
            named = OrganisationMember.select().where(OrganisationMember.docket == docket).count()
            topics = list(Topic.select().where(Topic.docket == docket))
            assert named and topics, (named, queries.map_of(docket).message)
            assert sum(t.organisations for t in topics) > 0
            assert consistency.problems(docket) == []


def test_the_topic_task_requires_organisations_only_when_they_are_on(tmp_path, pg_server):
    with served_corpus(tmp_path) as (server, docket):
        with derived_runtime(tmp_path, server, index_database(pg_server)):
            required = {type(t).__name__ for t in TopicMap(docket=docket).requires()}
            assert required == {"CampaignGroups", "ResolveOrganisations", "IndexDocket"}
        with derived_runtime(tmp_path, server, index_database(pg_server), organisations="false"):
            required = {type(t).__name__ for t in TopicMap(docket=docket).requires()}
            assert required == {"CampaignGroups", "IndexDocket"}  # the vectors it maps
