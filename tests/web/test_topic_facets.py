"""Topics as a facet and a filter: the browse and search pages count each topic's comments
as its link shows them (a comment's main topic or any of its others), a search narrowed to a
topic finds only its comments, and `docketeer search --topic` is checked by the same rule."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest

from devtools.corpus_topics import TOPICS
from devtools.topic_corpus import seed_index, topic_comments
from pipeline.engine.stage import StageContext
from pipeline.ops import cli
from pipeline.reading import browsing
from pipeline.reading import topics as topic_maps
from pipeline.reading.search import embedder_from
from pipeline.runtime import set_runtime
from pipeline.store import dockets
from pipeline.store.models import TopicMember
from pipeline.topics.stage import map_docket
from tests.fixtures.state_fixtures import make_runtime, new_pg_database
from tests.fixtures.web_fixtures import linked_comments, page_client

pytestmark = pytest.mark.postgres

D = "HHS-2026-0002"
QUERY = TOPICS[0].query


@pytest.fixture(scope="module")
def rt(tmp_path_factory, pg_server):
    runtime = make_runtime(tmp_path_factory.mktemp("topic-facets"), index_url=new_pg_database(pg_server),
                           topic_min_comments=50)
    runtime.state  # noqa: B018 - open and create the schema
    previous = set_runtime(runtime)
    seed_index(runtime, D, topic_comments(D, 240), embedder_from(runtime.settings))  # what search embeds with
    map_docket(StageContext(runtime=runtime, run_id="test"), dockets.require_docket(D))
    # Planted comments keep to one topic each; five of the largest topic's also touch the
    # second's (as a comment with a passage on each would), so its main-topic count and the
    # comments its filter matches differ.
    first, second = (t.id for t in topic_maps.topics_of(D)[:2])
    for key in topic_maps.members_of(first)[:5]:
        TopicMember.update(topics=json.dumps([first, second])).where(TopicMember.item == key).execute()
    yield runtime
    set_runtime(previous)
    runtime.index_db().purge_docket(D)
    runtime.close()


@pytest.fixture(scope="module")
def client(rt):
    with page_client(rt) as test_client:
        yield test_client


def _on_topic(topic_id: str) -> set[str]:
    """The comments whose main topic or any other is this one, read without the filter's SQL."""
    return {item for item, main, others in TopicMember.select(TopicMember.item, TopicMember.topic,
                                                                 TopicMember.topics).tuples()
            if main == topic_id or topic_id in json.loads(others)}


def _facet(html: str) -> dict[str, tuple[str, int]]:
    """topic id -> (label shown, count) of the page's topic facet."""
    block = re.search(r'<ul class="facet" data-facet="topic">(.*?)</ul>', html, re.S).group(1)
    return {unescape(tid): (unescape(label), int(n.replace(",", ""))) for tid, label, n in
            re.findall(r'<a href="[^"]+" title="([^"]+)">([^<]+)</a> <span class="n">([\d,]+)</span>', block)}



def test_the_topic_facet_counts_what_the_topic_filter_matches(rt):
    topics = {t.id: t for t in topic_maps.topics_of(D)}
    assert len(topics) >= len(TOPICS)
    second = topic_maps.topics_of(D)[1]
    assert {c.id: c.comments for c in browsing.topic_counts(browsing.BrowseFilters(docket=D))}[second.id] \
        == second.comments + 5  # its own and the five that touch it besides their main topic
    counted = browsing.facets(browsing.BrowseFilters(docket=D)).topics
    assert counted and len(counted) <= 10
    assert [c.comments for c in counted] == sorted((c.comments for c in counted), reverse=True)
    for c in counted:
        assert c.label == topics[c.id].label
        assert c.comments == len(_on_topic(c.id)) == browsing.count(browsing.BrowseFilters(docket=D, topic=c.id))
    # Narrowed by another filter, each count is still what both filters together match.
    first_day = min(r.posted_date for r in browsing.comments(browsing.BrowseFilters(docket=D), sort="oldest"))
    narrowed = browsing.BrowseFilters(docket=D, posted_before=first_day[:10] + "T23:59:59Z")
    for c in browsing.topic_counts(narrowed):
        assert c.comments == browsing.count(browsing.BrowseFilters(docket=D, topic=c.id,
                                                                   posted_before=narrowed.posted_before))


