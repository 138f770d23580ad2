"""Topic maps: the issues a docket's comments raise, how many raised each, and who.

Runs after campaigns. Its units are the docket's comments as the index holds them (the mean
of each comment's passage vectors: no second embedding), a campaign's copies counted once
and weighted by its members. An item's fingerprint is its index fingerprint, its campaign
and the map's version, so only new or changed comments are read. With no map yet, or once
the share of new and unplaced comments passes ``topic_recluster_share``, the docket is
clustered whole (``pipeline.topics.clustering``) and the new topics take the ids of the
stored ones they match; otherwise the new comments alone are placed against the stored
topics' centres. A docket with fewer than ``topic_min_comments`` distinct comments (a
campaign's copies count once) gets no map, and says so; any docket with that many gets one,
however few (``clustering.cluster`` answers every input).
"""

from __future__ import annotations

import json
from collections import defaultdict

from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.fingerprints import digest
from pipeline.store import item_states
from pipeline.store.models import Docket
from pipeline.topics import consistency, queries

STAGE = "topics"
COLLECTION = "comments"  # the index collection of comments (pipeline.index.stage.COLLECTIONS)
# topics-2: the minimum counts distinct comments; small dockets, campaign letters and
# near-duplicate topics mapped (``clustering.cluster``). topics-3: a comment weighs the
# submissions its record stands for (``duplicateComments``). The version is in every
# comment's fingerprint, so the next run maps each docket again from the stored vectors.
MAP_VERSION = "topics-3"
REPRESENTATIVES = 3
PASSAGE_CHARS = 400
TOO_FEW = "too few comments for topics"


def config_id(settings) -> str:
    return f"{MAP_VERSION}:{settings.topic_min_comments}:{settings.topic_similarity:g}"


def terms(settings) -> str:
    """The map's version and settings: a marker written under others (maps of topics-1,
    whose default was "" here) no longer vouches for the docket's map."""
    return f"{MAP_VERSION}:{settings.topic_min_comments}:{settings.topic_similarity:g}"


def item_fingerprint(index_fingerprint: str | None, campaign: str | None, config: str) -> str:
    return digest(config, index_fingerprint or "", campaign or "")


def plan(index_db, docket_id: str, config: str, force: bool) -> tuple[dict[str, str], dict[str, int], dict[str, str]]:
    """(comment key -> fingerprint for the comments to map, comment key -> chunk count for
    every indexed comment, comment key -> campaign), from index state and state rows."""
    indexed = index_db.state_for_docket(COLLECTION, docket_id) if index_db is not None else {}
    campaigns = queries.campaigns_of_docket(docket_id)
    mine = item_states.states_for_docket(STAGE, docket_id)
    todo = {}
    for key, row in indexed.items():
        fingerprint = item_fingerprint(row.fingerprint, campaigns.get(key), config)
        done = mine.get(key)
        if force or done is None or done.fingerprint != fingerprint or done.state == "stale":
            todo[key] = fingerprint
    return todo, {k: r.chunk_count for k, r in indexed.items()}, campaigns


def unfinished(runtime, docket_id: str) -> int:
    index_db = runtime.existing_index_db()
    return len(plan(index_db, docket_id, config_id(runtime.settings), False)[0])


def map_docket(ctx: StageContext, docket: Docket) -> StageResult:
    result = StageResult()
    settings = ctx.settings
    index_db = ctx.runtime.existing_index_db()
    todo, chunks, campaigns = plan(index_db, docket.id, config_id(settings), ctx.force)
    if not todo:
        return result
    ctx.check_time()
    ctx.progress.start(len(todo))
    with_text = sorted(k for k, n in chunks.items() if n > 0)
    weights = unit_weights(with_text, campaigns, queries.represented_of_docket(docket.id))
    stored = queries.stored_centres(docket.id)
    rows_of = _state_rows(ctx, docket.id, todo)

    distinct = sum(1 for k in with_text if weights[k] > 0)  # a campaign's copies count once
    if distinct < settings.topic_min_comments:
        return _too_few(ctx, docket.id, todo, rows_of, distinct, result)

    new_or_unplaced = len(todo) + queries.unplaced_count(docket.id)
    recluster = ctx.force or not stored or new_or_unplaced / len(with_text) > settings.topic_recluster_share
    keys = with_text if recluster else sorted(k for k in todo if chunks.get(k, 0) > 0)
    units = _Units.read(index_db, docket.id, keys, with_text, campaigns)
    if recluster:
        ids, centre_rows, unit_topic = _clustered(ctx, docket.id, units, stored, weights)
        result.add("clustered", len(units.keys))
    else:
        ids, centre_rows, unit_topic = _placed(units, stored, settings.topic_similarity)
    members = {}
    for key in keys:
        topic, sim = unit_topic.get(units.speaker[key], (None, 0.0))
        members[key] = (topic, sim, passage_topics(units.by_item.get(units.speaker[key], []), centre_rows, ids,
                                                   topic, settings.topic_similarity), not recluster)
    queries.save_members(docket.id, members, replace_all=recluster)
    queries.refresh_counts(docket.id, weights)
    _count_mapped(ctx, result, todo, chunks, keys, members, recluster, rows_of)
    return result


