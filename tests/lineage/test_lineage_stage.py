"""The lineage stage without Luigi, on both state databases: comments tied with their phase,
a rerun that does nothing, +40 new comments giving 40 rows and nothing else rewritten, a
document's type changed redoing its comments alone, and the RIN links; the rule's timeline
and the "every phase" query."""

from __future__ import annotations

from devtools.lineage_corpus import FINAL_DOCKET, PROPOSED_DOCKET, RIN, seed_comments, seed_rule
from pipeline.counters import ROWS_WRITTEN, counters
from pipeline.engine.stage import StageContext
from pipeline.lineage.stage import STAGE, link_docket, unfinished
from pipeline.reading import lineage
from pipeline.reading.lineage import timeline
from pipeline.store import dockets
from pipeline.store.models import DocketDocument, ItemState, LineageComment, LineageLink


def run(runtime, force: bool = False):
    counts: dict[str, int] = {}
    with counters.measure() as io:
        for docket_id in (PROPOSED_DOCKET, FINAL_DOCKET):
            result = link_docket(StageContext(runtime=runtime, run_id="test", force=force),
                                 dockets.require_docket(docket_id))
            for outcome, n in result.counts.items():
                counts[outcome] = counts.get(outcome, 0) + n
    return counts, io


def dump():
    return (sorted(LineageComment.select().tuples()), sorted(LineageLink.select().tuples()),
            sorted(ItemState.select(ItemState.item, ItemState.fingerprint, ItemState.written_at)
                   .where(ItemState.stage == STAGE).tuples()))


def test_ties_then_a_rerun_does_nothing_then_forty_new_are_forty_rows(state):
    seed_rule()
    seed_comments(PROPOSED_DOCKET, 1, 300)
    seed_comments(FINAL_DOCKET, 1, 200)
    counts, _ = run(state)
    assert counts == {"tied": 500, "links_written": 2}
    assert lineage.comments_per_phase([PROPOSED_DOCKET, FINAL_DOCKET]) == {"proposed": 300, "final": 200}
    assert sorted(LineageLink.select(LineageLink.docket, LineageLink.other, LineageLink.value).tuples()) == \
        [(PROPOSED_DOCKET, FINAL_DOCKET, RIN), (FINAL_DOCKET, PROPOSED_DOCKET, RIN)]
    assert unfinished(PROPOSED_DOCKET) == unfinished(FINAL_DOCKET) == 0

    before = dump()
    counts, io = run(state)
    assert counts == {} and io.get(ROWS_WRITTEN, 0) == 0 and dump() == before

    seed_comments(FINAL_DOCKET, 201, 40)
    assert unfinished(FINAL_DOCKET) == 40
    counts, io = run(state)
    assert counts == {"tied": 40}
    after = dump()
    assert len(after[0]) - len(before[0]) == 40 and set(before[0]) <= set(after[0])
    assert set(before[2]) <= set(after[2])  # no earlier state row rewritten
    assert run(state)[0] == {}

    # The final rule's document retyped: its 240 comments alone are redone.
    DocketDocument.update(document_type="Other").where(DocketDocument.docket == FINAL_DOCKET).execute()
    assert run(state)[0] == {"tied": 240}
    assert lineage.comments_per_phase([FINAL_DOCKET]) == {"other": 240}


def test_the_timeline_and_the_organisations_of_every_phase(state):
    from pipeline.store.models import Organisation, OrganisationMember

    seed_rule()
    proposed = seed_comments(PROPOSED_DOCKET, 1, 3)
    final = seed_comments(FINAL_DOCKET, 1, 2)
    run(state)
    for org in ("both", "only"):
        Organisation.insert(id=org, name=org.title(), normalised=org).execute()
    for item, org in ((proposed[0], "both"), (proposed[1], "only"), (final[0], "both"), (final[1], "both")):
        OrganisationMember.insert(item=item, docket=item[:13], organisation=org, variant=org, written=org,
                                  source="organization").execute()
    t = timeline(RIN)
    assert t.dockets == [PROPOSED_DOCKET, FINAL_DOCKET]
    assert [(s.phase, s.posted, s.window_end, s.comments) for s in t.steps] == \
        [("proposed", "2026-01-05", "2026-03-06", 3), ("final", "2026-07-01", "2026-08-31", 2)]
    assert t.phases == {"proposed": 3, "final": 2}
    assert timeline(FINAL_DOCKET).dockets == [PROPOSED_DOCKET, FINAL_DOCKET]  # linked by RIN
    assert timeline("NOPE-2026-0001") is None
    both = lineage.organisations_in_every_phase(t.dockets, ["proposed", "final"])
    assert both == [("both", "Both", {"proposed": 1, "final": 2})]
