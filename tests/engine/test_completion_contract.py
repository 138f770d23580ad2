"""The completion contract: for every stage, a wrapper's bulk judgement hands Luigi exactly
the dockets whose stage task's ``complete()`` is False, whatever happened to the docket and
whichever output-changing setting changed since its markers were written.

Docket histories are drawn by a seeded generator (never run, open and finished, open with new
input, pulled in an old window, sealed, sealed then resealed, a retry due, a run that died
holding its output, a forced marker), on SQLite and on PostgreSQL state, with the index
markers in a real index DB. Each history is written as a run writes it: through the stage's
own marker store under the default settings, in pipeline order.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from pipeline.clock import iso, shifted, utcnow, window_start
from pipeline.config import SETTINGS
from pipeline.engine import markers, registry
from pipeline.engine.invocation import Invocation
from pipeline.runtime import set_runtime
from pipeline.store.models import Docket
from pipeline.tasks import stage_tasks
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import make_runtime, new_pg_database
from tests.fixtures.trials import TRIALS_ENV, every_trial

pytestmark = pytest.mark.postgres

HISTORIES = ("never run", "finished open", "finished sealed", "resealed", "old window",
             "retry due", "retry later", "new input", "held output", "forced", "one stage short")
ALIAS_FILE = str(ROOT / "tests" / "fixtures" / "organisations.yaml")
# Each setting that changes some stage's output, changed (the defaults first).
VARIANTS = ({}, {"max_item_chars": 1000}, {"max_body_chars": 1500}, {"max_file_chars": 1700},
            {"max_item_chunks": 3}, {"chunk_chars": 600}, {"campaign_threshold": "0.8"},
            {"ocr": "false"}, {"organisations_file": ALIAS_FILE}, {"lineage_federal_register": "true"},
            {"topic_similarity": "0.6"}, {"positions_min_codes": 10})
DOCKETS_PER_SEED = 44
# Each seed's histories on each state DB: each seed and each DB once by default (about a
# minute each on 2 cores), every pairing with DOCKETEER_RELIABILITY_TRIALS set.
PAIRINGS = [pytest.param(state, seed, marks=() if (state, seed) in (("sqlite", 28), ("postgres", 2026))
                         else pytest.mark.skipif(not every_trial(), reason=f"every pairing runs when {TRIALS_ENV} is set"))
            for state in ("sqlite", "postgres") for seed in (28, 2026)]


def _history(rng: random.Random, n: int) -> tuple[str, str]:
    """A docket id and its history: every history at least once, then drawn at random."""
    return f"GEN-2026-{n:04d}", HISTORIES[n] if n < len(HISTORIES) else rng.choice(HISTORIES)


def _write_history(docket: str, history: str, rng: random.Random, runtime) -> None:
    now = utcnow()
    sealed = iso(now - timedelta(days=3)) if history in ("finished sealed", "resealed", "forced") else None
    pulled = iso(now - timedelta(days=2)) if history == "old window" else iso(now)
    Docket.insert(id=docket, discovered_by="list", sealed_at=sealed, last_pull_at=pulled).execute()
    if history == "never run":
        return
    stages = registry.stages()
    short = rng.randrange(len(stages)) if history in ("one stage short", "new input", "held output") else None
    for n, stage in enumerate(stages):
        if history == "one stage short" and n >= short:
            break
        store = registry.marker_store(stage, runtime)
        store.write(docket, version=2 if history == "forced" else 1, sealed_at=sealed,
                    input_fingerprint=store.input_fingerprint(docket), run_id="gen")
    if history == "resealed":
        Docket.update(sealed_at=iso(now - timedelta(days=1))).where(Docket.id == docket).execute()
    elif history in ("retry due", "retry later"):
        due = now + (timedelta(hours=-1) if history == "retry due" else timedelta(days=1))
        Docket.update(retry_due_at=iso(due)).where(Docket.id == docket).execute()
    elif history == "new input" and stages[short].name != "index":
        markers.set_output(docket, stages[short].name, f"new output of {docket}")
    elif history == "held output" and stages[short].name != "index":
        markers.set_output(docket, stages[short].name, None)


def _incomplete_tasks(stage, dockets: list[str], version: int) -> set[str]:
    task = stage_tasks(stage)[0]
    invocation = Invocation()  # nothing ran in it: complete() is the target's word alone
    return {d for d in dockets if not task(docket=d, version=version, invocation=invocation).complete()}


@pytest.fixture(params=["sqlite", "postgres"])
def generated(request, tmp_path, pg_server):
    state_url = new_pg_database(pg_server) if request.param == "postgres" else ""
    index_url = new_pg_database(pg_server)
    runtimes = []

    def runtime(**overrides):
        made = make_runtime(tmp_path, state_url, index_url=index_url, **overrides)
        runtimes.append(made)
        return made

    yield runtime
    for made in runtimes:
        made.close()


@pytest.fixture
def clear_of_a_window_edge():
    """The test's clock moved past the next freshness-window edge when one is near: a docket
    pulled "now" in one window, judged in the next, is rightly incomplete, and a run that
    crossed an edge between the wrapper's judgement and a task's would compare two windows."""
    seconds = next(s.default for s in SETTINGS if s.name == "freshness_seconds")  # the generated runtimes' own
    left = seconds - int(utcnow().timestamp()) % seconds
    with shifted(timedelta(seconds=left + 1) if left < 300 else timedelta(0)):
        yield


@pytest.mark.parametrize(("generated", "seed"), PAIRINGS, indirect=["generated"])
def test_the_wrappers_judgement_is_exactly_the_incomplete_tasks(generated, seed, clear_of_a_window_edge):
    rng = random.Random(seed)
    defaults = generated()
    set_runtime(defaults)
    defaults.state  # noqa: B018 - the schema
    histories = dict(_history(rng, n) for n in range(DOCKETS_PER_SEED))
    for docket, history in histories.items():
        _write_history(docket, history, rng, defaults)
    dockets = sorted(histories)
    start = window_start(utcnow(), defaults.settings.freshness_seconds)
    checked = 0
    for overrides in VARIANTS:
        runtime = generated(**overrides)
        set_runtime(runtime)
        for stage in registry.stages():
            store = registry.marker_store(stage, runtime)
            for version in (1, 2):
                judged = store.judge(None, version=version, window_start=start, now=iso(utcnow()),
                                     sample=len(dockets))
                expected = _incomplete_tasks(stage, dockets, version)
                assert set(judged.pending) == expected, (stage.name, overrides, version)
                assert judged.done == len(dockets) - len(expected)
                named = dockets[::5]
                part = store.judge(named, version=version, window_start=start, now=iso(utcnow()),
                                   sample=len(named))
                assert set(part.pending) == expected & set(named), (stage.name, overrides, version)
                checked += len(dockets)
    assert checked == len(VARIANTS) * len(registry.stages()) * 2 * len(dockets)


def test_each_changed_setting_makes_the_stages_it_shapes_incomplete(generated):
    """The generator's finished dockets, under each changed setting: the stages whose output
    the setting shapes (and those reading it) have work, the others none."""
    defaults = generated()
    set_runtime(defaults)
    defaults.state  # noqa: B018
    rng = random.Random(1)
    for n in range(3):
        _write_history(f"FIN-2026-{n:04d}", "finished sealed" if n else "finished open", rng, defaults)
    dockets = [f"FIN-2026-{n:04d}" for n in range(3)]
    # The topic map vouches for campaigns' output, so what reshapes campaigns reshapes it.
    # So do the positions (they judge a campaign once, through its letter).
    shaped = {"max_item_chars": {"extract", "ocr", "index", "campaigns", "topics", "sections", "positions"},
              "max_item_chunks": {"index"}, "chunk_chars": {"index"},
              "campaign_threshold": {"campaigns", "topics", "positions"},
              "ocr": {"ocr", "index", "campaigns", "topics", "sections", "positions"},
              "organisations_file": {"organisations"}, "lineage_federal_register": {"lineage"},
              "topic_similarity": {"topics"}, "positions_min_codes": {"positions"},
              "section_nearest_floor": {"sections"}}
    values = {"max_item_chars": 1000, "max_item_chunks": 3, "chunk_chars": 600,
              "campaign_threshold": "0.8", "ocr": "false", "organisations_file": ALIAS_FILE,
              "lineage_federal_register": "true", "topic_similarity": "0.6", "positions_min_codes": 10,
              "section_nearest_floor": "0.7"}
    for setting, stages in shaped.items():
        runtime = generated(**{setting: values[setting]})
        set_runtime(runtime)
        with_work = {stage.name for stage in registry.stages()
                     if _incomplete_tasks(stage, dockets, 1) == set(dockets)}
        without = {stage.name for stage in registry.stages() if not _incomplete_tasks(stage, dockets, 1)}
        assert with_work == stages, setting
        assert without == set(registry.names()) - stages, setting
