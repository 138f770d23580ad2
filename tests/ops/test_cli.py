"""The ``docketeer`` admin command, one test per subcommand, on a store the real pipeline built."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest

from pipeline.clock import eastern_instant
from pipeline.failures import RetryPolicy
from pipeline.index.embedders import HashingEmbedder
from pipeline.ops import cli
from pipeline.store import item_states
from pipeline.store.models import Docket, ItemState
from tests.fixtures.paths import ROOT
from tests.fixtures.pipeline_fixtures import built_store


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    with built_store(tmp_path_factory.mktemp("cli"), pg_server) as built:
        yield built


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def comment_with_attachment(store) -> str:
    return next(c.id for c in store.manifest.comments if c.attachments)


def table(text: str) -> list[dict[str, str]]:
    """A printed table's rows as {header: cell}, cut at the header's column starts (cells
    such as '2 @2026-12-01 01:00 EST' and headers such as 'last pull' hold spaces; a paged
    list's last line, 'page 1 of 1 (3 dockets)', is not a row)."""
    header, *lines = text.splitlines()
    lines = [line for line in lines if not re.match(r"page [\d,]+ of [\d,]+ \(", line)]
    names = [n.strip() for n in header.split("  ") if n.strip()]
    starts, at = [], 0
    for name in names:  # left to right: "at" is in "state" too
        at = header.index(name, at)
        starts.append(at)
        at += len(name)
    ends = [*starts[1:], None]
    return [{n: line[a:b].strip() for n, a, b in zip(names, starts, ends, strict=True)} for line in lines]


T0 = datetime(2026, 12, 1, 5, 0, tzinfo=UTC)


def fail_for_now(stage: str, item: str, docket: str, at: datetime) -> None:
    """A transient failure of ``item`` at ``at`` (default policy: next attempt 1 h later)."""
    item_states.retry_later(stage, item, docket, "HTTP 503 from the stand-in", run_id="test",
                            policy=RetryPolicy(), now=at)


@contextmanager
def rows_restored(docket: str, *items: str):
    """Put the state rows of ``items`` back as they were (the store is shared by the module)."""
    saved = [dict(r.__data__) for r in ItemState.select().where(ItemState.item.in_(items))]
    try:
        yield
    finally:
        ItemState.delete().where(ItemState.item.in_(items)).execute()
        if saved:
            ItemState.insert_many(saved).execute()
        item_states.refresh_retry_due(docket)


@pytest.fixture
def waiting(store):
    """Two made-up comments of the first docket wait to retry: one with its attachment
    (a backfill and a backfill.file row), due at 06:00Z; the other due at 08:00Z."""
    docket = store.dockets[0]
    first, second = f"{docket}-9998", f"{docket}-9999"
    with rows_restored(docket, first, f"{first}/attachment_1.pdf", second):
        fail_for_now("backfill.file", f"{first}/attachment_1.pdf", docket, T0)
        fail_for_now("backfill", first, docket, T0)
        fail_for_now("backfill", second, docket, T0 + timedelta(hours=2))
        item_states.refresh_retry_due(docket)
        yield docket


def test_config_shows_origins_and_masks_secrets(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
               DOCKETEER_DATA_DIR=str(tmp_path), REGULATIONS_GOV_API_KEY="sekrit-key-123",
               XDG_CACHE_HOME=str(tmp_path / "xdg"))
    done = subprocess.run([sys.executable, "-m", "pipeline.ops.cli", "config"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "sekrit-key-123" not in done.stdout
    lines = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert "***" in lines["api_key"] and "env REGULATIONS_GOV_API_KEY" in lines["api_key"]
    assert "env DOCKETEER_DATA_DIR" in lines["data_dir"]
    assert lines["source"].split()[-1] == "luigi.cfg"
    # The stores left empty say where they are, not a blank
    assert f"sqlite:///{tmp_path / 'state.sqlite'}  " in lines["state_url"]
    assert f"embedded PostgreSQL in {tmp_path / 'index-pg'}  " in lines["index_url"]
    assert f" {tmp_path / 'blobs'}  " in lines["blob_url"]
    assert all(lines[name].endswith("luigi.cfg: under data_dir") for name in ("state_url", "index_url", "blob_url"))
    # ... and so does the model cache, in the data folder unless told
    assert f" {tmp_path / 'models'}  " in lines["model_cache"]
    assert lines["model_cache"].endswith("luigi.cfg: under data_dir")


@pytest.mark.parametrize("url", ["postgresql://dkt:pa%40ss-word9@db.example:5432/state",
                                 "postgresql://dkt@db.example/state?sslmode=require&password=pa%40ss-word9"])
def test_config_masks_the_password_of_every_url(tmp_path, url):
    """A database URL's password is shown as *** (its user, host and database stay), as the
    API key is."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"), DOCKETEER_DATA_DIR=str(tmp_path),
               DOCKETEER_STATE_URL=url, DOCKETEER_INDEX_URL=url.replace("/state", "/index"),
               DOCKETEER_OPENAI_URL="https://bob:pa%40ss-word9@embed.example/v1")
    done = subprocess.run([sys.executable, "-m", "pipeline.ops.cli", "config"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "pa%40ss-word9" not in done.stdout and "pa@ss-word9" not in done.stdout, done.stdout
    lines = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    for name, host in (("state_url", "db.example"), ("index_url", "db.example"), ("openai_url", "embed.example")):
        assert "***" in lines[name] and host in lines[name], lines[name]


def test_a_url_password_is_masked_in_errors_and_logs():
    from pipeline.config import load_settings

    settings = load_settings({"DOCKETEER_STATE_URL": "postgresql://dkt:hunter2x@db.example/state"})
    assert settings.mask("could not connect: postgresql://dkt:hunter2x@db.example/state (hunter2x)") == \
        "could not connect: postgresql://dkt:***@db.example/state (***)"
    # any URL's password, one no setting names too
    assert settings.mask("mirror s3://key:other-pw@bucket/x failed") == "mirror s3://key:***@bucket/x failed"


READ_COMMANDS = (["dockets"], ["stats"], ["explain", "CMS-2026-0001-0003"], ["pending"],
                 ["search", "rural hospitals"], ["verify"], ["serve", "--port", "1"],
                 ["export", "exported"], ["snapshot", "snap"], ["seal", "CMS-2026-0001"])


@pytest.mark.parametrize("argv", READ_COMMANDS, ids=lambda argv: argv[0])
def test_a_command_never_creates_a_store_where_there_is_none(tmp_path, argv):
    """The README's relative DOCKETEER_DATA_DIR given from another folder names a folder with
    no store: one line naming it and exit 2, and nothing made there (no service, no server)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKETEER_", "LUIGI_"))}
    env.update(PYTHONPATH=str(ROOT), DOCKETEER_DATA_DIR="data/quickstart/store")
    done = subprocess.run([sys.executable, "-m", "pipeline.ops.cli", *argv], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"docketeer: no docketeer store at {tmp_path / 'data/quickstart/store'} (set "
        "DOCKETEER_DATA_DIR to the folder a run wrote, or run `luigi --module pipeline IndexAll` "
        "to make one there)"]
    assert list(tmp_path.iterdir()) == []


def test_dockets_table_has_every_column(store, capsys):
    code, out, _ = run(capsys, "dockets")
    assert code == 0
    assert out.splitlines()[0].split() == ["docket", "agency", "closes", "comments", "submissions", "detailed",
                                           "extracted", "indexed", "retry", "watermark", "last",
                                           "pull", "sealed", "partial", "failed"]
    by_id = {row["docket"]: row for row in table(out)}
    assert set(by_id) == set(store.dockets)
    for docket in store.manifest.dockets:
        cells = by_id[docket.id]
        listed = str(docket.comment_count)
        assert cells["comments"] == listed
        assert cells["detailed"] == listed
        # Each wrote its combined.md; those whose every file failed say so beside the count.
        failed = ItemState.select().where((ItemState.docket == docket.id) & (ItemState.stage == "extract")
                                          & (ItemState.state == "failed")).count()
        assert cells["extracted"] == listed + (f" ({failed} failed)" if failed else "")
        assert cells["indexed"] == listed  # comments collection
        assert cells["retry"] == "-"  # nothing waits
        assert cells["sealed"] == "open"
        assert cells["partial"] == "-"  # every stage's last run finished it
        assert cells["failed"] == "-"  # no stage failed for it
        # Every time shown is Washington's, the fetch cursor too (to the second; stored UTC)
        stored = Docket.get_by_id(docket.id).pull_watermark
        assert stored.endswith("Z") and cells["watermark"] == eastern_instant(stored, seconds=True)
        assert cells["watermark"].endswith((" EST", " EDT")) and cells["watermark"].count(":") == 2


def test_dockets_shows_items_waiting_to_retry_and_the_next_attempt(store, waiting, capsys):
    code, out, _ = run(capsys, "dockets")
    assert code == 0
    by_id = {row["docket"]: row for row in table(out)}
    # Two comments (the attachment's row is the first comment's), the earliest due at 06:00.
    assert by_id[waiting]["retry"] == "2 @2026-12-01 01:00 EST"
    assert Docket.get_by_id(waiting).retry_due_at == "2026-12-01T06:00:00.000000Z"
    assert {row["retry"] for d, row in by_id.items() if d != waiting} == {"-"}
    # A waiting comment has no detail yet: the progress columns are unchanged (these two are
    # made up, no item row: the progress cells count listed comments only).
    listed = str(store.manifest.dockets[0].comment_count)
    assert by_id[waiting]["detailed"] == listed


def test_dockets_shows_the_stages_its_last_run_left_partial(store, capsys):
    """A stage whose last run over the docket stopped on its budget is partial; one whose
    later run finished it is not."""
    from pipeline.engine import runs
    from pipeline.store.models import Run

    docket = store.dockets[0]
    made = []
    for stage, at, spent in (("backfill", "2030-01-01T00:00:00.000000Z", True),
                             ("fetch", "2030-01-01T00:00:00.000000Z", True),
                             ("fetch", "2030-01-01T01:00:00.000000Z", False)):
        run_id = runs.start_run("made up", stage, docket)
        runs.finish_run(run_id, clean=True, counters={}, budget_spent=spent)
        Run.update(started_at=at).where(Run.run_id == run_id).execute()
        made.append(run_id)
    try:
        code, out, _ = run(capsys, "dockets")
    finally:
        Run.delete().where(Run.run_id.in_(made)).execute()
    assert code == 0
    by_id = {row["docket"]: row for row in table(out)}
    assert by_id[docket]["partial"] == "backfill"  # fetch's last run finished it
    assert {row["partial"] for d, row in by_id.items() if d != docket} == {"-"}


def test_seal_and_unseal(store, capsys):
    docket = store.dockets[0]
    code, out, _ = run(capsys, "seal", docket, "--reason", "comment period over")
    assert code == 0 and f"{docket}: sealed at" in out and "comment period over" in out
    row = Docket.get_by_id(docket)
    assert row.sealed_at and row.seal_reason == "manual: comment period over"
    code, out, _ = run(capsys, "seal", docket)
    assert code == 0 and "already sealed" in out
    assert Docket.get_by_id(docket).sealed_at == row.sealed_at  # resealing keeps the seal
    code, out, _ = run(capsys, "dockets")
    assert "manual: comment period over" in out
    code, out, _ = run(capsys, "unseal", docket)
    assert code == 0 and "unsealed" in out
    assert Docket.get_by_id(docket).sealed_at is None
    code, out, _ = run(capsys, "unseal", docket)
    assert code == 0 and "was not sealed" in out


@pytest.mark.parametrize("argv", [["seal", "NOPE-2026-0001"], ["unseal", "NOPE-2026-0001"],
                                  ["stats", "--docket", "NOPE-2026-0001"],
                                  ["explain", "NOPE-2026-0001-0001"],
                                  ["search", "x", "--docket", "NOPE-2026-0001"]])
def test_unknown_ids_are_one_line_and_exit_2(store, capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("docketeer: unknown") and "NOPE-2026-0001" in err


@pytest.mark.parametrize("argv", [["pending", "--older-than", "soon"], ["frobnicate"], ["seal"],
                                  ["verify", "--pending-older-than", "1w"]])
def test_bad_arguments_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert "docketeer" in capsys.readouterr().err


def test_stats_counts_by_stage_and_state(store, capsys):
    docket = store.dockets[0]
    code, out, _ = run(capsys, "stats", "--docket", docket)
    assert code == 0
    rows = [line.split() for line in out.splitlines()[1:]]
    assert {r[0] for r in rows} == {docket}
    counts = {(r[1], r[2]): int(r[3]) for r in rows}
    states = {(s.stage, s.item): s.state for s in ItemState.select().where(ItemState.docket == docket)}
    # A scan OCR has read waits for OCR no more: extract's rows left ocr_needed for it (the
    # file's, and its comment's once all its scans are read) count as ocr_done.
    read = {key for (stage, key), state in states.items() if stage == "ocr" and state == "ok"}
    waiting = {key for (stage, key), state in states.items() if stage == "extract.file" and state == "ocr_needed"}
    expected = Counter()
    for (stage, key), state in states.items():
        done = state == "ocr_needed" and (key in read if stage == "extract.file" else
                                          stage == "extract" and {f for f in waiting if f.startswith(f"{key}/")} <= read)
        expected[(stage, "ocr_done" if done else state)] += 1
    assert counts == expected
    assert counts[("ocr", "ok")] and counts[("extract", "ocr_done")] and counts[("extract.file", "ocr_done")]
    assert ("extract", "ocr_needed") not in counts and ("extract.file", "ocr_needed") not in counts
    assert {"fetch", "backfill", "backfill.file", "extract", "extract.file"} <= {s for s, _ in counts}
    code, out, _ = run(capsys, "stats")
    assert {line.split()[0] for line in out.splitlines()[1:]} == set(store.dockets)


def test_stats_shows_retry_rows_and_their_earliest_next_attempt(store, waiting, capsys):
    code, out, _ = run(capsys, "stats", "--docket", waiting)
    assert code == 0
    assert out.splitlines()[0].split() == ["docket", "stage", "state", "count", "next", "attempt"]
    rows = {(r["stage"], r["state"]): r for r in table(out)}
    assert rows["backfill", "retry"]["count"] == "2"
    assert rows["backfill", "retry"]["next attempt"] == "2026-12-01 01:00 EST"  # the earlier of 06:00, 08:00
    assert rows["backfill.file", "retry"]["count"] == "1"
    assert rows["backfill.file", "retry"]["next attempt"] == "2026-12-01 01:00 EST"
    assert {r["next attempt"] for key, r in rows.items() if key[1] != "retry"} == {""}


def test_explain_shows_every_stage_and_attachment(store, capsys):
    comment = comment_with_attachment(store)
    code, out, _ = run(capsys, "explain", comment)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"comment {comment}")
    stages = [line.split()[0] for line in lines if line.split() and line.split()[0] in
              ("fetch", "backfill", "extract", "index")]
    assert stages == ["fetch", "backfill", "extract", "index"]
    index_line = next(line for line in lines if line.startswith("index"))
    assert "indexed" in index_line and "chunk(s)" in index_line
    summary = next(n for n, line in enumerate(lines) if re.match(r"\d+ attachments?: ", line))
    files = lines[summary + 2:]
    assert files and files[0].startswith("attachment_") and " ok " in f" {files[0]} "


def test_explain_shows_retry_attempts_and_failure_kinds(store, capsys):
    comment = store.manifest.comments[0].id
    docket = store.manifest.comments[0].docket_id
    with rows_restored(docket, comment):
        fail_for_now("backfill", comment, docket, T0)
        fail_for_now("backfill", comment, docket, T0 + timedelta(hours=2))  # the 2nd: waits 4 h
        item_states.transition("extract", comment, docket, "failed", run_id="test",
                               detail="permanent", reason="corrupt PDF")
        code, out, _ = run(capsys, "explain", comment)
    assert code == 0
    stages = re.split(r"\n\d+ attachments?: ", out)[0].splitlines()[1:]
    stages = [line for line in stages if not line.startswith(("title:", "submitter:", "organisation:", "organisation resolved:", "record:"))]
    rows = {row["stage"]: row for row in table("\n".join(stages))}
    assert rows["backfill"] | {"at": ""} == {
        "stage": "backfill", "state": "retry", "failure": "transient", "attempts": "2",
        "first failed": "2026-12-01 00:00 EST", "next attempt": "2026-12-01 06:00 EST", "at": "",
        "reason": "HTTP 503 from the stand-in"}
    assert (rows["extract"]["state"], rows["extract"]["failure"]) == ("failed", "permanent")
    assert rows["extract"]["attempts"] == rows["extract"]["next attempt"] == ""
    assert rows["fetch"]["failure"] == rows["fetch"]["attempts"] == ""


def test_pending_lists_oldest_first_and_filters_by_age(store, capsys):
    docket = store.dockets[0]
    old, new = f"{docket}-9998", f"{docket}-9999"
    item_states.mark_pending("extract", new, docket, run_id="r", reason="writing combined.md")
    item_states.mark_pending("extract", old, docket, run_id="r", reason="writing combined.md")
    ItemState.update(written_at="2020-01-01T00:00:00.000000Z").where(ItemState.item == old).execute()
    try:
        code, out, _ = run(capsys, "pending")
        assert code == 0
        items = [line.split()[1] for line in out.splitlines()[1:] if line.startswith("extract")]
        assert items == [old, new]
        code, out, _ = run(capsys, "pending", "--older-than", "1h")
        assert [line.split()[1] for line in out.splitlines()[1:] if line.startswith("extract")] == [old]
    finally:
        ItemState.delete().where(ItemState.item.in_([old, new])).execute()
    code, out, _ = run(capsys, "pending", "--older-than", "30m")
    assert code == 0 and out.strip() == "no pending rows older than 30m"


def test_pending_tells_a_budget_stop_from_a_dead_process(store, capsys):
    from pipeline.engine import runs
    from pipeline.store.models import Run

    docket = store.dockets[0]
    stopped, died = f"{docket}-9996", f"{docket}-9997"
    budget_run, dead_run = runs.start_run("T", "extract", docket), runs.start_run("T", "extract", docket)
    runs.finish_run(budget_run, clean=False, counters={}, budget_spent=True)
    item_states.mark_pending("extract", stopped, docket, run_id=budget_run, reason="writing combined.md")
    item_states.mark_pending("extract", died, docket, run_id=dead_run, reason="writing combined.md")
    try:
        code, out, _ = run(capsys, "pending")
    finally:
        ItemState.delete().where(ItemState.item.in_([stopped, died])).execute()
        Run.delete().where(Run.run_id.in_([budget_run, dead_run])).execute()
    rows = {r["item"]: r["run"] for r in table(out.split("\n" + "2 pending")[0])}
    assert rows == {stopped: "budget stop", died: "process died"}
    assert "2 pending row(s) (1 budget stop, 1 process died)" in out


def test_search_prints_ranked_hits(store, capsys):
    code, out, _ = run(capsys, "search", "hospital funding", "-k", "3")
    assert code == 0
    assert out.lstrip().startswith("1.")
    assert any(docket in out for docket in store.dockets)
    code, out, _ = run(capsys, "search", "   ")
    assert code == 0 and out.strip() == "no results"


def test_search_prints_one_result_per_comment_and_every_passage_when_asked(store, capsys):
    """-k 3 is three comments, each with its other matching passages under it, scored by the
    number that orders them; --passages lists every passage as a result of its own."""
    _, out, _ = run(capsys, "search", "proposed rule", "-k", "50", "--passages", "--json")
    passages = [r["item_id"] for r in json.loads(out)["results"]]
    assert len(set(passages)) < len(passages)  # some comment has several matching passages
    _, out, _ = run(capsys, "search", "proposed rule", "-k", "3", "--json")
    results = json.loads(out)["results"]
    assert len({r["item_id"] for r in results}) == 3
    assert any(r["more_passages"] for r in results)
    assert all(r["score"] == r["fused"] for r in results)
    _, text, _ = run(capsys, "search", "proposed rule", "-k", "3")
    heads = [line.split() for line in text.splitlines() if line[:4].strip().endswith(".")]
    assert [h[2] for h in heads] == [r["item_id"] for r in results]
    shown = [float(h[1]) for h in heads]
    assert shown == sorted(shown, reverse=True) and shown == [round(r["score"], 4) for r in results]


def test_unrelated_words_are_no_good_match_in_text_and_json(store, capsys):
    """A search whose words no passage holds and whose meaning none comes near shows nothing,
    and says how near the nearest came; --json gives no results with the same two numbers."""
    code, text, _ = run(capsys, "search", "zebra giraffe volcano")
    assert code == 0
    code, out, _ = run(capsys, "search", "zebra giraffe volcano", "--json")
    document = json.loads(out)
    assert code == 0 and document["results"] == []
    assert document["floor"] == HashingEmbedder().search_floor and document["best_score"] < document["floor"]
    assert text.strip() == (f"no good match (best similarity {document['best_score']:.2f}, "
                            f"floor {document['floor']:.2f})")
    # A word the comments hold is still found, every result holding it.
    _, out, _ = run(capsys, "search", "proposed rule", "-k", "50", "--json")
    assert json.loads(out)["results"] and all(r["text_rank"] or r["exact"] or r["cosine"] >= document["floor"]
                                              for r in json.loads(out)["results"])


def test_search_takes_washingtons_days_and_an_organisation(store, capsys):
    """--from / --to are calendar days in Washington, inclusive (the posted instant is UTC);
    --org a part of the submitter's name or organisation; a bad day is one line and exit 2."""
    code, out, _ = run(capsys, "search", "proposed rule", "-k", "50", "--json")
    days = sorted({r["posted_day"] for r in json.loads(out)["results"] if r["posted_day"]})
    assert len(days) >= 2, days
    day = days[len(days) // 2]
    code, out, _ = run(capsys, "search", "proposed rule", "-k", "50", "--json", "--from", day, "--to", day)
    assert code == 0
    document = json.loads(out)
    assert (document["from"], document["to"], document["org"]) == (day, day, None)
    results = document["results"]
    assert results and {r["posted_day"] for r in results} == {day}
    code, out, _ = run(capsys, "search", "proposed rule", "-k", "50", "--json", "--from", day)
    assert {r["posted_day"] for r in json.loads(out)["results"]} == {d for d in days if d >= day} - {None}
    code, out, err = run(capsys, "search", "hospital funding", "--org", "no such organisation anywhere")
    assert code == 2 and "no submitter or organisation contains 'no such organisation anywhere'" in err
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["search", "hospital funding", "--from", "22/09/2025"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert "argument --from: not a date (YYYY-MM-DD): '22/09/2025'" in err


def test_a_warm_service_that_ignores_the_resolved_organisations_is_not_believed(monkeypatch, tmp_path):
    """The command sends the comments of the organisations ``--org`` resolves to; a service
    started by an older docketeer ignores them, and the command searches in-process instead."""
    from argparse import Namespace

    from pipeline.index import search_service
    from pipeline.ops.commands import search
    from tests.fixtures.state_fixtures import make_runtime

    settings = make_runtime(tmp_path).settings
    sent = []
    older = {"text": "no results", "records": [], "filtered": True, "folded": True, "narrowed": True,
             "best_score": None, "floor": 0.21}
    answers = iter([older, {**older, "org_items": True}])
    monkeypatch.setattr(search_service, "ask", lambda data_dir, request: sent.append(request) or next(answers))
    args = Namespace(query="q", collection=None, docket=None, k=3, passages=False, date_from=None, date_to=None,
                     org="American Medical Association", org_items=["CMS-2026-0001-0002"])
    assert search._warm_search(settings, tmp_path, args) is None
    assert search._warm_search(settings, tmp_path, args) == {**older, "org_items": True}
    assert sent[0]["org_items"] == ["CMS-2026-0001-0002"]


def test_verify_passes_on_a_fresh_store(store, capsys, tmp_path):
    code, out, _ = run(capsys, "verify", "--full", "--out", str(tmp_path))
    assert code == 0, out
    assert out.strip().endswith("PASS")
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["result"] == "PASS"
    assert (tmp_path / "inventory.csv").read_text().startswith("docket,item,filename")


def test_snapshot_writes_copies(store, capsys, tmp_path):
    code, out, _ = run(capsys, "snapshot", str(tmp_path / "snap"))
    assert code == 0, out
    assert (tmp_path / "snap" / "state.sqlite").is_file()
    assert (tmp_path / "snap" / "index.dump").is_file()
    code, _, err = run(capsys, "snapshot", str(tmp_path / "snap"))
    assert code == 2 and "not empty" in err


RESULT_FIELDS = {"rank", "item_id", "docket", "collection", "kind", "score", "passage", "chunk", "page",
                 "section", "attachment", "posted_date", "posted_day", "withdrawn", "metadata", "link",
                 "vector_rank", "text_rank", "fused",  # the hybrid ranking's parts
                 "cosine", "exact", "more_passages"}  # the passage's own similarity; the comment's other passages


def test_search_json_is_one_document_with_the_text_outputs_hits(store, capsys):
    from pipeline.store import items
    from pipeline.store.models import Attachment

    code, out, _ = run(capsys, "search", "proposed rule", "-k", "8", "--json")
    assert code == 0
    document = json.loads(out)
    assert {k: document[k] for k in ("query", "k", "docket", "collection", "from", "to", "org")} == {
        "query": "proposed rule", "k": 8, "docket": None, "collection": None,
        "from": None, "to": None, "org": None}
    results = document["results"]
    assert 0 < len(results) <= 8 and all(set(r) == RESULT_FIELDS for r in results)
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    known = {c.id for c in store.manifest.comments}
    assert all(r["docket"] in store.dockets and r["item_id"].startswith(r["docket"]) for r in results)
    assert all(r["item_id"] in known for r in results if r["kind"] == "comment")
    assert all(r["link"] == f"https://www.regulations.gov/{r['kind']}/{r['item_id']}" for r in results)
    _, text, _ = run(capsys, "search", "proposed rule", "-k", "8")
    assert [line.split()[2] for line in text.splitlines() if line[:4].strip().endswith(".")] == [
        r["item_id"] for r in results]
    # A passage from a file names the file and, once the record gives one, its title.
    from_file = next(r for r in results if r["attachment"])
    row = Attachment.get((Attachment.item == from_file["item_id"]) & (Attachment.filename == from_file["section"]))
    assert from_file["attachment"] == {"file": from_file["section"], "title": row.title}
    items.set_attachment_title(from_file["item_id"], from_file["section"], "Letter from the clinic")
    try:
        _, out, _ = run(capsys, "search", "proposed rule", "-k", "8", "--json")
    finally:
        items.set_attachment_title(from_file["item_id"], from_file["section"], row.title)
    again = next(r for r in json.loads(out)["results"] if r["rank"] == from_file["rank"])
    assert again["attachment"] == {"file": from_file["section"], "title": "Letter from the clinic"}
    assert all(r["attachment"] is None for r in results if r["section"] == "Inline comment")


def test_version_is_the_installed_release(capsys):
    import configparser

    from pipeline.ops.cli import build_parser
    from tests.fixtures.paths import ROOT

    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["--version"])
    assert done.value.code == 0
    released = configparser.ConfigParser()
    released.read(ROOT / "setup.cfg")
    assert capsys.readouterr().out.strip() == f"docketeer {released['metadata']['version']}"


def test_every_subcommand_says_what_it_does_in_its_own_help():
    import argparse

    from pipeline.ops.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert len(commands.choices) >= 13
    for name, command in commands.choices.items():
        assert command.description and command.description.endswith("."), name
        assert command.description in " ".join(command.format_help().split()), name
