"""Caps on amplification: text per file and chunks per item are cut, the cut recorded, and
the run goes on."""

from __future__ import annotations

import json
from dataclasses import replace

from devtools.mirror_layout import comment_files, replace_json
from pipeline.clock import iso, utcnow
from pipeline.counters import COMBINED_READS, PDF_OPENS, STAGE_CALLS, counters
from pipeline.engine import registry
from pipeline.extract.combined import capped_of, combined_sections, parse_combined, render_combined
from pipeline.extract.readers import AttachmentText, ExtractLimits, read_attachment
from pipeline.extract.stage import STAGE as EXTRACT
from pipeline.extract.stage import read_combined
from pipeline.extract.text_caps import (
    ItemSizes,
    TextCaps,
    capped_sections,
    caps_biting,
    chunks_biting,
    with_caps,
)
from pipeline.ocr.stage import STAGE as OCR
from pipeline.store.blobs import combined_key
from pipeline.store.models import ItemState, Run
from tests.fixtures import extract_inputs, ocr_inputs
from tests.fixtures.chain_runs import chain, run_at, states


def test_a_files_text_is_capped_with_a_reason(tmp_path):
    path = tmp_path / "attachment_1.txt"
    path.write_text("word " * 10_000)
    text = read_attachment(path, path.name, ExtractLimits(max_file_chars=1000))
    assert text.status == "ok" and len(text.text) == text.chars == 1000
    assert text.reason == "text capped at 1000 characters (of 49999)"
    assert read_attachment(path, path.name).reason == ""  # the default cap is generous


def test_the_chain_caps_text_and_chunks_and_records_both(tmp_path, pg_server):
    with chain(tmp_path, pg_server, comments=6, max_file_chars=1000, max_item_chunks=2,
               chunk_chars=200) as (runtime, _server, docket, _root):
        assert run_at(1)
        reasons = [r.reason or "" for r in ItemState.select().where(ItemState.stage == "extract.file")]
        assert any(r.startswith("text capped at 1000 characters") for r in reasons), reasons
        counts = runtime.index_db().chunk_counts()
        assert counts and max(counts.values()) == 2
        capped = sum(json.loads(r.counters or "{}").get("chunks_capped", 0) for r in Run.select())
        assert capped >= 1


def test_item_caps_cut_the_body_first_then_the_sections_in_order():
    caps = TextCaps(max_body_chars=10, max_item_chars=25)
    kept, reasons = capped_sections(["b" * 40, "x" * 10, "y" * 10], caps)
    assert kept == ["b" * 10, "x" * 10, "y" * 5]
    assert reasons == ["inline body capped at 10 characters (of 40)",
                       "item text capped at 25 characters (of 30)"]
    assert capped_sections(["b" * 5, "x"], caps) == (["b" * 5, "x"], [])


def test_combined_md_lists_its_cuts_and_an_uncapped_item_renders_as_before():
    args = {"comment_id": "D-1", "docket_id": "D", "sources_fingerprint": "f", "extractor_version": "v"}
    files = [AttachmentText("attachment_1.txt", "ok", "", 30, None, "x" * 30),
             AttachmentText("attachment_2.txt", "ok", "", 30, None, "y" * 30)]
    plain = render_combined(inline_text="short body", attachments=files, **args)
    assert render_combined(inline_text="short body", attachments=files, caps=TextCaps(1000, 1000), **args) == plain
    assert capped_of(plain) == []
    data = render_combined(inline_text="b" * 50, attachments=files, caps=TextCaps(20, 40), **args)
    frontmatter, body = parse_combined(data)
    sections = dict(combined_sections(body))
    assert sections["Inline comment"] == "b" * 20 and sections["attachment_1.txt"] == "x" * 20
    assert sections["attachment_2.txt"] == "_(ok — item text capped)_"  # cut to nothing
    assert frontmatter["chars"] == 40
    assert capped_of(data) == ["inline body capped at 20 characters (of 50)",
                               "item text capped at 40 characters (of 80)"]


