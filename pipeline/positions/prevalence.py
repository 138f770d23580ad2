"""How many support, oppose, ...: shares of a docket with 95 % intervals, two ways.

* **design-based** (``design_shares``): from the coded sample alone. Each coded unit (a
  comment, or a campaign's letter standing for its members) is weighted by what it stands
  for in the target (comments or submissions) over how likely the sample was to draw it
  (``positions sample`` draws in proportion to submissions); the interval is Wilson's, over
  the weighted sample's effective size (Kish's). Needs no model; wide when few are coded.
* **model-based** (``adjusted_shares``): every uncoded unit's predicted position, counted,
  then corrected by the classifier's cross-validated confusion matrix (adjusted classify and
  count: the predicted shares are ``M^T p`` for true shares ``p``, solved non-negative), coded
  units counted as coded. Its interval is a seeded bootstrap over the coded set: the
  confusion matrix is made again from resampled (code, out-of-fold prediction) pairs, each
  row drawn from its Dirichlet posterior (``confusion``).

Plain functions over numbers: no store, no model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054
BOOTSTRAP_ROUNDS = 400
BOOTSTRAP_SEED = 2026


@dataclass(frozen=True)
class Share:
    share: float
    low: float
    high: float

    def as_json(self) -> dict:
        return {"share": round(self.share, 4), "low": round(self.low, 4), "high": round(self.high, 4)}


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for a proportion ``successes / n`` (``n`` may be an effective,
    non-integer size). (0, 1) when there is no sample."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def design_shares(labels: Sequence[str], target: Sequence[float], drawn: Sequence[float],
                  positions: Sequence[str]) -> dict[str, Share]:
    """Each position's share of the target from a sample: unit i has code ``labels[i]``,
    stands for ``target[i]`` (its comments or submissions) and was drawn with probability in
    proportion to ``drawn[i]``."""
    weights = [t / d for t, d in zip(target, drawn, strict=True) if d > 0]
    kept = [label for label, d in zip(labels, drawn, strict=True) if d > 0]
    total = sum(weights)
    if not total:
        return {p: Share(0.0, 0.0, 1.0) for p in positions}
    effective = total * total / sum(w * w for w in weights)  # Kish's effective sample size
    found = {}
    for position in positions:
        share = sum(w for w, label in zip(weights, kept, strict=True) if label == position) / total
        low, high = wilson(share * effective, effective)
        found[position] = Share(share, low, high)
    return found


def confusion(pairs: Sequence[tuple[str, str]], classes: Sequence[str], rng=None):
    """M[j, k]: the share of codes ``classes[j]`` the model (out of fold) called ``classes[k]``;
    a class with no codes in ``pairs`` is taken as always recognised (the identity row). With
    ``rng``, each row is drawn from its Dirichlet posterior (the counts plus Jeffreys' 0.5 a
    cell): 24 codes all predicted right do not prove the model never errs, and a bootstrap of
    them alone would give an interval of width 0."""
    import numpy as np

    index = {c: i for i, c in enumerate(classes)}
    counts = np.zeros((len(classes), len(classes)))
    for true, predicted in pairs:
        if true in index and predicted in index:
            counts[index[true], index[predicted]] += 1
    rows = counts.sum(axis=1, keepdims=True)
    if rng is not None:
        drawn = np.vstack([rng.dirichlet(row + 0.5) for row in counts])
        return np.where(rows > 0, drawn, np.eye(len(classes)))
    return np.where(rows > 0, counts / np.where(rows > 0, rows, 1), np.eye(len(classes)))


def adjust(predicted: Sequence[float], matrix):
    """The true shares ``p`` (non-negative, summing to 1) whose expected predicted shares
    ``M^T p`` come nearest ``predicted``."""
    import numpy as np
    from scipy.optimize import nnls

    q = np.asarray(predicted, dtype=float)
    if not q.sum():
        return q
    solved, _ = nnls(np.asarray(matrix).T, q)
    return solved / solved.sum() if solved.sum() else q / q.sum()


def adjusted_shares(coded_mass: dict[str, float], predicted_mass: dict[str, float],
                    pairs: Sequence[tuple[str, str]], classes: Sequence[str], positions: Sequence[str],
                    rounds: int = BOOTSTRAP_ROUNDS, seed: int = BOOTSTRAP_SEED) -> dict[str, Share]:
    """Each position's share: ``coded_mass`` (position -> the target mass of coded units)
    counted as coded, ``predicted_mass`` (position -> the mass the model put there) corrected by
    the confusion matrix of ``pairs`` over ``classes`` (what the model can say); the interval
    a percentile bootstrap over ``pairs``."""
    import numpy as np

    def shares(matrix) -> np.ndarray:
        q = np.array([predicted_mass.get(c, 0.0) for c in classes])
        model = adjust(q, matrix) * q.sum() if q.sum() else q
        mass = np.array([coded_mass.get(p, 0.0) + (model[classes.index(p)] if p in classes else 0.0)
                         for p in positions])
        return mass / mass.sum() if mass.sum() else mass

    point = shares(confusion(pairs, classes))
    rng = np.random.default_rng(seed)
    drawn = np.array([shares(confusion([pairs[i] for i in rng.integers(0, len(pairs), len(pairs))], classes, rng))
                      for _ in range(rounds)]) if pairs else np.zeros((0, len(positions)))
    found = {}
    for n, position in enumerate(positions):
        low, high = (np.percentile(drawn[:, n], [2.5, 97.5]) if len(drawn) else (point[n], point[n]))
        found[position] = Share(float(point[n]), float(min(low, point[n])), float(max(high, point[n])))
    return found
