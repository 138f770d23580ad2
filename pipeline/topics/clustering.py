"""Comments' vectors grouped into topics, labelled, and matched to the topics stored before.

Plain functions over numpy arrays (no store): ``cluster`` (PCA to a few dimensions, then
scikit-learn's HDBSCAN where the units are enough for it, each unit a topic where they are
not; noise placed, near-duplicate topics merged, topics too small joined to their nearest:
every input, however small, gives an answer), ``place`` (new comments against stored centres), ``label_terms`` (class-based
TF-IDF: the words frequent in one topic and rare in the others) and ``match_ids`` (the
Hungarian assignment of new clusters to old topics, so ids survive re-clustering).
"""

from __future__ import annotations

import numpy as np

REDUCED_DIMENSIONS = 32
UNPLACED = -1
# HDBSCAN runs on at least this many units: below it density says nothing (a docket of one
# 200-copy letter and 3 comments is 4 units) and every unit is a topic, merged as below.
HDBSCAN_MIN_UNITS = 10
# Topic centres at least this alike are one issue in different words, and merged. Measured:
# all-MiniLM-L6-v2 puts three rodenticide topics that all say "ban these poisons" at
# 0.85-0.94 and distinct issues of one docket at 0.5-0.73 (the planted topics' centres at
# most 0.6); the hashing embedder's distinct topics at most 0.2.
MERGE_SIMILARITY = 0.85
# Topics sharing this many of their 6 distinctive terms say one thing, whatever their
# vectors: merged too (``merge_same_terms``).
SHARED_TERMS = 4