def _too_few(ctx: StageContext, docket_id: str, todo: dict[str, str], rows_of, distinct: int,
             result: StageResult) -> StageResult:
    """No map: the docket's map and topics cleared, its comments' states saying why."""
    queries.clear_docket(docket_id)
    message = (f"{TOO_FEW} ({distinct} distinct comment(s) with text < topic_min_comments "
               f"{ctx.settings.topic_min_comments})")
    queries.save_map(docket_id, message=message)
    item_states.transition_many(rows_of(set(), TOO_FEW))
    ctx.progress.advance("skipped", len(todo))
    result.add("too_few", len(todo))
    result.message = message
    return result


class _Units:
    """What is clustered or placed: one unit per comment, a campaign's copies one unit (its
    first member by key stands for the others), each the mean of its passages' vectors."""

    def __init__(self, speaker: dict[str, str], by_item, keys: list[str], vectors) -> None:
        self.speaker = speaker  # comment key -> the unit's key
        self.by_item = by_item  # unit key -> its passages as (text, vector)
        self.keys = keys  # the units with passages, in key order
        self.vectors = vectors  # their mean vectors, a row each

    @classmethod
    def read(cls, index_db, docket_id: str, keys: list[str], with_text: list[str],
             campaigns: dict[str, str]) -> _Units:
        # numpy, scipy and scikit-learn load here, not when the tasks are declared.
        import numpy as np

        from pipeline.topics import clustering

        first_member = {}
        for k in with_text:
            if k in campaigns:
                first_member.setdefault(campaigns[k], k)
        speaker = {k: first_member.get(campaigns.get(k), k) for k in keys}
        passages = index_db.passage_vectors(COLLECTION, docket_id, sorted(set(speaker.values())))
        by_item: dict[str, list[tuple[str, np.ndarray]]] = defaultdict(list)
        for key, _, text, vector in passages:
            by_item[key].append((text, np.asarray(vector, dtype=np.float64)))
        units = sorted(k for k in set(speaker.values()) if by_item.get(k))
        vectors = np.vstack([np.mean(clustering.normalised(np.vstack([v for _, v in by_item[k]])), axis=0)
                             for k in units]) if units else np.zeros((0, 1))
        return cls(speaker, by_item, units, vectors)


def _clustered(ctx: StageContext, docket_id: str, units: _Units, stored, weights: dict[str, int]):
    """(topic ids, their centres, unit key -> (topic, similarity)) of the docket clustered again."""
    import numpy as np

    from pipeline.topics import clustering

    ids, centre_rows, nearest = recluster_docket(ctx, docket_id, units.keys, units.vectors, units.by_item,
                                                 stored, np.array([weights.get(k, 1) for k in units.keys]))
    sims = np.array([float(clustering.normalised(units.vectors[i:i + 1])[0] @ centre_rows[n]) if n >= 0 else 0.0
                     for i, n in enumerate(nearest)])
    return ids, centre_rows, _unit_topics(units, ids, nearest, sims)


def _placed(units: _Units, stored, similarity: float):
    """(topic ids, their centres, unit key -> (topic, similarity)) of the units placed
    against the stored topics' centres."""
    import numpy as np

    from pipeline.topics import clustering

    ids = sorted(stored)
    centre_rows = clustering.normalised(np.vstack([stored[i] for i in ids]))
    nearest, sims = clustering.place(units.vectors, centre_rows, similarity)
    return ids, centre_rows, _unit_topics(units, ids, nearest, sims)


def _unit_topics(units: _Units, ids: list[str], nearest, sims) -> dict[str, tuple[str | None, float]]:
    return {k: (ids[n] if n >= 0 else None, float(s)) for k, n, s in zip(units.keys, nearest, sims, strict=True)}


def _count_mapped(ctx: StageContext, result: StageResult, todo: dict[str, str], chunks: dict[str, int],
                  keys: list[str], members: dict, recluster: bool, rows_of) -> None:
    """The run's counts, and the states of the comments with no text to compare."""
    placed = [k for k in keys if k in todo and members[k][0] is not None]
    if not recluster:
        result.add("placed", len(placed))
        if len(keys) - len(placed):
            result.add("unplaced", len(keys) - len(placed))
    no_text = [k for k in todo if chunks.get(k, 0) == 0]
    if no_text:
        result.add("no_text", len(no_text))
    item_states.transition_many(rows_of(set(no_text), "no text to compare"))
    ctx.progress.advance("mapped", len(todo))


def unit_weights(keys: list[str], campaigns: dict[str, str],
                 represented: dict[str, int] | None = None) -> dict[str, int]:
    """Each comment's submissions: what its record stands for (``represented``: 1 +
    ``duplicateComments``, 1 when absent); a campaign's copies counted once, as the sum of its
    members' submissions, carried by its first member (the other copies weigh 0)."""
    represented = represented or {}
    groups: dict[str, list[str]] = defaultdict(list)
    for k in keys:
        if k in campaigns:
            groups[campaigns[k]].append(k)
    weights = {k: represented.get(k, 1) for k in keys}
    for members in groups.values():
        members.sort()
        weights[members[0]] = sum(represented.get(k, 1) for k in members)
        for k in members[1:]:
            weights[k] = 0
    return weights