def _give_a_huge_body(root, comment_id: str, chars: int) -> None:
    path = comment_files(root)[comment_id]
    record = json.loads(path.read_text())
    record["data"]["attributes"]["comment"] = "<p>" + "word " * (chars // 5) + "</p>"
    replace_json(path, record)


def test_a_huge_inline_body_is_capped_recorded_on_its_item_and_indexed_capped(tmp_path, pg_server):
    with chain(tmp_path, pg_server, comments=3, max_body_chars=5000, chunk_chars=500) as (
            runtime, server, docket, root):
        huge = sorted(comment_files(root))[0]
        _give_a_huge_body(root, huge, 3_000_000)
        server.reload()
        assert run_at(1)
        rows = states("extract", docket)
        assert "inline body capped at 5000 characters (of 2999999)" in (rows[huge].reason or "")
        assert not any("capped" in (r.reason or "") for key, r in rows.items() if key != huge)
        _, body = read_combined(runtime.blobs, docket, huge)
        assert 4990 <= len(dict(combined_sections(body))["Inline comment"]) <= 5000  # a space may end it
        chunks = [json.loads(line) for line in runtime.index_db().dump_chunks().splitlines()]
        indexed = sum(len(c[4]) for c in chunks if c[1] == huge)
        assert 5000 < indexed < 20_000  # the capped body, its files, the chunks' overlap: not 3 M


def test_an_items_files_together_are_capped_with_a_reason(tmp_path, pg_server):
    with chain(tmp_path, pg_server, comments=6, max_item_chars=1000) as (runtime, _server, docket, _root):
        assert run_at(1)
        runtime.state  # noqa: B018
        capped = [k for k, r in states("extract", docket).items() if "item text capped at 1000" in (r.reason or "")]
        assert capped  # the corpus' PDFs hold more than 1000 characters
        for key in capped:
            frontmatter, _ = read_combined(runtime.blobs, docket, key)
            assert frontmatter["chars"] <= 1000 and frontmatter["capped"]


def _extract_rows(docket: str) -> dict[str, tuple[str, str]]:
    """item -> (fingerprint, run id) of its extract row: a redone item has a new run id."""
    return {k: (r.fingerprint, r.run_id) for k, r in
            ((row.item, row) for row in ItemState.select().where((ItemState.stage == "extract")
                                                                & (ItemState.docket == docket)))}


def _redone(before: dict, after: dict) -> set[str]:
    return {k for k in after if before.get(k, (None, None))[1] != after[k][1]}


def test_a_changed_cap_redoes_exactly_the_items_whose_text_it_changes(tmp_path, pg_server):
    """Lowered, a cap redoes the items above it; raised back, those again; the items below
    it are never read again (their rows, combined.md and chunks untouched)."""
    with chain(tmp_path, pg_server, comments=8) as (runtime, _server, docket, _root):
        assert run_at(1)
        sizes = {k: ItemSizes.from_detail(r.detail) for k, r in states("extract", docket).items()}
        totals = sorted(s.body + s.rest for s in sizes.values())
        assert totals[0] < totals[-1], totals  # the corpus' items differ in size
        cap = max(1000, (totals[0] + totals[-1]) // 2)  # bites the larger items only
        above = {k for k, s in sizes.items() if s.body + s.rest > cap}
        assert above and above != set(sizes), (cap, totals)
        first = _extract_rows(docket)
        original = runtime.settings
        runtime.settings = replace(original, values={**original.values, "max_item_chars": cap})
        assert run_at(2)
        lowered = _extract_rows(docket)
        assert _redone(first, lowered) == above
        assert all("item text capped" in (states("extract", docket)[k].reason or "") for k in above)
        runtime.settings = replace(original, values={**original.values, "max_item_chars": cap})
        assert run_at(3)
        assert _redone(lowered, _extract_rows(docket)) == set()  # the same cap: nothing to do
        runtime.settings = original
        assert run_at(4)
        raised = _extract_rows(docket)
        assert _redone(lowered, raised) == above
        assert {k: v[0] for k, v in raised.items()} == {k: v[0] for k, v in first.items()}


def test_which_caps_bite_is_judged_from_recorded_sizes():
    sizes = ItemSizes(body=50, rest=100, largest_file=60, file_cut=False)
    assert caps_biting(sizes, TextCaps(100, 1000, 1000)) == ""
    assert caps_biting(sizes, TextCaps(40, 1000, 1000)) == "body<=40"
    assert caps_biting(sizes, TextCaps(1000, 120, 1000)) == "item<=120"
    assert caps_biting(sizes, TextCaps(40, 140, 1000)) == "body<=40"  # 40 + 100 fits once the body is cut
    assert caps_biting(sizes, TextCaps(1000, 1000, 59)) == "file<=59"
    assert caps_biting(ItemSizes(0, 10, 5, True), TextCaps(None, None, 2000)) == "file<=2000"  # cut before
    assert ItemSizes.from_detail(sizes.detail()) == sizes and ItemSizes.from_detail(None) is None
    assert with_caps("f", "") == "f" and with_caps("f", "item<=9") != with_caps("f", "item<=10")


def _index_rows(runtime, docket: str) -> dict[str, tuple]:
    """item -> (fingerprint, indexed_at, chunk count) of its index row: re-embedded, a new
    indexed_at."""
    return {k: (s.fingerprint, s.indexed_at, s.chunk_count) for collection in ("comments", "documents")
            for k, s in runtime.index_db().state_for_docket(collection, docket).items()}


def _chunk_cap_run(runtime, original, hours: float, cap: int | None) -> tuple[int, int]:
    """One IndexAll under ``max_item_chunks=cap`` (None: the default); its combined.md reads
    and stage runs."""
    values = original.values if cap is None else {**original.values, "max_item_chunks": cap}
    runtime.settings = replace(original, values=values)
    with counters.measure() as io:
        assert run_at(hours)
    return io.get(COMBINED_READS, 0), io.get(STAGE_CALLS, 0)


def test_a_changed_chunk_cap_reindexes_exactly_the_items_it_bites_or_bit(tmp_path, pg_server):
    """max_item_chunks lowered re-indexes the items it cuts and reads no other item's
    combined.md; the same cap again reads nothing; raised back, those items again, and their
    rows and chunks are what they were. The docket's marker changes with the cap (sealed
    dockets too: the marker is asked first). The sections stage is off: it reads every
    comment again when the document's vectors change, which the cap changes too."""
    with chain(tmp_path, pg_server, comments=8, chunk_chars=200, sections="false") as (
            runtime, _server, docket, _root):
        assert run_at(1)
        first = _index_rows(runtime, docket)
        made = sorted(count for _, _, count in first.values())
        assert made[0] < made[-1], made  # the corpus' items differ in chunks
        cap = (made[0] + made[-1]) // 2
        above = {k for k, (_, _, count) in first.items() if count > cap}
        assert above and above != set(first), (cap, made)
        chunks_before, original = runtime.index_db().dump_chunks(), runtime.settings
        marker = runtime.index_db().docket_marker("comments", docket).input_fingerprint

        assert _chunk_cap_run(runtime, original, 2, cap)[0] == len(above)
        lowered = _index_rows(runtime, docket)
        assert {k for k in lowered if lowered[k][1] != first[k][1]} == above  # re-embedded
        assert all(lowered[k][2] == cap for k in above)
        assert runtime.index_db().docket_marker("comments", docket).input_fingerprint != marker

        assert _chunk_cap_run(runtime, original, 3, cap) == (0, 0)  # the same cap: no task runs
        assert _index_rows(runtime, docket) == lowered
        store = registry.marker_store(registry.get("index"), runtime)  # judged in bulk: no work
        assert store.judge(None, version=1, window_start="2000-01-01", now=iso(utcnow()),
                           sample=3).pending == {}

        assert _chunk_cap_run(runtime, original, 4, None)[0] == len(above)
        raised = _index_rows(runtime, docket)
        assert {k for k in raised if raised[k][1] != lowered[k][1]} == above
        assert {k: (fp, n) for k, (fp, _, n) in raised.items()} == {k: (fp, n) for k, (fp, _, n) in first.items()}
        assert runtime.index_db().dump_chunks() == chunks_before
        assert runtime.index_db().docket_marker("comments", docket).input_fingerprint == marker


def test_the_chunk_cap_bites_as_the_text_caps_do():
    assert chunks_biting(10, 10) == "" and chunks_biting(11, 10) == "chunks<=10"
    assert chunks_biting(11, None) == ""
    assert with_caps("f", chunks_biting(11, 10)) != with_caps("f", chunks_biting(11, 9))


# --- OCR'd items follow the same rule ---------------------------------------------------------


def _extract_then_ocr(rt, run: str) -> tuple[set[str], int]:
    """Extract, then OCR, as the chain runs them: (the items extract redid, the PDFs OCR opened)."""
    before = _extract_rows(extract_inputs.DOCKET)
    extract_inputs.run_extract(rt, run_id=f"extract-{run}")
    redone = {k for k, (_, run_id) in _extract_rows(extract_inputs.DOCKET).items() if run_id == f"extract-{run}"}
    assert set(before) <= set(_extract_rows(extract_inputs.DOCKET))
    _, io = ocr_inputs.run_ocr(rt, run_id=f"ocr-{run}")
    return redone, io.get(PDF_OPENS, 0)


@ocr_inputs.needs_tesseract
def test_a_changed_cap_redoes_exactly_the_ocrd_items_whose_text_it_changes(rt):
    """OCR records an item's sizes with its OCR text (extract measured the scan as empty): a
    cap that bites only because of that text redoes that item alone, through extract and OCR
    (its scan read again), and raised back, that item again, to the bytes it had."""
    extract_inputs.setup_docket(rt, ocr_inputs.comments())
    assert _extract_then_ocr(rt, "1")[1] == 2  # the two scans
    scanned = ocr_inputs.SCANNED
    extracted = ItemSizes.from_detail(extract_inputs.rows(EXTRACT)[scanned].detail)
    merged_bytes = rt.blobs.get(combined_key(extract_inputs.DOCKET, scanned))
    rows_before = {k: (r.fingerprint, r.content_hash) for k, r in extract_inputs.rows(EXTRACT).items()}
    sizes = {k: ItemSizes.from_detail(r.detail) for k, r in extract_inputs.rows(EXTRACT).items()}
    with_ocr = sizes[scanned]
    assert with_ocr.rest > 0 and extract_inputs.SCAN_SENTENCE in ocr_inputs.normalised(merged_bytes.decode())
    # Under this cap only because of the OCR text: the other items and the typed text fit.
    cap = with_ocr.body + with_ocr.rest - 10
    assert all(s.body + s.rest <= cap for k, s in sizes.items() if k != scanned), (cap, sizes)
    assert extracted is not None and cap > 0

    default = rt.settings.values["max_item_chars"]
    rt.settings.values["max_item_chars"] = cap
    redone, scans_read = _extract_then_ocr(rt, "2")
    assert (redone, scans_read) == ({scanned}, 1)
    frontmatter, _ = extract_inputs.combined(rt, scanned)
    assert frontmatter["chars"] <= cap and frontmatter["capped"]
    assert f"item text capped at {cap} characters" in extract_inputs.rows(EXTRACT)[scanned].reason
    tables = extract_inputs.dump_tables()
    assert _extract_then_ocr(rt, "3") == (set(), 0)  # the same cap: nothing to do
    assert extract_inputs.dump_tables() == tables

    rt.settings.values["max_item_chars"] = default
    assert _extract_then_ocr(rt, "4") == ({scanned}, 1)
    assert rt.blobs.get(combined_key(extract_inputs.DOCKET, scanned)) == merged_bytes
    assert {k: (r.fingerprint, r.content_hash) for k, r in extract_inputs.rows(EXTRACT).items()} == rows_before


@ocr_inputs.needs_tesseract
def test_an_item_a_cap_bites_at_extract_still_gets_its_scans_read(rt):
    """Its extract fingerprint carries the cap; OCR still knows its combined.md as the one
    extract wrote (by its content hash), merges, and is done for good."""
    extract_inputs.setup_docket(rt, ocr_inputs.comments())
    rt.settings.values["max_item_chars"] = 60  # bites the typed PDF of the scanned comment
    extract_inputs.run_extract(rt)
    assert "item text capped at 60" in (extract_inputs.rows(EXTRACT)[ocr_inputs.SCANNED].reason or "")
    result, io = ocr_inputs.run_ocr(rt)
    assert result.counts.get("merged") == 2 and "stale" not in result.counts and io[PDF_OPENS] == 2
    assert extract_inputs.rows(OCR)[f"{ocr_inputs.SCANNED}/attachment_1.pdf"].state == "ok"
    assert _extract_then_ocr(rt, "2") == (set(), 0)
