"""A docket's prevalence figures from its members as stored: shares of comments and of
submissions, design-based (the coded units alone) and model-based (every unit, the model's
predictions corrected by its cross-validated confusion matrix, or the language-model judge's
labels by its confusion against the codes), each with a 95 % interval.
``pipeline.positions.prevalence`` is the arithmetic; this gathers its inputs."""

from __future__ import annotations

from collections import defaultdict

from pipeline.positions import prevalence
from pipeline.positions.codes import POSITIONS

DESIGN = ("design-based: the coded comments as a random sample (drawn in proportion to submissions, "
          "as `positions sample` draws), Wilson 95% interval")
MODEL = ("model-based: every comment's position (coded, or the classifier's), the classifier's counts "
         "corrected by its cross-validated confusion matrix; 95% interval by a seeded bootstrap over the codes")
JUDGE = ("model-based: every comment's position (coded, or the language model's), the language model's counts "
         "corrected by its confusion matrix against the analyst's codes; 95% interval by a seeded bootstrap "
         "over the codes")
PREDICTED = ("model", "llm")  # the sources that are a guess, corrected; every other is a code


def docket_estimates(members, pairs: list[tuple[str, str]], classes: list[str], method: str = MODEL) -> dict:
    """The docket's figures from its member rows (``PositionMember``), the guesser's (code,
    its guess) pairs (the classifier's out of fold, or the judge's) and the positions it can
    give; ``method`` says which the model-based figures are."""
    by_unit: dict[str, list] = defaultdict(list)
    for m in members:
        by_unit[m.unit].append(m)
    coded_units = []  # (position, comments, submissions)
    mass = {target: ({}, {}) for target in ("comments", "submissions")}  # (coded, predicted)
    for rows in by_unit.values():
        known = [m.position for m in rows if m.source not in PREDICTED]
        if known:
            coded_units.append((max(set(known), key=known.count), len(rows), sum(m.submissions for m in rows)))
        for m in rows:
            for target, weight in (("comments", 1), ("submissions", m.submissions)):
                side = mass[target][1 if m.source in PREDICTED else 0]
                side[m.position] = side.get(m.position, 0) + weight
    found = {"coded_units": len(coded_units), "units": len(by_unit), "methods": {"design": DESIGN, "model": method}}
    for target, n in (("comments", 1), ("submissions", 2)):
        design = prevalence.design_shares([u[0] for u in coded_units], [u[n] for u in coded_units],
                                          [u[2] for u in coded_units], POSITIONS)
        model = prevalence.adjusted_shares(mass[target][0], mass[target][1], pairs, classes, POSITIONS)
        found[target] = {"total": sum(mass[target][0].values()) + sum(mass[target][1].values()),
                         "design": {p: s.as_json() for p, s in design.items()},
                         "model": {p: s.as_json() for p, s in model.items()}}
    return found
