"""Fingerprint values are pinned: stores keep them, so a changed value redoes all the work.

Each expected value below was computed by the code before ``pipeline/fingerprints.py``
existed (each stage hashed by hand); the helper must give the very same bytes.
"""

from __future__ import annotations

from pipeline.extract import stage as extract
from pipeline.fingerprints import RECORD, RecordsDigest, digest, postgres_md5
from pipeline.index import stage as index
from pipeline.ocr import stage as ocr
from pipeline.store import item_states, items

CONFIG = "c1:1500\x1fhashing-384"
METADATA = {"title": "Café ñ", "submitter": "Pat Doe", "kind": "comment"}


def test_stage_fingerprints_keep_their_values():
    assert extract.item_fingerprint("abc", "v9") == \
        "310947645a77bf054c0d00202c57096246c8a2237761f44b4817b84eb66ea42c"
    assert extract.item_fingerprint(None, "v9") == \
        "16502f2d06c45917390dde11b56a07742c7d5b231ef33279cba7c2d0bc4cadde"
    assert ocr.ocr_fingerprint("efp", "attachment_1.pdf", "ocr-v2") == \
        "8a0f80c16b9a5e08665065878acdaff236f3fb0ffdbd8b54bd8b5ad28162a7e1"
    assert index.marker_input_fingerprint("out", CONFIG) == \
        "820e028fbe6057c450315ff87d3f58b8e66357558376e201a1271ad47b3601df"
    assert index.marker_input_fingerprint(None, "cfg") == \
        "483ffcb4f29fe56640e6361bc60e36f732188842b32149abafca8edbaa81bf23"
    assert index.item_fingerprint("h", CONFIG, METADATA) == \
        "6e0ea4bd0108b9aeb519e3f56567881fed5bc57131b81efe6902f8ad9c0c30d5"


def test_json_digests_keep_their_canonical_form():
    # Index rows were hashed with non-ASCII kept as is, item rows with it escaped.
    sections = [["Inline", "Grüße"], ["attachment_1.pdf", "text"]]
    assert index.content_hash(sections, CONFIG, METADATA) == \
        "6918565b2b49f6ed807ea14b54e53a60a5d9d0b4f4dfce7d5899c27bb1278348"
    assert items.content_digest({"kind": "comment", "title": "Café ñ", "withdrawn": False, "n": None}) == \
        "5474f640d5d7774550db7dacc0c7a8a7e99d1afca713500a95829156d3cbfe2c"


def test_docket_output_fingerprint_keeps_its_value(sqlite_state):
    item_states.transition("extract", "A-2", "AB-1", "failed", run_id="r")
    item_states.transition("extract", "A-1", "AB-1", "ok", run_id="r", content_hash="h1")
    expected = "e3320e783ce3a2ee93ee6ff3b586feb5c45f23d346d25d94582c98189bf6aeef"
    assert item_states.docket_output_fingerprint("extract", "AB-1") == expected
    records = RecordsDigest()
    records.add("A-1", "ok", "h1")
    records.add("A-2", "failed", "")
    assert records.hexdigest() == expected


def test_parts_are_joined_by_the_separator_asked():
    assert digest("a", "b") != digest("a", "b", sep=RECORD) != digest("ab")


def test_the_cross_database_checksum_is_postgresqls_md5(pg_url):
    """The wrapper compares ``postgres_md5`` of the state DB's lines with PostgreSQL's
    ``md5()`` of the index DB's: the same digest of the same UTF-8 text, whatever it holds."""
    import psycopg2

    lines = [f"CMS-2026-{n:04d}\x1f2026-01-0{n % 9 + 1}T00:00:00+00:00\x1f{digest(str(n))}" for n in range(500)]
    texts = ["", "a", "Café ñ 日本語 😀", "\x1f\x1e\n\t", "\n".join(lines), "x" * 100_000]
    with psycopg2.connect(pg_url) as conn, conn.cursor() as cur:
        for text in texts:
            cur.execute("SELECT md5(%s)", (text,))
            assert cur.fetchone()[0] == postgres_md5(text)
    conn.close()
