"""Every stage twice over ALL of ../shared/realdata/mirror (every docket folder it holds, the
derived CDO and NIST dockets included, MiniLM) through ``luigi --module pipeline IndexAll``, as
a user's cron runs it: both runs exit 0, the first reaches every item, the second does nothing.
The store is the session's ``real_store`` (tests/fixtures/realdata_store.py)."""

from __future__ import annotations

import pytest

from pipeline.index.embedders import MiniLMEmbedder
from pipeline.index.stage import COLLECTIONS
from pipeline.store.models import DocketStage, Item

pytestmark = pytest.mark.postgres


def test_every_stage_runs_twice_over_the_whole_real_mirror_and_the_second_run_does_nothing(real_store, realdata):
    first, second = real_store.runs
    print(f"IndexAll over the whole real mirror: {first.seconds:.0f}s, then {second.seconds:.0f}s")
    assert first.returncode == 0, first.tail()
    assert "Traceback" not in first.stderr, first.tail()
    with real_store.opened() as runtime:
        # Every comment and document the mirror holds is an item, and every docket has every
        # stage's marker: the first run finished the chain for each.
        mirror = realdata / "mirror/raw-data"
        expected = {p.stem for p in mirror.glob("*/*/text-*/comments/*.json")} | {
            p.stem for p in mirror.glob("*/*/text-*/documents/*.json")}
        assert {i.key for i in Item.select()} == expected
        # ... each indexed (a comment whose file the mirror lacks by what it has), by MiniLM.
        indexed = {key: state.embedder_id for docket in real_store.dockets for collection in set(COLLECTIONS.values())
                   for key, state in runtime.index_db().state_for_docket(collection, docket).items()}
        assert indexed.keys() == expected and set(indexed.values()) == {MiniLMEmbedder.model_id()}
        done = {(m.docket, m.stage) for m in DocketStage.select() if m.completed_at}
        assert {d for d, stage in done if stage == "topics"} == set(real_store.dockets)
    # The second run, at once: nothing new anywhere, so no stage runs for any docket.
    assert second.returncode == 0, second.tail()
    assert second.stage_runs == [], second.tail()
    assert "Did not run any tasks" in second.stderr and "stage_calls=" not in second.stderr, second.tail()
