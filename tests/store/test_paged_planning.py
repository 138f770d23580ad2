"""Planning reads state rows a page at a time (keyset pagination): the same plan as over
every row, never more than two pages held."""

from __future__ import annotations

from pipeline.extract import stage as extract
from pipeline.store import item_states

D = "AB-2026-0001"


def _rows(n: int, *, done_every: int) -> None:
    rows = []
    for i in range(n):
        key = f"{D}-{i:04d}"
        rows.append({"stage": "backfill", "item": key, "docket": D, "content_hash": f"h{i}",
                     "state": "ok", "run_id": "t"})
        if i % done_every == 0:
            rows.append({"stage": "extract", "item": key, "docket": D, "state": "ok", "run_id": "t",
                         "fingerprint": extract.item_fingerprint(f"h{i}")})
    rows.append({"stage": "backfill", "item": "AB-2026-0002-0001", "docket": "AB-2026-0002",
                 "content_hash": "x", "state": "ok", "run_id": "t"})  # another docket's row
    item_states.transition_many(rows)


def test_pages_cover_every_row_once_with_the_other_stage_beside_it(state, monkeypatch):
    _rows(23, done_every=3)
    pages = list(item_states.paired_pages("backfill", "extract", D, size=5))
    assert [len(page) for page, _ in pages] == [5, 5, 5, 5, 3]
    seen = [key for page, _ in pages for key in page]
    assert seen == sorted(item_states.states_for_docket("backfill", D))
    for page, others in pages:
        assert set(others) <= set(page) | set(item_states.states_for_docket("extract", D))
        assert all(min(page) <= key <= max(page) for key in others)


def test_the_paged_plan_is_the_plan_over_every_row(state, monkeypatch):
    _rows(23, done_every=3)
    whole = extract.plan(item_states.states_for_docket("backfill", D),
                         item_states.states_for_docket("extract", D), False)
    monkeypatch.setattr(item_states.paired_pages, "__defaults__", (4,))
    assert extract.unfinished(D) == len(whole) == 23 - 8
    paged = {}
    for todo, _ in extract.planned(D, False, extract.EXTRACTOR_VERSION):
        assert len(todo) <= 4
        paged.update(todo)
    assert paged == whole
