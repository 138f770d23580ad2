"""The topic map on the real dockets in ../shared/realdata (skipped without them), through
Luigi: each docket with two distinct comments or more gets a map, one with fewer says why
and invents nothing, and a second run does nothing; the CDO pilot's form-letter dockets
(MiniLM) get maps naming their issues: one topic per distinct position, one topic where
every comment says one thing."""

from __future__ import annotations

from pipeline.ops import cli
from pipeline.reading import topics as topic_maps
from pipeline.store import item_states
from pipeline.store.models import Item, Topic, TopicMember
from pipeline.tasks import IndexAll, TopicsAll
from pipeline.topics.stage import TOO_FEW
from tests.fixtures.state_fixtures import real_mirror_runtime, run_invocation


def test_real_dockets_are_mapped_or_said_too_few(tmp_path, pg_server, realdata, capsys):
    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, ids):
        assert runtime.settings.topics and runtime.settings.campaigns
        assert run_invocation(IndexAll())  # topics are one of its follow-ons
        mapped = []
        for docket in ids:
            comments = Item.select().where((Item.docket == docket) & (Item.kind == "comment")).count()
            rows = item_states.states_for_docket("topics", docket)
            if not comments:
                continue
            assert rows, docket
            if comments == 1:  # one distinct comment: nothing to map, said so
                assert {r.reason for r in rows.values()} == {TOO_FEW}
                assert topic_maps.map_of(docket).message.startswith(TOO_FEW)
                assert Topic.select().where(Topic.docket == docket).count() == 0
                continue
            mapped.append(docket)
            topics = topic_maps.topics_of(docket)
            assert topics and topic_maps.map_of(docket).message == ""
            members = TopicMember.select().where(TopicMember.docket == docket).count()
            assert sum(t.comments for t in topics) <= members <= comments
        assert mapped == ["USTR-2015-0010"]  # its 4 comments: a map (the old minimum was 100)
        capsys.readouterr()
        assert cli.main(["topics", "ACF-2025-0038"]) == 0
        assert TOO_FEW in capsys.readouterr().out
        assert cli.main(["topics", "USTR-2015-0010"]) == 0
        assert "representative passages" in capsys.readouterr().out
        before = {d: item_states.states_for_docket("topics", d) for d in ids}
        assert run_invocation(TopicsAll())
        assert {d: item_states.states_for_docket("topics", d) for d in ids} == before


CDO = ["EPA-HQ-OA-2018-0259", "EPA-HQ-OPP-2015-0481", "USDA-2020-0009"]


def test_the_cdo_pilots_form_letter_dockets_get_maps_of_their_issues(real_store):
    """Read by eye (docs/BENCHMARKS.md): USDA-2020-0009 is three letters against the rule
    (services and employment discrimination; beneficiaries' notice and referral rights; the
    harm to religious minorities, the nonreligious, women and LGBTQ people) and copies of
    them with notes; EPA-HQ-OA-2018-0259 is the opposition to the transparency rule and a
    smaller "end secret science" support; EPA-HQ-OPP-2015-0481 says one thing, "ban these
    rodenticides, they poison wildlife", in many wordings (the old map split it in three)."""
    with real_store.opened():  # every real docket through IndexAll with MiniLM, built once a session
        maps = {d: topic_maps.topics_of(d) for d in CDO}
        for docket, topics in maps.items():
            comments = Item.select().where((Item.docket == docket) & (Item.kind == "comment")).count()
            assert sum(t.submissions for t in topics) >= 0.95 * comments, docket  # nearly all mapped
            assert all(t.label and t.representatives for t in topics)
        usda = maps["USDA-2020-0009"]
        assert len(usda) == 3 and [t.submissions >= 80 for t in usda] == [True, True, True]
        oa = maps["EPA-HQ-OA-2018-0259"]
        assert len(oa) >= 2 and any("secret" in t.label for t in oa[1:])
        assert len(maps["EPA-HQ-OPP-2015-0481"]) == 1  # one issue, merged
        assert "rodenticides" in maps["EPA-HQ-OPP-2015-0481"][0].label
