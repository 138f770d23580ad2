"""A search shows only what matches (the query's words, or a meaning as near as the embedder's
floor), and a passage holding the query's sentence comes first even as OCR left it (a word
hyphenated at a line's end, a ligature, curly quotes): on the real embedded PostgreSQL."""

from __future__ import annotations

import pytest

from pipeline.config import load_settings
from pipeline.index.chunking import chunk_text
from pipeline.index.database import IndexDB
from pipeline.index.embedders import HashingEmbedder, MiniLMEmbedder, make_embedder
from pipeline.index.search import floor_of, holds_verbatim, relevant, search, search_answer

pytestmark = pytest.mark.postgres

EMBEDDER = make_embedder("hashing", dim=256)
UNRELATED = "zebra giraffe volcano"
# The page of a scanned letter as OCR read it: "regu-" and "lation" on two lines, "ﬁ" and "ﬂ"
# as single ligature characters, curly apostrophes.
OCR_PAGE = ("Dear Administrator,\nThe ﬁnal regu-\nlation would shut the county’s only clinic and\n"
            "leave ﬂood victims without care. We ask the agency to reconsider.")
COPIED = "The final regulation would shut the county's only clinic"
COMMENTS = {
    "OCR-0001": OCR_PAGE,
    # The copied sentence's words, in other orders and among others: nearer for a bag of
    # words, and all of them in the full-text index (where the OCR'd page lacks two).
    "CMS-0002": "The clinic in our county would shut, the agency says; its final regulation is the only one.",
    "CMS-0003": "Only the county clinic would shut: the regulation, final as it is, spares no one.",
    "CMS-0004": "Would the final regulation shut the only clinic of the county? The county says so.",
    "CMS-0005": "Rural hospitals in our county need stable funding to keep the emergency room open.",
    "CMS-0006": "Medicare payment rates for rural hospitals have not kept up with labor costs.",
    "CMS-0007": "The reporting requirements add paperwork without improving the quality of care.",
    "CMS-0008": "Telehealth visits have helped our patients and should stay covered.",
}


@pytest.fixture
def db(pg_url, tmp_path):
    index_db = IndexDB.open(pg_url, tmp_path)
    for key, text in COMMENTS.items():
        chunks = chunk_text([("Inline comment", text)], max_chars=2000, overlap=100)
        index_db.replace_item("comments", key, "CMS-2026-0001", chunks, EMBEDDER.embed([c.text for c in chunks]),
                              "fp", "h", EMBEDDER.id, {"kind": "comment"})
    yield index_db
    index_db.close()


def test_unrelated_words_find_nothing_and_say_how_near_they_came(db):
    answer = search_answer(db, EMBEDDER, UNRELATED, k=10)
    assert answer.hits == [] and answer.floor == EMBEDDER.search_floor == floor_of(EMBEDDER)
    assert answer.best_score is not None and answer.best_score < answer.floor
    assert answer.no_good_match() == f"no good match (best similarity {answer.best_score:.2f}, floor {answer.floor:.2f})"
    for mode in ("vector", "text"):  # each ranking alone keeps the rule
        assert search(db, EMBEDDER, UNRELATED, k=10, mode=mode) == [], mode
    # Without a floor the nearest noise is every comment: what a search showed before.
    assert len(search(db, EMBEDDER, UNRELATED, k=10, floor=-1.0)) == len(COMMENTS)


def test_a_near_paraphrase_above_the_floor_is_found_without_all_its_words(db):
    query = "rural hospitals need steady money for emergency rooms"
    assert search(db, EMBEDDER, query, k=10, mode="text") == []  # no passage holds every word
    hits = search(db, EMBEDDER, query, k=10)
    assert hits[0].item_key == "CMS-0005" and hits[0].text_rank is None
    assert hits[0].score >= EMBEDDER.search_floor
    # Every result shown matches, by the one rule.
    assert all(relevant(hit, EMBEDDER.search_floor) for hit in hits)
    # A floor set above it (the search_floor setting reaches the search through the index DB).
    db.search_floor = 0.95
    try:
        assert search(db, EMBEDDER, query, k=10) == []
        assert search_answer(db, EMBEDDER, query).floor == 0.95
    finally:
        db.search_floor = None


def test_a_sentence_copied_from_an_ocr_page_ranks_it_first_unquoted(db):
    hits = search(db, EMBEDDER, COPIED, k=5)
    assert hits[0].item_key == "OCR-0001" and hits[0].exact
    assert not any(hit.exact for hit in hits[1:])
    # Neither ranking alone puts it first: its words are broken for both.
    assert search(db, EMBEDDER, COPIED, k=5, mode="vector")[0].item_key != "OCR-0001"
    assert "OCR-0001" not in {h.item_key for h in search(db, EMBEDDER, COPIED, k=5, mode="text")}
    # Typed with curly quotes, or copied with its line break, it is the same sentence.
    assert search(db, EMBEDDER, "the ﬁnal regu-\nlation would shut the county’s only clinic", k=5)[0].item_key == "OCR-0001"


def test_a_passage_holds_the_query_as_a_person_reads_it():
    assert holds_verbatim(OCR_PAGE, "the final regulation would shut the county's only clinic")
    assert holds_verbatim(OCR_PAGE, "leave flood victims")
    assert holds_verbatim("a well-\nknown rule", "well-known rule")  # a hyphen the word keeps
    assert holds_verbatim("a well-\nknown rule", "wellknown rule")
    assert holds_verbatim("He said “stop the rule” twice", "said stop the rule twice")
    assert holds_verbatim("the\u00a0final   rule", "the final rule")
    assert not holds_verbatim("CMS-2026-00421 applies", "cms-2026-0042 applies")
    assert not holds_verbatim("the regulation, final", "final regulation")


def test_each_embedder_has_its_floor_and_the_setting_overrides_it():
    assert MiniLMEmbedder().search_floor == MiniLMEmbedder.SEARCH_FLOOR
    assert HashingEmbedder().search_floor == HashingEmbedder.SEARCH_FLOORS[HashingEmbedder().id]
    assert HashingEmbedder(64).search_floor > HashingEmbedder(256).search_floor > HashingEmbedder(1024).search_floor
    assert floor_of(EMBEDDER, 0.3) == 0.3
    assert load_settings({}).search_floor is None
    assert load_settings({"DOCKETEER_SEARCH_FLOOR": "0.3"}).search_floor == 0.3
    assert ("search_floor", "(empty)") in [row[:2] for row in load_settings({}).masked()]
