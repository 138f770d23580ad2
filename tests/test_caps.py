"""Caps on amplification: text per file and chunks per item are cut, the cut recorded, and
the run goes on."""

from __future__ import annotations

import json

from pipeline.extract.readers import ExtractLimits, read_attachment
from pipeline.store.models import ItemState, Run
from tests.test_unfinished_work import chain, run_at


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