def test_the_browse_page_shows_the_topic_facet_and_its_links_filter(client, rt):
    page = client.get("/comments", params={"docket": D})
    assert page.status_code == 200
    facet = _facet(page.text)
    expected = {c.id: (c.label, c.comments) for c in browsing.topic_counts(browsing.BrowseFilters(docket=D))}
    assert facet == expected
    topic_id, (_, n) = next(iter(facet.items()))
    narrowed = client.get("/comments", params={"docket": D, "topic": topic_id}).text
    assert f"of {n:,}," in narrowed or len(linked_comments(narrowed)) == n
    assert set(linked_comments(narrowed)) <= _on_topic(topic_id)
    assert f'class="chip">topic: {topic_id}' in narrowed


def test_a_search_narrowed_to_a_topic_finds_only_its_comments(client, rt):
    page = client.get("/search", params={"q": QUERY, "docket": D})
    assert page.status_code == 200
    every = linked_comments(page.text)
    facet = _facet(page.text)  # the comments this search looks in: the docket's
    assert facet == {c.id: (c.label, c.comments) for c in browsing.topic_counts(browsing.BrowseFilters(docket=D))}
    narrowed_hits = {}
    for topic_id in facet:
        assert f'href="/search?q={QUERY.replace(" ", "+")}&amp;docket={D}&amp;topic={topic_id.replace(":", "%3A")}"' \
            in page.text
        narrowed = client.get("/search", params={"q": QUERY, "docket": D, "topic": topic_id})
        assert narrowed.status_code == 200
        hits = narrowed_hits[topic_id] = linked_comments(narrowed.text)
        assert set(hits) <= _on_topic(topic_id)
        assert f'name="topic" value="{topic_id}"' in narrowed.text  # kept when the search is changed
    # The bare search finds the asked topic's comments first; narrowed to another topic, it
    # finds that topic's instead.
    assert every and sum(1 for hits in narrowed_hits.values() if hits and set(hits) != set(every)) >= 2
    missing = client.get("/search", params={"q": QUERY, "topic": f"{D}:t999"})
    assert missing.status_code == 400 and "no topic" in unescape(missing.text)


def test_the_command_line_narrows_a_search_to_a_topic(rt, capsys):
    topic_id = topic_maps.topics_of(D)[0].id
    assert cli.main(["search", QUERY, "--docket", D, "-k", "30", "--cold", "--json", "--topic", topic_id]) == 0
    document = json.loads(capsys.readouterr().out)
    found = {r["item_id"] for r in document["results"]}
    assert document["topic"] == topic_id and found and found <= _on_topic(topic_id)
    assert cli.main(["search", QUERY, "--topic", "NOPE:t1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no topic 'NOPE:t1' in this store" in err


def test_the_docket_page_the_facets_and_the_topics_command_say_which_count_they_show(client, rt, capsys):
    """The docket's map counts a comment under its main topic; the facet counts every comment
    with a passage on a topic. The second topic's two figures differ here (five comments touch
    it besides their main topic), so each place must say which one it shows."""
    second = topic_maps.topics_of(D)[1]
    any_passage = len(_on_topic(second.id))
    assert any_passage == second.comments + 5
    docket_page = client.get(f"/docket/{D}").text
    table = re.search(r'<table class="topics">(.*?)</table>', docket_page, re.S).group(1)
    assert ">comments (main topic)</th>" in table
    row = re.search(rf'topic={re.escape(second.id.replace(":", "%3A"))}".*?</tr>', table, re.S).group(0)
    assert f'<td class="n">{second.comments:,}</td>' in row
    assert "any passage on it" in docket_page  # what its link lists instead
    for page in (client.get("/comments", params={"docket": D}).text,
                 client.get("/search", params={"q": QUERY, "docket": D}).text):
        assert "(comments with any passage on it, main topic or not)</small></h2>" in page
        assert _facet(page)[second.id][1] == any_passage
    capsys.readouterr()
    assert cli.main(["topics", D]) == 0
    out = capsys.readouterr().out
    assert "comments (main topic)" in out.splitlines()[0] and "any passage on it" in out
