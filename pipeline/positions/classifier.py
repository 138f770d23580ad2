"""The position classifier: a logistic regression (classes balanced) over each comment's mean
passage vector as the index holds it (no second embedding).

``learn`` is the one entry for labels: it takes comment id -> position from any source (an
analyst's codes today; a language-model judge's labels could be handed to it the same way)
with the comments' vectors, and returns the fitted model with its out-of-fold predictions.
The model is kept as JSON (classes, coefficients, intercept), so a later run predicts new
comments without fitting again.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

COLLECTION = "comments"  # the index collection of comments (pipeline.index.stage.COLLECTIONS)
MIN_PER_CLASS = 3  # codes a position needs to count towards the two a model needs
MIN_CLASSES = 2
FOLDS = 5
SEED = 0


def codes_needed(counts: Mapping[str, int], min_codes: int) -> int:
    """How many more codes a docket needs before a model is fitted: at least ``min_codes`` in
    all, and at least two positions with ``MIN_PER_CLASS`` codes each (0: enough)."""
    total = sum(counts.values())
    gaps = sorted(max(0, MIN_PER_CLASS - n) for n in counts.values())
    gaps += [MIN_PER_CLASS] * max(0, MIN_CLASSES - len(gaps))
    return max(min_codes - total, sum(gaps[:MIN_CLASSES]), 0)


def mean_vectors(index_db, docket_id: str, keys) -> dict:
    """comment id -> the mean of its passages' unit vectors, made a unit vector, for those of
    ``keys`` with passages in the index (one query)."""
    import numpy as np

    by_item: dict[str, list] = {}
    for key, _, _, vector in index_db.passage_vectors(COLLECTION, docket_id, sorted(keys)):
        by_item.setdefault(key, []).append(np.asarray(vector, dtype=np.float64))
    found = {}
    for key, vectors in by_item.items():
        rows = np.vstack(vectors)
        rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        mean = rows.mean(axis=0)
        found[key] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return found


@dataclass
class Fitted:
    classes: list[str]
    coef: list[list[float]]
    intercept: list[float]
    pairs: list[tuple[str, str]]  # (label, out-of-fold prediction) of every training comment

    def to_json(self) -> str:
        return json.dumps({"classes": self.classes, "coef": self.coef, "intercept": self.intercept})

    @classmethod
    def from_json(cls, text: str, pairs: list[tuple[str, str]]) -> Fitted:
        stored = json.loads(text)
        return cls(stored["classes"], stored["coef"], stored["intercept"], pairs)

    def predict(self, vectors) -> list[tuple[str, float]]:
        """(position, probability) for each row of ``vectors``."""
        import numpy as np

        scores = np.asarray(vectors) @ np.asarray(self.coef).T + np.asarray(self.intercept)
        if len(self.classes) == 2:  # one column: the second class's log-odds
            second = 1 / (1 + np.exp(-scores[:, 0]))
            probabilities = np.column_stack([1 - second, second])
        else:
            scores = scores - scores.max(axis=1, keepdims=True)
            probabilities = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
        best = probabilities.argmax(axis=1)
        return [(self.classes[b], float(probabilities[i, b])) for i, b in enumerate(best)]


def _model():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(class_weight="balanced", max_iter=2000, C=1.0)


def out_of_fold(X, y: list[str], seed: int = SEED) -> list[str]:
    """Each comment's prediction by a model that did not see it (stratified folds, seeded;
    a position with fewer codes than folds falls in fewer of them)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    counts = Counter(y)
    folds = max(2, min(FOLDS, max(counts.values())))  # more folds than the largest class: refused
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "the least populated class has only 1 member"
        return list(cross_val_predict(_model(), X, y, cv=StratifiedKFold(folds, shuffle=True, random_state=seed)))


def learn(labels: Mapping[str, str], vectors: Mapping) -> Fitted:
    """The model of ``labels`` (comment id -> position, from any source) over those of them
    with a vector in ``vectors``; enough labels are the caller's to check (``codes_needed``)."""
    import numpy as np

    keys = sorted(k for k in labels if k in vectors)
    X = np.vstack([vectors[k] for k in keys])
    y = [labels[k] for k in keys]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _model().fit(X, y)
    pairs = list(zip(y, out_of_fold(X, y), strict=True))
    return Fitted([str(c) for c in model.classes_], model.coef_.round(8).tolist(),
                  model.intercept_.round(8).tolist(), pairs)
