"""Caps on amplification: text per file and chunks per item are cut, the cut recorded, and
the run goes on."""

from __future__ import annotations

import json
from dataclasses import replace

from devtools.mirror_layout import comment_files, replace_json
from pipeline.extract.combined import capped_of, combined_sections, parse_combined, render_combined
from pipeline.extract.readers import AttachmentText, ExtractLimits, read_attachment
from pipeline.extract.text_caps import ItemSizes, TextCaps, capped_sections, caps_biting, with_caps
from pipeline.stages.extract import read_combined
from pipeline.store.models import ItemState, Run
from tests.test_unfinished_work import chain, run_at, states


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
