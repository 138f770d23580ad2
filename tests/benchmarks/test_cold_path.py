"""benchmarks/cold_path.py's bare operations do the work they stand for, on a tiny mirror
docket (their speed is measured by running the benchmark, never asserted here)."""

from __future__ import annotations

from benchmarks.cold_path import bare_operations, docket_of, make_docket
from devtools.make_corpus import Manifest
from pipeline.index.embedders import make_embedder


def test_bare_operations_read_copy_extract_and_embed_each_once(tmp_path):
    corpus = make_docket(tmp_path / "corpus", 12)
    manifest = Manifest.load(corpus)
    _docket_id, base = docket_of(corpus)
    files = [a for a in manifest.attachments() if a.expected_status != "gone"]

    figures = bare_operations(base, tmp_path / "bare", make_embedder("hashing"))

    # The docket's record, its proposed rule's and every comment's, each read once.
    assert figures["fetch"]["counts"] == {"records read": 12 + 2, "comment records": 12}
    # Every attachment and the rule's content PDF copied under its hash (copies share one).
    assert figures["backfill"]["counts"] == {"files copied": len(files) + 1}
    stored = [p for p in (tmp_path / "bare" / "blobs").rglob("*") if p.is_file()]
    assert len(stored) == len({a.sha256 for a in files}) + 1
    # One text per comment, holding its files' texts.
    assert figures["extract"]["counts"] == {"texts written": 12}
    texts = sorted((tmp_path / "bare" / "texts").iterdir())
    assert len(texts) == 12 and all(t.read_text() for t in texts)
    index = figures["index"]["counts"]
    assert 0 < index["distinct chunks embedded"] <= index["chunks"]
