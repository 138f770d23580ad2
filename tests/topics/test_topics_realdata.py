"""The topic map on the real dockets in ../shared/realdata (skipped without them), through
Luigi: too few comments for topics, said so, and nothing invented; a second run does nothing."""

from __future__ import annotations

from pipeline.ops import cli
from pipeline.store import item_states
from pipeline.store.models import Item, Topic, TopicMember
from pipeline.tasks import IndexAll, TopicsAll
from pipeline.topics import queries
from pipeline.topics.stage import TOO_FEW
from tests.fixtures.state_fixtures import real_mirror_runtime, run_invocation


def test_real_dockets_have_too_few_comments_for_topics(tmp_path, pg_server, realdata, capsys):
    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, ids):
        assert runtime.settings.topics and runtime.settings.campaigns
        assert run_invocation(IndexAll())  # topics are one of its follow-ons
        assert Topic.select().count() == 0 and TopicMember.select().count() == 0
        for docket in ids:
            comments = Item.select().where((Item.docket == docket) & (Item.kind == "comment")).count()
            rows = item_states.states_for_docket("topics", docket)
            if comments:
                assert rows and {r.state for r in rows.values()} == {"skipped"}
                assert {r.reason for r in rows.values()} == {TOO_FEW}
                assert queries.map_of(docket).message.startswith(TOO_FEW)
        capsys.readouterr()
        assert cli.main(["topics", ids[0]]) == 0
        assert TOO_FEW in capsys.readouterr().out
        before = item_states.states_for_docket("topics", ids[0])
        assert run_invocation(TopicsAll())
        assert item_states.states_for_docket("topics", ids[0]) == before
