"""The position classifier on real comments: 101 comments on OMB-2026-0034 with reference
positions (``../shared/realdata/labels/stance-omb-dev.csv``; its README says how they were made).

    .venv/bin/python -m benchmarks positions_real [--realdata ../shared/realdata]
        [--embedder minilm,hashing] [--trials 100] [--json]

Each comment's text is chunked and embedded as the index does it (``chunk_text`` and the
index's embedder classes: MiniLM, and the hashing embedder beside it), its vector the mean of
its chunks' (``classifier.mean_vectors``' rule), and the stage's own classifier
(``classifier.learn``: logistic regression, classes balanced) is scored by stratified 5-fold
cross-validation: accuracy, macro-F1 over the positions, macro-F1 over support / oppose /
other, each position's precision and recall; beside it a bare logistic regression (no class
weights) on the same vectors, and a learning curve (10, 20, 40, 80 codes, the rest scored).

The labels' ``unclear_junk`` (no comment text, a bare link, gibberish) is ``off_topic``: it
says nothing about the rule, which is what ``off_topic`` means here (docs/OPERATING.md).

Prevalence: a seeded random half of the comments is "coded", and the shares of all 101 are
estimated from it both ways (design-based: Wilson; model-based: the classifier's predictions
of the other half corrected by its cross-validated confusion matrix); printed against the
labels' true shares, with the share of ``--trials`` seeded halves whose interval covered the
true share.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks.common import ROOT
from pipeline.index.chunking import chunk_text
from pipeline.index.embedders import make_embedder, token_budget_of
from pipeline.positions import classifier, prevalence
from pipeline.positions.codes import POSITIONS

LABELS = "labels/stance-omb-dev.csv"
MAPPED = {"support": "support", "oppose": "oppose", "no_position": "no_position", "unclear_junk": "off_topic"}
CURVE = (10, 20, 40, 80)
CHUNK_CHARS, CHUNK_OVERLAP = 1200, 150  # the index's defaults (chunk_chars, chunk_overlap)


def read_labels(realdata: Path) -> tuple[list[str], list[str], list[str]]:
    """(ids, texts, positions) of the labelled comments."""
    with (realdata / LABELS).open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [r["id"] for r in rows], [r["text"] or "" for r in rows], [MAPPED[r["label"]] for r in rows]


def comment_vectors(embedder, texts: list[str]):
    """One vector per text: the mean of its chunks' unit vectors, as the stage reads the index."""
    import numpy as np

    tokens = token_budget_of(embedder)
    chunked = [[c.text for c in chunk_text([("", t)], max_chars=CHUNK_CHARS, overlap=CHUNK_OVERLAP, tokens=tokens)]
               or [t or " "] for t in texts]
    flat = embedder.embed([c for chunks in chunked for c in chunks])
    rows, start = [], 0
    for chunks in chunked:
        part = np.asarray(flat[start:start + len(chunks)], dtype=np.float64)
        start += len(chunks)
        part = part / np.maximum(np.linalg.norm(part, axis=1, keepdims=True), 1e-12)
        mean = part.mean(axis=0)
        rows.append(mean / max(float(np.linalg.norm(mean)), 1e-12))
    return np.vstack(rows)


def scores(truth: list[str], predicted: list[str]) -> dict:
    from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support

    present = [p for p in POSITIONS if p in truth]
    precision, recall, _, support = precision_recall_fscore_support(truth, predicted, labels=present, zero_division=0)
    three = [p if p in ("support", "oppose") else "other" for p in truth]
    three_predicted = [p if p in ("support", "oppose") else "other" for p in predicted]
    return {"accuracy": round(accuracy_score(truth, predicted), 3),
            "macro_f1": round(f1_score(truth, predicted, labels=present, average="macro", zero_division=0), 3),
            "macro_f1_support_oppose_other": round(f1_score(three, three_predicted, average="macro", zero_division=0), 3),
            "per_class": {p: {"precision": round(float(pr), 3), "recall": round(float(r), 3), "n": int(n)}
                          for p, pr, r, n in zip(present, precision, recall, support, strict=True)}}


