"""How well a guesser of positions (the classifier, out of fold; the language-model judge)
agrees with the analyst's codes, from its (code, guess) pairs: the share it got exactly, its
macro-F1 over support / oppose / other (mixed, no_position and off_topic together: the
distinction the shares are read for), and its confusion matrix over the positions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pipeline.positions.codes import POSITIONS

SIDES = ("support", "oppose", "other")


def side(position: str) -> str:
    return position if position in ("support", "oppose") else "other"


def score(pairs: Sequence[tuple[str, str]]) -> dict | None:
    """{pairs, agreement, macro_f1, confusion: {code: {guess: n}}}; None without pairs. A side
    neither coded nor guessed is left out of the macro average (it says nothing either way)."""
    if not pairs:
        return None
    sides = [(side(t), side(g)) for t, g in pairs]
    f1 = []
    for name in SIDES:
        hit = sum(1 for t, g in sides if t == g == name)
        wrong = sum(1 for t, g in sides if (t == name) != (g == name))
        if hit or wrong:
            f1.append(2 * hit / (2 * hit + wrong))
    counts = Counter(pairs)
    confusion = {code: {guess: counts[(code, guess)] for guess in POSITIONS if counts[(code, guess)]}
                 for code in POSITIONS if any(t == code for t, _ in pairs)}
    return {"pairs": len(pairs), "agreement": round(sum(t == g for t, g in pairs) / len(pairs), 4),
            "macro_f1": round(sum(f1) / len(f1), 4), "confusion": confusion}
