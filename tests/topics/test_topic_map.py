"""The topic map on planted topics: quality (adjusted mutual information), labels naming each
topic's terms, incremental placement (counted), ids stable across re-clusterings, a docket too
small for topics, and `docketeer topics`."""

from __future__ import annotations

import json
import re

import pytest
from sklearn.metrics import adjusted_mutual_info_score

from devtools.corpus_topics import TOPICS
from devtools.topic_corpus import seed_index, topic_comments
from pipeline.engine.stage import StageContext
from pipeline.index.embedders import HashingEmbedder
from pipeline.ops import cli
from pipeline.reading import topics as topic_maps
from pipeline.runtime import set_runtime
from pipeline.store import dockets, item_states
from pipeline.store.models import Topic, TopicMember
from pipeline.topics.stage import TOO_FEW, map_docket
from tests.fixtures.state_fixtures import make_runtime

D = "HHS-2026-0001"
EMBEDDER = HashingEmbedder(384)


@pytest.fixture
def rt(tmp_path, pg_url):
    runtime = make_runtime(tmp_path, index_url=pg_url, topic_min_comments=50)
    runtime.state  # noqa: B018 - open and create the schema
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.index_db().purge_docket(D)
    runtime.close()


def run(rt, force: bool = False):
    return map_docket(StageContext(runtime=rt, run_id="test", force=force), dockets.require_docket(D))


def assignment() -> dict[str, str | None]:
    return dict(TopicMember.select(TopicMember.item, TopicMember.topic).tuples())


def test_planted_topics_are_found_labelled_and_kept_stable(rt):
    planted = topic_comments(D, 400)
    seed_index(rt, D, planted, EMBEDDER)
    result = run(rt)
    assert result.counts == {"clustered": 400}
    found = assignment()
    truth = {c.key: c.topic for c in planted}
    keys = sorted(truth)
    ami = adjusted_mutual_info_score([truth[k] for k in keys], [found[k] or "-" for k in keys])
    assert ami >= 0.8
    topics = topic_maps.topics_of(D)
    assert len(topics) == len(TOPICS)
    assert sum(t.comments for t in topics) == sum(1 for v in found.values() if v)
    assert all(len(t.representatives) == 3 and t.first_seen and t.share > 0 for t in topics)
    # each planted topic's label names its key terms: the topic its members are
    for t in topics:
        members = [truth[k] for k in topic_maps.members_of(t.id)]
        slug = max(set(members), key=members.count)
        key_words = {w for w in slug.split("_")} | {"telehealth", "nurse", "nurses", "rural"}
        words = {w for term, _ in t.terms for w in term.split()}
        assert words & key_words or any(w in " ".join(next(x for x in TOPICS if x.slug == slug).sentences).lower()
                                         for w in words), (t.label, slug)
    ids = {t.id for t in topics}

    # a second run does nothing
    assert run(rt).counts == {}

    # +40 comments: only they are placed, ids unchanged
    more = topic_comments(D, 40, seed=99, start=401)
    seed_index(rt, D, more, EMBEDDER)
    before = {k: v for k, v in assignment().items()}
    result = run(rt)
    assert result.counts.get("placed", 0) + result.counts.get("unplaced", 0) == 40
    assert result.counts["placed"] >= 36
    assert {t.id for t in topic_maps.topics_of(D)} == ids
    after = assignment()
    assert {k: after[k] for k in before} == before
    assert len(after) == 440

    # a forced re-cluster of unchanged data: the same topics and ids
    result = run(rt, force=True)
    assert result.counts == {"clustered": 440}
    assert {t.id for t in topic_maps.topics_of(D)} == ids
    forced = assignment()
    same = sum(forced[k] == after[k] for k in after)
    assert same >= 0.95 * len(after)


def test_a_docket_with_too_few_comments_gets_no_topics(rt):
    seed_index(rt, D, topic_comments(D, 20), EMBEDDER)
    result = run(rt)
    assert result.counts == {"too_few": 20} and TOO_FEW in result.message
    assert Topic.select().count() == 0
    states = item_states.states_for_docket("topics", D)
    assert {s.state for s in states.values()} == {"skipped"}
    assert run(rt).counts == {}
    assert cli.main(["topics", D]) == 0


def test_the_topics_command(rt, capsys):
    seed_index(rt, D, topic_comments(D, 200), EMBEDDER)
    run(rt)
    capsys.readouterr()
    assert cli.main(["topics", D, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [t["id"] for t in shown["topics"]] == [t.id for t in topic_maps.topics_of(D)]
    assert len(shown["topics"]) >= len(TOPICS)
    assert all(len(t["representatives"]) == 3 and t["terms"] for t in shown["topics"])
    assert sum(t["comments"] for t in shown["topics"]) <= 200
    assert cli.main(["topics", D]) == 0
    out = capsys.readouterr().out
    assert "representative passages" in out
    for topic in shown["topics"]:  # each passage shown by its label's sentence
        for r in topic["representatives"]:
            assert r["sentence"] and f"{r['item']}: {' '.join(r['sentence'].split())[:160]}" in out
    assert cli.main(["topics", "NOPE-2026-0001"]) == 2
    assert "unknown docket" in capsys.readouterr().err


def test_the_export_holds_the_topics_and_each_comments_topic(rt, tmp_path):
    import pyarrow.parquet as pq

    seed_index(rt, D, topic_comments(D, 120), EMBEDDER)
    run(rt)
    dest = tmp_path / "export"
    assert cli.main(["export", str(dest), "--docket", D, "--format", "parquet"]) == 0
    comments = pq.read_table(dest / D / "comments.parquet").to_pylist()
    topics = pq.read_table(dest / D / "topics.parquet").to_pylist()
    assert {t["topic_id"] for t in topics} == {t.id for t in topic_maps.topics_of(D)}
    assert {c["comment_id"]: c["topic_id"] for c in comments} == assignment()
    assert all(t["label"] and t["representative_ids"].count("\n") == 2 for t in topics)


def test_the_docket_page_shows_the_topics_and_browsing_filters_by_one(rt):
    from starlette.testclient import TestClient

    from pipeline.counters import STATE_QUERIES, counters
    from pipeline.web import pages
    from pipeline.web.app import make_app

    seed_index(rt, D, topic_comments(D, 160), EMBEDDER)
    run(rt)
    topics = topic_maps.topics_of(D)
    with TestClient(make_app(rt, pages.WarmSearch(rt)), base_url="http://127.0.0.1") as client:
        with counters.measure() as io, counters.counting_queries():
            page = client.get(f"/docket/{D}")
        assert page.status_code == 200 and "<h2>Topics</h2>" in page.text
        assert page.text.count('class="topic-link"') == len(topics)
        assert all(t.label in page.text and t.representatives[0]["item"] in page.text for t in topics)
        assert io.get(STATE_QUERIES, 0) < 40  # the section is two reads, whatever the map's size
        largest = topics[0]
        browsed = client.get("/comments", params={"docket": D, "topic": largest.id})
        assert browsed.status_code == 200
        shown = set(re.findall(rf'href="/comment/({D}-\d+)"', browsed.text))
        members = set(topic_maps.members_of(largest.id))
        assert shown and shown <= members | {k for k, v in assignment().items() if v}
        assert f"{largest.comments:,}" in browsed.text or len(shown) == min(50, largest.comments)