def normalised(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def min_cluster_size(units: int) -> int:
    """The smallest group called a topic: 2% of the docket's units, at least 5; a small
    docket's topics may be smaller (a tenth of its units, at least 2), or 30 comments on
    eight issues would hold no topic at all."""
    return max(2, min(5, units // 10), units // 50)


def hdbscan_parameters(units: int) -> tuple[int, int] | None:
    """HDBSCAN's (min_cluster_size, min_samples) for this many units, each at most the units
    there are; None when there are too few units for density to mean anything (fewer than
    two of the smallest topics): every unit is then a topic of its own (``cluster``)."""
    size = min_cluster_size(units)
    if units < max(2 * size, HDBSCAN_MIN_UNITS):
        return None
    return size, min(size, 10, units)


def reduced_dimensions(units: int, width: int) -> int:
    """PCA's components: at most ``REDUCED_DIMENSIONS``, fewer than the units, at most the
    vectors' width (PCA refuses more), at least 1."""
    return max(1, min(REDUCED_DIMENSIONS, units - 1, width))


def cluster(vectors: np.ndarray, similarity: float, weights: np.ndarray | None = None) -> np.ndarray:
    """A topic number per row (0..k-1, ordered by submissions, most first; ``UNPLACED`` for a
    row near no topic). ``weights``: each row's submissions (a campaign's letter counts its
    copies; default 1). Deterministic: the same vectors give the same labels.

    Every input gives an answer: no rows, no topics; too few rows for HDBSCAN, or none of
    its clusters found, every distinct text its own topic (then merged as below: a map of
    what there is). A row HDBSCAN leaves as noise joins its nearest topic when close enough,
    or is a topic of its own when it weighs as much as a topic (a letter many sent). Topics
    whose centres are near-duplicates (``MERGE_SIMILARITY``) are one issue in other words
    and are merged; a topic of fewer submissions than the smallest topic joins its nearest
    topic when at least ``similarity`` alike, or else (among enough units) is left unplaced."""
    unit = normalised(vectors)
    count = len(unit)
    weights = np.ones(count) if weights is None else np.asarray(weights, dtype=np.float64)
    if count == 0:
        return np.zeros(0, dtype=int)
    size = min_cluster_size(count)
    labels = _density_clusters(unit)
    if labels.max() < 0:
        labels = np.arange(count)  # nothing dense: each distinct text is what there is
    else:
        noise = np.flatnonzero(labels == UNPLACED)
        found = int(labels.max()) + 1
        nearest, _ = place(unit[noise], centres(unit, labels, found), similarity)
        labels[noise] = nearest
        heavy = [i for i in np.flatnonzero(labels == UNPLACED) if weights[i] >= size]
        for n, i in enumerate(heavy):
            labels[i] = found + n
    while True:  # until no two topics are near-duplicates and no small one has a near topic
        before = int(labels.max())
        labels = absorb_small(unit, merge_near_duplicates(unit, labels, MERGE_SIMILARITY), weights, size,
                              similarity)
        if int(labels.max()) == before:
            return by_submissions(left_out_alone(labels, weights, size), weights)


def _density_clusters(unit: np.ndarray) -> np.ndarray:
    """HDBSCAN's clusters (``UNPLACED``: noise; all noise when the units are too few)."""
    parameters = hdbscan_parameters(len(unit))
    if parameters is None:
        return np.full(len(unit), UNPLACED)
    if np.ptp(unit, axis=0).max() == 0:  # one text's vectors: one group (PCA of it divides by 0)
        return np.zeros(len(unit), dtype=int)
    from sklearn.cluster import HDBSCAN
    from sklearn.decomposition import PCA

    size, samples = parameters
    dims = reduced_dimensions(len(unit), unit.shape[1])
    reduced = PCA(n_components=dims, svd_solver="full").fit_transform(unit) if dims < unit.shape[1] else unit
    # "leaf": the tree's finest clusters of that size. The default ("eom") prefers large
    # stable clusters and merged topics that share vocabulary (uneven sizes, borrowed
    # sentences: AMI 0.2 against 0.9 on the hard planted corpus); the points leaf leaves as
    # noise are placed by ``cluster``.
    raw = HDBSCAN(min_cluster_size=size, min_samples=samples, cluster_selection_method="leaf",
                  copy=True).fit(reduced).labels_
    return renumbered(np.asarray(raw))


def renumbered(labels: np.ndarray) -> np.ndarray:
    """Labels 0..k-1 in order of first appearance (``UNPLACED`` kept)."""
    out = np.full(len(labels), UNPLACED)
    numbers: dict[int, int] = {}
    for i, lab in enumerate(labels):
        if lab >= 0:
            out[i] = numbers.setdefault(int(lab), len(numbers))
    return out


def merge_near_duplicates(unit: np.ndarray, labels: np.ndarray, threshold: float) -> np.ndarray:
    """Merge, most alike first, the two topics whose centres are at least ``threshold``
    alike, until no pair is: topics that say one thing in different words become one."""
    labels = renumbered(labels)
    while True:
        count = int(labels.max()) + 1
        if count < 2:
            return labels
        rows = centres(unit, labels, count)
        sims = rows @ rows.T
        np.fill_diagonal(sims, -1.0)
        a, b = np.unravel_index(int(np.argmax(sims)), sims.shape)
        if sims[a, b] < threshold:
            return labels
        labels = renumbered(np.where(labels == max(a, b), min(a, b), labels))


def absorb_small(unit: np.ndarray, labels: np.ndarray, weights: np.ndarray, size: int,
                 similarity: float) -> np.ndarray:
    """A topic of fewer than ``size`` submissions joins the nearest other topic when their
    centres are at least ``similarity`` alike (the smallest first); else it stays."""
    labels = renumbered(labels)
    while True:
        count = int(labels.max()) + 1
        if count < 2:
            return labels
        totals = np.array([weights[labels == c].sum() for c in range(count)])
        rows = centres(unit, labels, count)
        sims = rows @ rows.T
        np.fill_diagonal(sims, -1.0)
        for c in np.argsort(totals, kind="stable"):
            if totals[c] >= size:
                return labels
            other = int(np.argmax(sims[c]))
            if sims[c, other] >= similarity:
                labels = renumbered(np.where(labels == c, other, labels))
                break
        else:
            return labels


def left_out_alone(labels: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Where the units were enough for density (``HDBSCAN_MIN_UNITS``) and some topic has
    ``size`` submissions, a smaller topic near none is a comment near no topic: unplaced, as
    HDBSCAN's far noise is (a "See attached" body whose file is not public is no issue).
    With fewer units each distinct text stays a topic: the map of what there is."""
    if len(labels) < HDBSCAN_MIN_UNITS or labels.max() < 0:
        return labels
    totals = {c: weights[labels == c].sum() for c in range(int(labels.max()) + 1)}
    if max(totals.values()) < size:
        return labels
    return renumbered(np.where(np.isin(labels, [c for c, t in totals.items() if t < size]), UNPLACED, labels))


def by_submissions(labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Topics renumbered by submissions, most first (ties: the first unit's row)."""
    found = sorted({int(x) for x in labels if x >= 0},
                   key=lambda c: (-float(weights[labels == c].sum()), int(np.flatnonzero(labels == c)[0])))
    out = np.full(len(labels), UNPLACED)
    for number, c in enumerate(found):
        out[labels == c] = number
    return out


def centres(vectors: np.ndarray, labels: np.ndarray, count: int) -> np.ndarray:
    """Each topic's centre: the normalised mean of its members' normalised vectors."""
    unit = normalised(vectors)
    return normalised(np.vstack([unit[labels == c].mean(axis=0) for c in range(count)]))


def place(vectors: np.ndarray, centre_rows: np.ndarray, similarity: float) -> tuple[np.ndarray, np.ndarray]:
    """Each row's nearest centre and its cosine similarity; ``UNPLACED`` below ``similarity``."""
    if len(vectors) == 0 or len(centre_rows) == 0:
        return np.full(len(vectors), UNPLACED), np.zeros(len(vectors))
    sims = normalised(vectors) @ normalised(centre_rows).T
    nearest = sims.argmax(axis=1)
    best = sims[np.arange(len(vectors)), nearest]
    return np.where(best >= similarity, nearest, UNPLACED), best


def match_ids(old: dict[str, np.ndarray], new_centres: np.ndarray, similarity: float) -> list[str | None]:
    """For each new cluster, the stored topic it continues (None: a new topic): the
    assignment of new to old centres with the greatest total similarity (Hungarian), a pair
    kept only when its centres are at least ``similarity`` alike."""
    from scipy.optimize import linear_sum_assignment

    matched: list[str | None] = [None] * len(new_centres)
    if not old or len(new_centres) == 0:
        return matched
    ids = sorted(old)
    sims = normalised(new_centres) @ normalised(np.vstack([old[i] for i in ids])).T
    rows, cols = linear_sum_assignment(-sims)
    for r, c in zip(rows, cols, strict=True):
        if sims[r, c] >= similarity:
            matched[r] = ids[c]
    return matched


def label_terms(texts: list[str], labels: np.ndarray, count: int, top: int = 6) -> list[list[tuple[str, float]]]:
    """Each topic's distinctive terms by class-based TF-IDF: a term's frequency in the topic's
    text (all its members' text as one document) times log(1 + average words per topic /
    the term's frequency over every topic)."""
    from sklearn.feature_extraction.text import CountVectorizer

    documents = [" ".join(t for t, lab in zip(texts, labels, strict=True) if lab == c) for c in range(count)]
    if not any(d.strip() for d in documents):
        return [[] for _ in range(count)]
    vectoriser = CountVectorizer(stop_words="english", ngram_range=(1, 2), min_df=1,
                                 token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z-]+\b")
    try:
        counts = vectoriser.fit_transform(documents).toarray().astype(np.float64)
    except ValueError:  # only stop words
        return [[] for _ in range(count)]
    terms = vectoriser.get_feature_names_out()
    tf = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    average = counts.sum() / max(count, 1)
    idf = np.log(1 + average / np.maximum(counts.sum(axis=0), 1))
    scores = tf * idf
    found = []
    for c in range(count):
        order = np.argsort(-scores[c], kind="stable")[:top * 3]
        chosen: list[tuple[str, float]] = []
        for j in order:
            term = str(terms[j])
            if scores[c, j] <= 0:
                break
            # a word already inside a chosen bigram (or the reverse) says nothing new
            if any(term in t.split() or t in term.split() for t, _ in chosen):
                continue
            chosen.append((term, round(float(scores[c, j]), 5)))
            if len(chosen) == top:
                break
        found.append(chosen)
    return found


SENTENCE_CHARS = 300


def representative_sentence(text: str, terms: list[tuple[str, float]]) -> str:
    """The sentence of ``text`` that holds the most of a topic's distinctive terms (each
    counted by its score; the first such sentence on a tie), cut to ``SENTENCE_CHARS``."""
    import re

    sentences = [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+|\n\s*\n", text) if s.strip()]
    if not sentences:
        return ""
    words = [(set(term.lower().split()), score) for term, score in terms]

    def held(sentence: str) -> float:
        present = set(re.findall(r"[a-z][a-z-]+", sentence.lower()))
        return sum(score for term, score in words if term <= present)

    best = max(range(len(sentences)), key=lambda i: (held(sentences[i]), -i))
    return sentences[best][:SENTENCE_CHARS]


def merge_same_terms(texts: list[str], labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Merge, most shared first, two topics whose 6 distinctive terms (``label_terms``) share
    at least ``SHARED_TERMS``, until no pair does; renumbered by submissions."""
    labels = renumbered(labels)
    while len(labels) and labels.max() >= 1:
        count = int(labels.max()) + 1
        words = [{t for t, _ in found} for found in label_terms(texts, labels, count)]
        shared, a, b = max((len(words[a] & words[b]), a, b) for a in range(count) for b in range(a + 1, count))
        if shared < SHARED_TERMS:
            break
        labels = renumbered(np.where(labels == b, a, labels))
    return by_submissions(labels, weights)
