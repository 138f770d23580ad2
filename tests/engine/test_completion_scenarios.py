"""A changed setting and a finished docket, end to end through `luigi --module pipeline`:
the wrapper and its tasks agree on "done", the changed setting redoes exactly the work it
shapes, and the run after it does nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipeline.store import dockets
from pipeline.store.models import ItemState, Run
from tests.fixtures.paths import ROOT
from tests.fixtures.pipeline_fixtures import built_store

NOTHING_RAN = "Did not run any tasks"


@pytest.fixture
def store(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=1, comments=8, build=False) as built:
        yield built


def luigi(store, *args: str, **settings: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(store.env(), PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"))
    env.update({f"DOCKETEER_{k.upper()}": v for k, v in settings.items()})
    result = subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", *args,
                             "--local-scheduler"], env=env, cwd=store.root, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def ran(result, family: str, docket: str) -> bool:
    """The run's worker ran ``family`` over ``docket``."""
    return f" running   {family}(docket={docket}," in result.stderr


def redone(counts: dict) -> int:
    """Items a stage run decided afresh (not found unchanged)."""
    return sum(counts.get(state, 0) for state in ("ok", "ocr_needed", "failed", "unsupported",
                                                   "too_large", "gone"))


def extract_items() -> int:
    return ItemState.select().where(ItemState.stage == "extract").count()


def last_counts(stage: str) -> dict:
    row = Run.select().where(Run.stage == stage).order_by(Run.id.desc()).first()
    return json.loads(row.counters)


def built_and_sealed(store) -> str:
    [docket] = store.dockets
    luigi(store, "CampaignsAll")  # the whole chain: fetch ... index, campaigns
    dockets.seal(docket, "manual")
    luigi(store, "CampaignsAll")  # every stage records itself done under the seal
    assert NOTHING_RAN in luigi(store, "CampaignsAll").stderr
    return docket


def cut_by(cap: int) -> set[str]:
    """Items whose extract row says the item cap cut them."""
    return {r.item for r in ItemState.select().where(ItemState.stage == "extract")
            if f"item text capped at {cap} characters" in (r.reason or "")}


def test_a_lowered_item_cap_redoes_exactly_the_items_it_cuts_on_a_sealed_docket(store):
    docket = built_and_sealed(store)
    assert not cut_by(1000)
    lowered = luigi(store, "ExtractAll", max_item_chars="1000")
    assert "1 docket complete, skipped" not in lowered.stderr
    assert ran(lowered, "ExtractText", docket)
    cut = cut_by(1000)
    assert cut, "the generated corpus has items longer than 1,000 characters"
    counts, items = last_counts("extract"), extract_items()
    assert redone(counts) == len(cut) and counts["unchanged"] == items - len(cut), counts
    again = luigi(store, "ExtractAll", max_item_chars="1000")
    assert NOTHING_RAN in again.stderr and "1 docket complete, skipped" in again.stderr
    # IndexAll reaches the cut items through the index's own terms, once.
    indexed = luigi(store, "IndexAll", max_item_chars="1000")
    assert ran(indexed, "IndexDocket", docket) and not ran(indexed, "ExtractText", docket)
    assert NOTHING_RAN in luigi(store, "IndexAll", max_item_chars="1000").stderr
    # The cap raised again: the items it cut are redone, and nothing else.
    raised = luigi(store, "ExtractAll")
    assert ran(raised, "ExtractText", docket)
    assert not cut_by(1000)
    counts = last_counts("extract")
    assert redone(counts) == len(cut) and counts["unchanged"] == items - len(cut), counts
    assert NOTHING_RAN in luigi(store, "ExtractAll").stderr


def test_a_changed_threshold_regroups_a_sealed_docket(store):
    docket = built_and_sealed(store)
    regrouped = luigi(store, "CampaignsAll", campaign_threshold="0.8")
    assert ran(regrouped, "CampaignGroups", docket)
    grouped = ItemState.select().where(ItemState.stage == "campaigns").count()
    counts = last_counts("campaigns")  # every comment regrouped (placed, or too short to compare)
    assert grouped and counts.get("placed", 0) + counts.get("too_short", 0) + counts.get("no_text", 0) == grouped
    again = luigi(store, "CampaignsAll", campaign_threshold="0.8")
    assert NOTHING_RAN in again.stderr and "1 docket complete, skipped" in again.stderr


def test_a_finished_open_docket_is_pruned_by_every_wrapper(store):
    [docket] = store.dockets
    luigi(store, "IndexAll")  # every follow-on too
    assert dockets.get_docket(docket).sealed_at is None
    for wrapper in ("FetchAll", "BackfillAll", "ExtractAll", "IndexAll", "CampaignsAll", "OrganisationsAll", "LineageAll",
                    "TopicsAll"):
        again = luigi(store, wrapper)
        assert NOTHING_RAN in again.stderr, (wrapper, again.stderr[-2000:])
        assert f"{wrapper}: 1 docket complete, skipped ({docket}); 0 with work" in again.stderr
