"""The judged query set on real text (benchmarks/judged_queries.yaml) is whole and names only
what the real mirror holds, and the runner's metrics are the textbook ones."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.search_judged import NO_ANSWER, load_queries, ndcg, recall, reciprocal_rank, resolve


def test_the_query_file_parses_with_enough_queries_of_every_kind():
    queries = load_queries()
    kinds = {q.kind for q in queries}
    assert len(queries) >= 40
    assert sum(q.kind == NO_ANSWER for q in queries) >= 10
    assert {"exact", "paraphrase", "question", "name"} <= kinds
    assert all(q.note.strip() and q.query.strip() for q in queries)
    assert all((q.ids or q.rules) for q in queries if q.kind != NO_ANSWER)


def mirror_items(realdata) -> dict[str, tuple[str, str]]:
    """Every record of the real mirror by id: its docket and its own text (the comment body;
    attachments aside)."""
    items = {}
    for path in (realdata / "mirror" / "raw-data").glob("*/*/text-*/*/*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
        if isinstance(data, dict) and data.get("type") in ("comments", "documents"):
            attributes = data.get("attributes") or {}
            items[data["id"]] = (attributes.get("docketId") or "", attributes.get("comment") or "")
    return items


def test_every_judged_id_is_in_the_real_mirror_and_every_rule_selects_some(realdata):
    items = mirror_items(realdata)
    queries = load_queries()
    listed = {item for q in queries for item in q.ids}
    assert listed - set(items) == set()
    # The rules read the comments' own text here (they judge form letters, which have no
    # attachments): each must select at least one comment, of the docket it names.
    assert resolve(queries, items) == []
    for q in queries:
        for rule in q.rules:
            if rule.get("docket"):
                assert any(items[i][0] == rule["docket"] for i in q.relevant if i not in q.ids), (q.id, rule)


def test_a_form_letter_rule_selects_every_copy_and_grades_the_reworded_ones_lower(realdata):
    items = mirror_items(realdata)
    [ex03] = [q for q in load_queries() if q.id == "ex03"]
    resolve([ex03], items)
    flat = {i: " ".join(text.lower().split()) for i, (_, text) in items.items()}
    copies = {i for i, text in flat.items() if "no place in our ecosystem" in text}
    verbatim = {i for i in copies if "anticoagulant rodenticides have no place in our ecosystem" in flat[i]}
    assert set(ex03.relevant) == copies and len(verbatim) >= 20
    assert {i for i, grade in ex03.relevant.items() if grade == 2} == verbatim
    # Read: the two reworded copies ("these anticoagulent rodenticides have no place ...",
    # "... rodenticides as they have no place ...") are the same letter, graded 1.
    assert copies - verbatim == {"EPA-HQ-OPP-2015-0481-0900006484722c37", "EPA-HQ-OPP-2015-0481-row00500020"}


def test_ndcg_mrr_and_recall_on_a_hand_example():
    grades = {"a": 2, "b": 1, "c": 2}
    ranked = ["a", "x", "b"]
    # DCG = 2/log2(2) + 0 + 1/log2(4) = 2.5; ideal = 2 + 2/log2(3) + 1/log2(4)
    assert ndcg(ranked, grades) == pytest.approx(2.5 / (2 + 2 / math.log2(3) + 0.5))
    assert ndcg(["a", "c", "b"], grades) == pytest.approx(1.0)
    assert ndcg(["x", "y"], grades) == 0.0
    assert reciprocal_rank(["x", "y", "b"], grades) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x"], grades) == 0.0
    assert recall(ranked, grades) == pytest.approx(2 / 3)
    # Fifteen copies of a form letter: ten of them in the ten results is all that can be had.
    copies = {f"copy{i}": 2 for i in range(15)}
    assert recall([f"copy{i}" for i in range(10)], copies) == 1.0
    assert recall(["x"] * 9 + ["copy3"], copies) == pytest.approx(0.1)


def test_a_malformed_query_is_refused_by_name(tmp_path):
    path = tmp_path / "q.yaml"
    path.write_text("queries:\n- {id: z1, kind: none, query: q, note: n, relevant: {A-1: 2}}\n")
    with pytest.raises(ValueError, match="z1"):
        load_queries(path)
    path.write_text("queries:\n- {id: z2, kind: name, query: q, note: n, relevant: {A-1: 3}}\n")
    with pytest.raises(ValueError, match="z2"):
        load_queries(path)