def bare_baseline(X, y: list[str]) -> list[str]:
    """A plain scikit-learn logistic regression (no class weights), same folds."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    return list(cross_val_predict(LogisticRegression(max_iter=2000), X, y,
                                  cv=StratifiedKFold(classifier.FOLDS, shuffle=True, random_state=classifier.SEED)))


def learning_curve(X, y: list[str], seeds: int = 10) -> dict[int, float]:
    """Macro-F1 on the comments left over, the model learning from n random codes (mean of seeds)."""
    from sklearn.metrics import f1_score

    found = {}
    for n in CURVE:
        runs = []
        for seed in range(seeds):
            order = random.Random(seed).sample(range(len(y)), len(y))
            train, test = order[:n], order[n:]
            labels = {str(i): y[i] for i in train}
            if classifier.codes_needed(Counter(labels.values()), 2):
                continue
            fitted = classifier.learn(labels, {str(i): X[i] for i in train})
            predicted = [p for p, _ in fitted.predict(X[test])]
            truth = [y[i] for i in test]  # macro over the positions the rest holds
            runs.append(f1_score(truth, predicted, labels=sorted(set(truth)), average="macro", zero_division=0))
        found[n] = round(sum(runs) / len(runs), 3) if runs else None
    return found


def half_coded(X, y: list[str], seed: int) -> dict:
    """The shares of all comments, estimated from a seeded random half coded."""
    order = random.Random(seed).sample(range(len(y)), len(y))
    coded, rest = order[:len(y) // 2], order[len(y) // 2:]
    labels = {str(i): y[i] for i in coded}
    design = prevalence.design_shares([y[i] for i in coded], [1] * len(coded), [1] * len(coded), POSITIONS)
    fitted = classifier.learn(labels, {str(i): X[i] for i in coded})
    predicted = Counter(p for p, _ in fitted.predict(X[rest]))
    coded_mass = Counter(y[i] for i in coded)
    model = prevalence.adjusted_shares(dict(coded_mass), dict(predicted), fitted.pairs, fitted.classes, POSITIONS)
    return {"design": design, "model": model}


def prevalence_report(X, y: list[str], trials: int) -> dict:
    true = {p: sum(1 for v in y if v == p) / len(y) for p in POSITIONS}
    shown = half_coded(X, y, 0)
    covered = {m: Counter() for m in ("design", "model")}
    for seed in range(trials):
        found = half_coded(X, y, seed)
        for method, shares in found.items():
            for p in POSITIONS:
                covered[method][p] += shares[p].low - 1e-9 <= true[p] <= shares[p].high + 1e-9
    return {"true": {p: round(s, 4) for p, s in true.items()},
            **{m: {p: s.as_json() for p, s in shown[m].items()} for m in shown},
            "coverage": {m: {p: round(c[p] / trials, 3) for p in POSITIONS} for m, c in covered.items()}}


def run_embedder(name: str, texts: list[str], y: list[str], trials: int, cache: str) -> dict:
    embedder = make_embedder(name, cache_dir=cache) if name == "minilm" else make_embedder(name)
    X = comment_vectors(embedder, texts)
    fitted = classifier.learn({str(i): p for i, p in enumerate(y)}, {str(i): X[i] for i in range(len(y))})
    return {"embedder": embedder.id, "comments": len(y), "classifier": scores([t for t, _ in fitted.pairs],
                                                                              [p for _, p in fitted.pairs]),
            "bare_logistic_regression": scores(y, bare_baseline(X, y)),
            "learning_curve_macro_f1": learning_curve(X, y), "prevalence": prevalence_report(X, y, trials)}


def lines(report: dict) -> list[str]:
    c = report["classifier"]
    out = [f"== {report['embedder']} ({report['comments']} comments, 5-fold cross-validation)",
           f"classifier: accuracy {c['accuracy']}, macro-F1 {c['macro_f1']}, macro-F1 support/oppose/other "
           f"{c['macro_f1_support_oppose_other']}"]
    b = report["bare_logistic_regression"]
    out.append(f"bare logistic regression: accuracy {b['accuracy']}, macro-F1 {b['macro_f1']}, "
               f"support/oppose/other {b['macro_f1_support_oppose_other']}")
    out += [f"  {p}: precision {v['precision']}, recall {v['recall']} (n={v['n']})" for p, v in c["per_class"].items()]
    out.append("learning curve (macro-F1 on the rest): "
               + ", ".join(f"{n} codes {f}" for n, f in report["learning_curve_macro_f1"].items()))
    pr = report["prevalence"]
    out.append("prevalence from a random half coded (share, 95% CI) vs the labels' true share; coverage over trials:")
    for p in POSITIONS:
        d, m = pr["design"][p], pr["model"][p]
        out.append(f"  {p:12} true {pr['true'][p]:.3f}  design-based {d['share']:.3f} ({d['low']:.3f}-{d['high']:.3f}) "
                   f"cov {pr['coverage']['design'][p]:.2f}  model-based {m['share']:.3f} ({m['low']:.3f}-"
                   f"{m['high']:.3f}) cov {pr['coverage']['model'][p]:.2f}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", type=Path, default=ROOT.parent / "shared" / "realdata")
    parser.add_argument("--embedder", default="minilm,hashing", help="comma-separated: minilm, hashing")
    parser.add_argument("--trials", type=int, default=100, help="seeded halves the interval coverage is counted over")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not (args.realdata / LABELS).exists():
        print(f"no {LABELS} under {args.realdata}")
        return 2
    ids, texts, y = read_labels(args.realdata)
    with tempfile.TemporaryDirectory(prefix="positions-real-") as cache:
        reports = [run_embedder(name.strip(), texts, y, args.trials, cache) for name in args.embedder.split(",")]
    if args.json:
        print(json.dumps(reports, indent=1))
    else:
        print("\n".join(line for r in reports for line in [*lines(r), ""]))
    return 0
