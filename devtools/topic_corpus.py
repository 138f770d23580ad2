"""Comments on planted topics, and a store holding them as the index leaves them.

``topic_comments`` writes comments from ``devtools.corpus_topics``' topics (each comment one
topic's sentences; its topic is the truth a topic map is scored against). ``hard_topic_comments``
makes the task harder: uneven topic sizes, sentences borrowed from another topic, and
off-topic comments (truth ``None``). ``seed_index`` stores them as items, index state and
chunk vectors (one chunk per paragraph) with the given embedder, so the TopicMap stage reads
them as it reads an indexed docket.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from devtools.corpus_topics import TOPICS
from devtools.make_corpus import topic_paragraph

OFF_TOPIC = (
    "I am writing as a concerned citizen about this matter.",
    "Thank you for the opportunity to comment on this proposal.",
    "Please extend the comment period by sixty days so that more people can respond.",
    "The agency did not follow the procedures required for this rulemaking.",
    "I have no further comments at this time.",
)


@dataclass(frozen=True)
class TopicComment:
    key: str
    topic: str | None  # the planted topic's slug; None: off-topic
    paragraphs: tuple[str, ...]
    posted_date: str


def _posted(rng: random.Random) -> str:
    return f"2026-0{rng.randrange(1, 10)}-{rng.randrange(10, 29)}T12:00:00Z"


def topic_comments(docket_id: str, count: int, seed: int = 7, start: int = 1) -> list[TopicComment]:
    """``count`` comments spread evenly over the planted topics, 1-3 paragraphs each."""
    rng = random.Random(seed)
    found = []
    for n in range(count):
        topic = TOPICS[n % len(TOPICS)]
        paragraphs = tuple(topic_paragraph(rng, topic, rng.randrange(2, 5)) for _ in range(rng.randrange(1, 4)))
        found.append(TopicComment(f"{docket_id}-{start + n:04d}", topic.slug, paragraphs, _posted(rng)))
    return found


def hard_topic_comments(docket_id: str, count: int, seed: int = 11) -> list[TopicComment]:
    """Uneven sizes (a topic's weight falls geometrically), one sentence in three borrowed
    from another topic, and one comment in twelve off-topic."""
    rng = random.Random(seed)
    weights = [0.75 ** i for i in range(len(TOPICS))]
    found = []
    for n in range(count):
        key = f"{docket_id}-{n + 1:04d}"
        if rng.random() < 1 / 12:
            found.append(TopicComment(key, None, (" ".join(rng.sample(OFF_TOPIC, 2)),), _posted(rng)))
            continue
        topic = rng.choices(TOPICS, weights)[0]
        paragraphs = []
        for _ in range(rng.randrange(1, 3)):
            sentences = topic_paragraph(rng, topic, 3).split(". ")
            other = rng.choice([t for t in TOPICS if t is not topic])
            sentences.insert(rng.randrange(len(sentences) + 1), topic_paragraph(rng, other, 1).rstrip("."))
            paragraphs.append(". ".join(sentences))
        found.append(TopicComment(key, topic.slug, tuple(paragraphs), _posted(rng)))
    return found


def seed_index(runtime, docket_id: str, comments: list[TopicComment], embedder) -> None:
    """Items, index state and chunk vectors for the comments, as indexing leaves them."""
    from pipeline.clock import iso, utcnow
    from pipeline.index.chunking import Chunk
    from pipeline.index.database import ItemRows
    from pipeline.store import dockets
    from pipeline.store.models import Item, database

    dockets.ensure_dockets([docket_id], "list")
    now = iso(utcnow())
    with database.atomic():
        for c in comments:
            fields = {Item.docket: docket_id, Item.kind: "comment", Item.title: f"Comment {c.key}",
                      Item.posted_date: c.posted_date, Item.body: "\n\n".join(c.paragraphs), Item.updated_at: now}
            Item.insert({Item.key: c.key, Item.created_at: now, **fields}).on_conflict(
                conflict_target=[Item.key], update=fields).execute()
    texts = [p for c in comments for p in c.paragraphs]
    vectors = iter(embedder.embed(texts))
    batch = [ItemRows("comments", c.key, docket_id, [Chunk(i, p, None, "") for i, p in enumerate(c.paragraphs)],
                      [next(vectors) for _ in c.paragraphs], f"seed:{c.key}", f"seed:{c.key}", {})
             for c in comments]
    index_db = runtime.index_db()
    for start in range(0, len(batch), 500):
        index_db.replace_items(batch[start:start + 500], embedder.id)
