"""The wrappers judge every docket in SQL and a task judges its own docket in Python, both
from the one rule (``pipeline.engine.completion.rule``). The two must agree on every
combination of a docket's facts, on SQLite and on PostgreSQL, or a wrapper would skip a
docket its task calls unfinished (or schedule one it calls done)."""

from __future__ import annotations

import itertools

from pipeline.engine.completion import Completion, expected_input, is_done
from pipeline.engine.markers import Probe, StateMarkers
from pipeline.store.models import Docket, DocketStage

NOW = "2026-06-01T12:00:00Z"
WINDOW = "2026-06-01T11:00:00Z"
SEAL = "2026-05-01T00:00:00Z"

# Each fact's values: None, and values on either side of what the rule compares them with.
SEALS = (None, SEAL)
PULLS = (None, "2026-06-01T10:00:00Z", "2026-06-01T11:30:00Z")
RETRIES = (None, "2026-06-01T11:59:00Z", "2026-06-01T12:01:00Z")
VERSIONS = (None, 0, 1, 2)
MARKER_SEALS = (None, SEAL, "2026-04-01T00:00:00Z")
INPUTS = (None, "up-out", "other", "up-out\x1fcaps:9")
UP_OUTPUTS = (None, "up-out")
OUTPUTS = ("x", None)  # the stage's own output; None: a run that died held it
# What the marker is asked to vouch for: an input stage with default terms, with terms,
# and a stage that walks lists (fetch: no input, no retries).
COMPLETIONS = (Completion("extract", "backfill"), Completion("extract", "backfill", "caps:9"),
               Completion("extract", None, after_fetch=False))


def _cases():
    for n, facts in enumerate(itertools.product(SEALS, PULLS, RETRIES, VERSIONS, MARKER_SEALS,
                                                INPUTS, UP_OUTPUTS, OUTPUTS)):
        yield f"D-{n:05d}", facts


def _write(cases) -> None:
    dockets, stage_rows = [], []
    for docket, (sealed, pulled, retry, version, marker_sealed, marker_input, up_output, output) in cases:
        dockets.append({"id": docket, "sealed_at": sealed, "last_pull_at": pulled,
                        "retry_due_at": retry, "discovered_by": "list"})
        if version is not None:
            stage_rows.append({"docket": docket, "stage": "extract", "version": version,
                               "sealed_at": marker_sealed, "input_fingerprint": marker_input,
                               "output_fingerprint": output, "completed_at": NOW})
        if up_output is not None:
            stage_rows.append({"docket": docket, "stage": "backfill", "version": 1,
                               "sealed_at": None, "input_fingerprint": None,
                               "output_fingerprint": up_output, "completed_at": NOW})
    for start in range(0, len(dockets), 200):
        Docket.insert_many(dockets[start:start + 200]).execute()
    for start in range(0, len(stage_rows), 200):
        DocketStage.insert_many(stage_rows[start:start + 200]).execute()


def _python_verdict(facts, completion: Completion, version: int) -> bool:
    sealed, pulled, retry, marker_version, marker_sealed, marker_input, up_output, output = facts
    present = marker_version is not None
    probe = Probe(True, sealed, pulled, marker_version, marker_sealed if present else None,
                  marker_input if present else None, expected_input(completion, up_output), retry,
                  output if present else None)
    return is_done(probe, completion, version, WINDOW, NOW)


def test_sql_and_python_agree_on_every_combination(state):
    cases = list(_cases())
    _write(cases)
    for completion, version in itertools.product(COMPLETIONS, (1, 2)):
        judged = StateMarkers(completion).judge(None, version=version, window_start=WINDOW,
                                                now=NOW, sample=5)
        done = {d for d, facts in cases if _python_verdict(facts, completion, version)}
        assert set(judged.pending) == {d for d, _ in cases} - done, (completion, version)
        assert judged.done == len(done) > 0
        assert judged.done_sample == sorted((d, dict(cases)[d][0]) for d in done)[:5]


def test_named_dockets_include_those_without_a_row(state):
    cases = list(_cases())[:40]
    _write(cases)
    named = [cases[0][0], cases[1][0], "NEW-2026-0001"]
    judged = StateMarkers(Completion("extract", "backfill")).judge(
        named, version=1, window_start=WINDOW, now=NOW, sample=len(named))
    assert "NEW-2026-0001" in judged.pending and judged.pending["NEW-2026-0001"] is None
    assert set(judged.pending) | {d for d, _ in judged.done_sample} == set(named)
