"""Topic maps where the units are few: a docket of one letter sent 200 times and 3 other
comments (4 distinct texts) is a map, not an exception out of HDBSCAN; a docket of 30
comments gets a map; every clustering input, however degenerate, gives an answer; topics
that say one thing in other words are one topic."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from sklearn.metrics import adjusted_mutual_info_score

from devtools.topic_corpus import seed_index, topic_comments
from pipeline.engine.stage import StageContext
from pipeline.index.embedders import HashingEmbedder
from pipeline.reading import topics as topic_maps
from pipeline.runtime import set_runtime
from pipeline.store import dockets, item_states
from pipeline.store.models import TopicMember
from pipeline.topics import clustering, queries
from pipeline.topics.stage import TOO_FEW, map_docket
from tests.fixtures.state_fixtures import make_runtime
from tests.fixtures.topic_dockets import letter_docket

D = "EPA-2026-0204"
EMBEDDER = HashingEmbedder(384)


@pytest.fixture
def rt(tmp_path, pg_url):
    runtime = make_runtime(tmp_path, index_url=pg_url)  # the default settings: topic_min_comments too
    runtime.state  # noqa: B018 - open and create the schema
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.index_db().purge_docket(D)
    runtime.close()


def run(rt, force: bool = False):
    return map_docket(StageContext(runtime=rt, run_id="test", force=force), dockets.require_docket(D))


def test_one_letter_sent_200_times_and_3_comments_is_a_map_of_what_there_is(rt):
    truth = letter_docket(rt, D, EMBEDDER, copies=200, others=3)
    # the campaigns stage grouped the copies: 4 distinct texts (HDBSCAN's default
    # min_samples, 5, is more than that: "min_samples (5) must be at most ... (4)")
    groups = Counter(queries.campaigns_of_docket(D).values())
    assert sorted(groups.values()) == [1, 1, 1, 200]
    result = run(rt)
    assert result.counts == {"clustered": 4}
    topics = topic_maps.topics_of(D)
    assert 1 <= len(topics) <= 4
    # the letter is the docket's largest topic, weighted by its 200 submissions
    letter_topic = topics[0]
    assert letter_topic.submissions >= 200 and letter_topic.comments >= 200
    found = dict(TopicMember.select(TopicMember.item, TopicMember.topic).tuples())
    assert {found[k] for k, t in truth.items() if t == "letter"} == {letter_topic.id}
    assert sum(t.submissions for t in topics) + sum(1 for v in found.values() if v is None) == 203
    assert topic_maps.map_of(D).message == ""
    # the three others, on issues of their own, are not the letter's topic (hashing vectors:
    # no two of them alike), and each is there: a topic, or said unplaced
    assert all(found[k] != letter_topic.id for k, t in truth.items() if t != "letter")
    assert run(rt).counts == {}  # done: the second run does nothing


def test_a_docket_of_30_comments_gets_a_map(rt):
    planted = topic_comments(D, 30)
    seed_index(rt, D, planted, EMBEDDER)
    result = run(rt)
    assert result.counts == {"clustered": 30}
    topics = topic_maps.topics_of(D)
    assert len(topics) >= 3
    found = dict(TopicMember.select(TopicMember.item, TopicMember.topic).tuples())
    truth = {c.key: c.topic for c in planted}
    keys = sorted(truth)
    # 8 planted topics of 3-4 comments each: the map follows them
    assert adjusted_mutual_info_score([truth[k] for k in keys], [found[k] or k for k in keys]) >= 0.6


def test_a_docket_of_one_distinct_text_says_why_it_has_no_map(rt):
    letter_docket(rt, D, EMBEDDER, copies=30, others=0)
    result = run(rt)
    assert result.counts == {"too_few": 30}
    assert topic_maps.topics_of(D) == []
    assert topic_maps.map_of(D).message.startswith(f"{TOO_FEW} (1 distinct")
    assert {s.reason for s in item_states.states_for_docket("topics", D).values()} == {TOO_FEW}


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 9, 10, 11, 12, 40])
@pytest.mark.parametrize("width", [1, 3, 384])
def test_every_clustering_input_gives_an_answer(rows, width):
    rng = np.random.default_rng(rows * 1000 + width)
    for vectors in (rng.normal(size=(rows, width)), np.ones((rows, width)), np.zeros((rows, width))):
        labels = clustering.cluster(vectors, 0.5, np.arange(1, rows + 1))
        assert labels.shape == (rows,)
        assert labels.max() >= 0  # a map of what there is: at least one topic
        count = int(labels.max()) + 1
        assert set(labels[labels >= 0]) == set(range(count))


def test_the_clustering_guards_follow_the_units():
    assert clustering.hdbscan_parameters(4) is None and clustering.hdbscan_parameters(9) is None
    for units in (10, 11, 30, 99, 250, 251, 5000):
        size, samples = clustering.hdbscan_parameters(units)
        assert 2 <= size <= units and 1 <= samples <= min(size, units)
        assert 1 <= clustering.reduced_dimensions(units, 384) < units
    assert clustering.reduced_dimensions(2, 1) == 1 and clustering.reduced_dimensions(1, 384) == 1


def _around(rng, centre: np.ndarray, count: int, spread: float) -> np.ndarray:
    return centre + rng.normal(scale=spread, size=(count, len(centre)))


def test_topics_saying_one_thing_in_other_words_are_merged():
    """Three groups whose centres are 0.9 alike (one issue, three wordings) and one group
    apart: two topics, the three merged."""
    rng = np.random.default_rng(3)
    dim = 64
    base = rng.normal(size=dim)
    base /= np.linalg.norm(base)
    wordings = []
    for _ in range(3):
        other = rng.normal(size=dim)
        other -= (other @ base) * base
        other /= np.linalg.norm(other)
        wordings.append(0.95 * base + np.sqrt(1 - 0.95 ** 2) * other)  # pairwise about 0.9
    apart = rng.normal(size=dim)
    apart -= (apart @ base) * base
    apart /= np.linalg.norm(apart)
    groups = [_around(rng, w, 30, 0.01) for w in wordings] + [_around(rng, apart, 30, 0.01)]
    vectors = np.vstack(groups)
    labels = clustering.cluster(vectors, 0.5)
    assert int(labels.max()) + 1 == 2
    assert len(set(labels[:90])) == 1 and len(set(labels[90:])) == 1 and labels[0] != labels[90]
    wording_centres = clustering.normalised(np.vstack(wordings))
    assert (wording_centres @ wording_centres.T)[np.triu_indices(3, 1)].min() > clustering.MERGE_SIMILARITY


def test_topics_whose_distinctive_terms_are_the_same_are_merged():
    """Two topics apart in their vectors (as two wordings can be under a weak embedder) that
    name the same six distinctive terms, and a third of their own: two topics."""
    rng = np.random.default_rng(5)
    ban = "ban rodenticides poison wildlife owls hawks"
    fillers = (["please", "now", "today"], ["kindly", "urgently", "soon"])
    texts, labels = [], []
    for topic, words in enumerate(fillers):
        for _ in range(6):
            texts.append(f"{ban} {ban} {rng.choice(words)}")
            labels.append(topic)
    for _ in range(6):
        texts.append("rural hospital funding nurses clinics emergency rooms")
        labels.append(2)
    merged = clustering.merge_same_terms(texts, np.array(labels), np.ones(len(texts)))
    assert int(merged.max()) + 1 == 2
    assert len(set(merged[:12])) == 1 and merged[12] != merged[0]
    # topics of their own words stay apart
    apart = clustering.merge_same_terms(texts[12:] + texts[:6], np.array([0] * 6 + [1] * 6), np.ones(12))
    assert int(apart.max()) + 1 == 2


def test_a_record_standing_for_more_submissions_weighs_them(rt):
    # A letter sent 3 times, one copy of which stands for 40 more identical submissions
    # (duplicateComments, as a mass-mail campaign is posted), beside 3 comments of their own.
    from pipeline.store.models import Item

    letter_docket(rt, D, EMBEDDER, copies=3, others=3)
    Item.update(duplicate_comments=40).where(Item.key == f"{D}-0002").execute()
    run(rt)
    topics = topic_maps.topics_of(D)
    found = dict(TopicMember.select(TopicMember.item, TopicMember.topic).tuples())
    letter = next(t for t in topics if t.id == found[f"{D}-0001"])
    assert (letter.comments, letter.submissions) == (3, 43)
    assert topics[0].id == letter.id  # the largest topic by submissions
    others = sum(1 for v in found.values() if v is None) + sum(t.submissions for t in topics if t.id != letter.id)
    assert others == 3
