"""The case search is for: a scanned letter (a picture of text in a PDF, read by real
Tesseract) holding the exact sentence searched for ranks first, above typed comments that use
the same words in other sentences."""

from __future__ import annotations

import pytest

from devtools.make_corpus import image_only_pdf
from pipeline.index.embedders import HashingEmbedder
from pipeline.index.search import search
from pipeline.runtime import set_runtime
from pipeline.store.models import Item
from tests.fixtures import index_inputs
from tests.fixtures.extract_inputs import DOCKET, SCAN_SENTENCE, pdf_of, rows, setup_docket
from tests.fixtures.ocr_inputs import extract_with_marker, needs_tesseract, normalised, run_ocr

pytestmark = pytest.mark.postgres

SCANNED = f"{DOCKET}-0001"
LETTER = f"To the agency. {SCAN_SENTENCE} Thank you."
# The sentence's words, in other sentences: what a search by words alone could rank first.
NEAR_MISSES = [
    "Rural hospitals need funding, and stable funding keeps them open.",
    "Keep the emergency room open: stable funding for rural hospitals is what we need.",
    "We need the emergency room to stay open; rural hospitals need stable funding to keep going.",
    "Stable funding. Rural hospitals. Emergency room. Keep it open. We need it.",
    "Funding for hospitals in rural areas must be stable so the room for emergencies stays open.",
]


@pytest.fixture
def rt(tmp_path, pg_url):
    runtime = index_inputs.open_runtime(tmp_path, pg_url, extract_workers=1)
    yield runtime
    set_runtime(None)
    runtime.close()


@needs_tesseract
def test_a_scanned_comment_holding_the_exact_sentence_ranks_first(rt):
    comments = {SCANNED: ("See attached file(s)", {"attachment_1.pdf": image_only_pdf(LETTER)})}
    for n, text in enumerate(NEAR_MISSES, start=2):
        # Typed: some inline, some as a text PDF, as comments come.
        comments[f"{DOCKET}-{n:04d}"] = (text, {}) if n % 2 else ("See attached file(s)", {"attachment_1.pdf": pdf_of(text)})
    setup_docket(rt, comments)
    extract_with_marker(rt)
    assert rows("extract")[SCANNED].state == "ocr_needed"  # no text layer: a scan
    result, _ = run_ocr(rt)
    assert result.counts.get("ocr_ok") == 1  # the scan was read by Tesseract, not typed text
    Item.update(posted_date="2026-01-02T00:00:00Z").where(Item.docket == DOCKET).execute()
    indexed, _ = index_inputs.run(rt, docket=DOCKET)
    assert indexed.complete

    hits = search(rt.index_db(), HashingEmbedder(), SCAN_SENTENCE, docket=DOCKET, k=10, per_item=True)

    assert [h.item_key for h in hits][0] == SCANNED
    assert SCAN_SENTENCE in normalised(hits[0].text) and hits[0].exact
    assert {h.item_key for h in hits} == set(comments)  # the near misses are found, below it