def recluster_docket(ctx, docket_id: str, units: list[str], vectors, by_item, stored, submissions):
    """Cluster the docket's units, match the clusters to the stored topics, and store the
    topics (labels, representatives, centres). Returns the ids and centres in topic number
    order, and each unit's topic number."""
    import numpy as np

    from pipeline.topics import clustering

    settings = ctx.settings
    texts = [" ".join(t for t, _ in by_item[k]) for k in units]
    labels = clustering.merge_same_terms(texts, clustering.cluster(vectors, settings.topic_similarity, submissions),
                                         submissions)
    count = int(labels.max()) + 1 if len(labels) and labels.max() >= 0 else 0
    centre_rows = clustering.centres(vectors, labels, count) if count else np.zeros((0, vectors.shape[1]))
    matched = clustering.match_ids(stored, centre_rows, settings.topic_similarity)
    current = queries.map_of(docket_id)
    number = max(current.next_number if current else 1, 1)
    ids = []
    for found in matched:
        if found is None:
            found = f"{docket_id}:t{number}"
            number += 1
        ids.append(found)
    labelled = clustering.label_terms(texts, labels, count)
    topics = []
    for c in range(count):
        members = [i for i in range(len(units)) if labels[i] == c]
        topics.append({"id": ids[c], "docket": docket_id,
                       "label": ", ".join(t for t, _ in labelled[c][:4]),
                       "terms": json.dumps(labelled[c]),
                       "representatives": json.dumps(representatives([units[i] for i in members], by_item,
                                                                     centre_rows[c], labelled[c])),
                       "centroid": json.dumps([round(float(x), 6) for x in centre_rows[c]]),
                       "comments": 0, "submissions": 0, "organisations": 0, "share": 0.0})
    queries.replace_topics(docket_id, topics)
    queries.save_map(docket_id, message="" if count else "no topics found", clustered_at=ctx.clock().isoformat(),
                     units=len(units), next_number=number)
    return ids, centre_rows, labels


def representatives(keys: list[str], by_item, centre, terms: list[tuple[str, float]] = ()) -> list[dict]:
    """The passages nearest the topic's centre, one per comment, each with its sentence that
    says most of the topic's distinctive ``terms`` (the label's sentence)."""
    import numpy as np

    from pipeline.topics import clustering

    scored = []
    for key in keys:
        texts = [t for t, _ in by_item[key]]
        sims = clustering.normalised(np.vstack([v for _, v in by_item[key]])) @ centre
        best = int(np.argmax(sims))
        scored.append((-float(sims[best]), key, texts[best]))
    scored.sort()
    chosen: list[dict] = []
    repeated: list[dict] = []  # a copy of a sentence already shown says nothing new: last
    for _, key, text in scored:
        sentence = clustering.representative_sentence(text, terms)
        shown = {"item": key, "text": text[:PASSAGE_CHARS], "sentence": sentence}
        (repeated if any(c["sentence"] == sentence for c in chosen) else chosen).append(shown)
        if len(chosen) == REPRESENTATIVES:
            break
    return (chosen + repeated)[:REPRESENTATIVES]


def passage_topics(passages, centre_rows, ids: list[str], main: str | None, similarity: float) -> list[str]:
    """The comment's topics: its main one first, then each other topic one of its passages
    is nearest to (and close enough)."""
    from pipeline.topics import clustering

    found = [main] if main else []
    if passages and len(ids):
        import numpy as np

        nearest, _ = clustering.place(np.vstack([v for _, v in passages]), centre_rows, similarity)
        for n in nearest:
            if n >= 0 and ids[n] not in found:
                found.append(ids[n])
    return found


def _state_rows(ctx: StageContext, docket_id: str, todo: dict[str, str]):
    def rows(skipped: set[str], reason: str | None = None) -> list[dict]:
        everything_skipped = reason == TOO_FEW
        return [{"stage": STAGE, "item": k, "docket": docket_id, "run_id": ctx.run_id, "fingerprint": todo[k],
                 "state": "skipped" if everything_skipped or k in skipped else "ok",
                 "reason": reason if everything_skipped or k in skipped else None} for k in sorted(todo)]
    return rows


# --- the declaration ---------------------------------------------------------------------------

DECLARATION = Stage(
    name=STAGE, upstream="campaigns", run=map_docket, task="TopicMap", wrapper="TopicsAll",
    doc="The docket's topic map: new comments placed in its topics, or the docket clustered again.",
    unfinished=lambda runtime, docket_id, now: unfinished(runtime, docket_id),
    terms=terms, atomic=True, rows_agree=consistency.problems,
    # Each topic's organisation count, and the index's vectors: its marker vouches for
    # campaigns' output, so it is written only while the index, too, says it is done (a run
    # that found the index's lease held elsewhere maps what exists and leaves no marker).
    reads=("organisations", "index"),
)
