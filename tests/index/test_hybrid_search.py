"""Hybrid search (vector + PostgreSQL full text, fused by reciprocal rank) on the real
embedded PostgreSQL: exact citations and names are found where the embedding blurs them,
filters narrow both rankings, and an index DB made before full text is upgraded in place."""

from __future__ import annotations

import random

import psycopg2
import pytest

from pipeline.index import migrations
from pipeline.index.chunking import chunk_text
from pipeline.index.database import IndexDB, SearchFilters
from pipeline.index.embedders import make_embedder
from pipeline.index.search import filters_of, format_hits, fuse, search

pytestmark = pytest.mark.postgres

EMBEDDER = make_embedder("hashing", dim=256)
TARGET = "CMS-2026-0001-0031"
CITATION = "42 U.S.C. 1395"
SENTENCES = [
    "Medicare payment rates for rural hospitals have not kept up with costs.",
    "The proposed rule would reduce reimbursement for outpatient services.",
    "Patients in small towns already travel long distances for care.",
    "CMS should delay the cuts until the effect on access is studied.",
    "Our clinic serves many seniors who depend on Medicare coverage.",
    "Hospital closures leave whole counties without emergency care.",
    "The agency underestimates the staffing costs of the new requirements.",
    "We urge CMS to protect critical access hospitals from these reductions.",
]
# Distractors cite the same title of the code many times, with other sections: a bag of
# words sees them as nearer to the query than the one comment that cites the section asked.
DISTRACTOR = "See 42 U.S.C. 1320a and 42 U.S.C. 1396 and 42 U.S.C. 1320b; 42 U.S.C. 1396a applies."


def _corpus() -> dict[str, tuple[str, dict]]:
    rng = random.Random(19)
    comments = {}
    for n in range(1, 41):
        key = f"CMS-2026-0001-{n:04d}"
        text = " ".join(rng.sample(SENTENCES, 5))
        if n % 5 == 0:
            text = DISTRACTOR + " " + text
        if key == TARGET:
            text = " ".join(SENTENCES) + f" The payment floor in {CITATION} was written for them."
        organization = "Rural Health Alliance" if n % 4 == 0 else "Valley Clinic 100%"
        posted = f"2026-03-{n % 28 + 1:02d}T15:00:00Z"
        comments[key] = (text, {"submitter": f"Person {n}", "organization": organization,
                                "posted_date": posted, "kind": "comment"})
    return comments


def _put(db: IndexDB, key: str, text: str, metadata: dict, docket: str = "CMS-2026-0001") -> None:
    chunks = chunk_text([("Inline comment", text)], max_chars=2000, overlap=100)
    db.replace_item("comments", key, docket, chunks, EMBEDDER.embed([c.text for c in chunks]),
                    "fp", "h", EMBEDDER.id, metadata)


@pytest.fixture
def db(pg_url, tmp_path):
    index_db = IndexDB.open(pg_url, tmp_path)
    for key, (text, metadata) in _corpus().items():
        _put(index_db, key, text, metadata)
    yield index_db
    index_db.close()


def test_a_statute_citation_ranks_its_comment_first_where_the_vector_ranking_does_not(db):
    by_vector = search(db, EMBEDDER, CITATION, k=10, mode="vector")
    assert by_vector[0].item_key != TARGET  # the embedding alone prefers the distractors

    hybrid = search(db, EMBEDDER, CITATION, k=10)
    assert hybrid[0].item_key == TARGET
    assert hybrid[0].text_rank == 1 and hybrid[0].fused > hybrid[1].fused
    assert [h.item_key for h in search(db, EMBEDDER, CITATION, k=10, mode="text")] == [TARGET]


def test_when_no_chunk_has_every_word_the_vector_ranking_alone_decides(db):
    query = "rural hospitals close like dragons"  # no comment mentions dragons: no text match
    assert search(db, EMBEDDER, query, k=5, mode="text") == []
    hybrid = search(db, EMBEDDER, query, k=5)
    assert [h.item_key for h in hybrid] == [h.item_key for h in search(db, EMBEDDER, query, k=5, mode="vector")]
    assert all(h.text_rank is None and h.vector_rank == n for n, h in enumerate(hybrid, start=1))


def test_a_quoted_phrase_matches_only_that_phrase(db):
    hits = search(db, EMBEDDER, '"payment floor"', k=10, mode="text")
    assert [h.item_key for h in hits] == [TARGET]
    assert search(db, EMBEDDER, '"floor payment"', k=10, mode="text") == []


def test_filters_narrow_both_rankings(db):
    _put(db, "OTHER-0001", f"Nothing on Medicare here but {CITATION}.", {"posted_date": "2026-03-02T15:00:00Z"},
         docket="OTHER")
    everywhere = {h.item_key for h in search(db, EMBEDDER, CITATION, k=100, per_item=True)}
    assert "OTHER-0001" in everywhere
    in_docket = search(db, EMBEDDER, CITATION, k=100, docket="CMS-2026-0001", per_item=True)
    assert {h.docket for h in in_docket} == {"CMS-2026-0001"} and in_docket[0].item_key == TARGET

    alliance = search(db, EMBEDDER, "medicare", k=100, filters=SearchFilters(organization="health ALLIANCE"))
    assert alliance and {h.metadata["organization"] for h in alliance} == {"Rural Health Alliance"}
    # A % the user types is a character, not a LIKE wildcard: it matches only its own text.
    percent = search(db, EMBEDDER, "medicare", k=100, filters=SearchFilters(organization="0%"))
    assert {h.metadata["organization"] for h in percent} == {"Valley Clinic 100%"}
    assert search(db, EMBEDDER, "medicare", k=100, filters=SearchFilters(organization="%")) != []
    assert search(db, EMBEDDER, "medicare", k=100, filters=SearchFilters(organization="_x_")) == []

    chosen = search(db, EMBEDDER, "medicare", k=100, filters=SearchFilters(items=(TARGET, "CMS-2026-0001-0002")))
    assert {h.item_key for h in chosen} == {TARGET, "CMS-2026-0001-0002"}
    assert search(db, EMBEDDER, "medicare", filters=SearchFilters(items=())) == []

    window = SearchFilters(posted_from="2026-03-10T00:00:00Z", posted_before="2026-03-12T00:00:00Z")
    dated = search(db, EMBEDDER, "medicare", k=100, filters=window, per_item=True)
    assert sorted({h.metadata["posted_date"][:10] for h in dated}) == ["2026-03-10", "2026-03-11"]
    # Every comment of those days that mentions Medicare, and none that does not (no match is no result).
    assert len(dated) == sum(1 for text, m in _corpus().values()
                             if m["posted_date"][:10] in ("2026-03-10", "2026-03-11") and "medicare" in text.lower())


def test_the_organisation_filter_matches_the_comments_of_its_resolved_organisation_too(db):
    """``org_items`` (the state DB's members of the organisations the text names) widen the
    ``org`` filter, both rankings alike; without the text they are inert."""
    odd = 'CMS-2026-0001-0001"},{x'  # a key is a bound value, quoted in the array literal
    _put(db, odd, "Medicare payment rates matter to every clinic.", {"organization": "Amer. Med. Assn."})
    resolved = ("CMS-2026-0001-0002", odd)
    for mode in ("vector", "text", "hybrid"):
        # No floor: the filter is what is asked here, not how near a one-word query comes.
        hits = search(db, EMBEDDER, "medicare", k=100, mode=mode, floor=0.0,
                      filters=SearchFilters(organization="american medical association", org_items=resolved))
        assert {h.item_key for h in hits} == set(resolved), mode
    alliance = search(db, EMBEDDER, "medicare", k=100,
                      filters=SearchFilters(organization="health alliance", org_items=resolved))
    assert {h.metadata.get("organization") for h in alliance} == {"Rural Health Alliance", "Valley Clinic 100%", "Amer. Med. Assn."}
    assert len(search(db, EMBEDDER, "medicare", k=100, filters=SearchFilters(org_items=resolved))) > 2
    assert filters_of({"org": "AMA", "org_items": list(resolved)}).org_items == resolved
    assert filters_of({"org": "AMA"}).params()["f_org_items"] is None


def test_pages_follow_each_other_without_overlap(db):
    first = search(db, EMBEDDER, "medicare hospitals", k=7, per_item=True)
    second = search(db, EMBEDDER, "medicare hospitals", k=7, offset=7, per_item=True)
    both = search(db, EMBEDDER, "medicare hospitals", k=14, per_item=True)
    assert [h.item_key for h in first + second] == [h.item_key for h in both]
    assert len({h.item_key for h in both}) == 14


def test_fusion_sums_reciprocal_ranks(db):
    vector = search(db, EMBEDDER, "rural hospitals", k=3, mode="vector")
    text = search(db, EMBEDDER, "rural hospitals", k=3, mode="text")
    fused = fuse(vector, text)
    for hit in fused:
        expected = sum(1 / (60 + r) for r in (hit.vector_rank, hit.text_rank) if r is not None)
        assert hit.fused == pytest.approx(expected)
    assert [h.fused for h in fused] == sorted((h.fused for h in fused), reverse=True)


def test_an_index_db_made_before_full_text_is_upgraded_and_backfilled_in_place(pg_url, tmp_path, monkeypatch):
    # Without migration 2 (full text); with the later ones, whose columns today's writer fills.
    monkeypatch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1] + migrations.MIGRATIONS[2:])
    old = IndexDB.open(pg_url, tmp_path)
    text, metadata = _corpus()[TARGET]
    _put(old, TARGET, text, metadata)
    old.close()
    monkeypatch.undo()

    upgraded = IndexDB.open(pg_url, tmp_path)
    try:
        assert upgraded.schema_version() == migrations.SCHEMA_VERSION
        assert [h.item_key for h in search(upgraded, EMBEDDER, CITATION, mode="text")] == [TARGET]
        # Names are words too: the submitter's organisation finds its comment.
        assert search(upgraded, EMBEDDER, '"Valley Clinic"', mode="text")[0].item_key == TARGET
    finally:
        upgraded.close()
    with psycopg2.connect(pg_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_vectors_tsv'")
        assert "gin" in cur.fetchone()[0].lower()
    conn.close()


# --- search that reads like a search engine ----------------------------------------------

MULTI = "CMS-2026-0001-0099"
EXACT = "CMS-2026-0001-0098"
SENTENCE = "Rural emergency departments are closing because staffing grants ended."


def _put_small_chunks(db: IndexDB, key: str, text: str) -> None:
    chunks = chunk_text([("Inline comment", text)], max_chars=120, overlap=0)
    db.replace_item("comments", key, "CMS-2026-0001", chunks, EMBEDDER.embed([c.text for c in chunks]),
                    "fp", "h", EMBEDDER.id, {"kind": "comment", "posted_date": "2026-03-05T15:00:00Z"})


def test_k_results_are_k_different_comments_with_their_other_passages_folded_under_them(db):
    # One comment whose every short chunk is about rural hospitals: its passages alone
    # would fill the first places of both rankings.
    _put_small_chunks(db, MULTI, " ".join(["Rural hospitals close and rural hospitals lose staff."] * 8))
    passages = search(db, EMBEDDER, "rural hospitals", k=3, per_item=False)
    assert [h.item_key for h in passages] == [MULTI] * 3  # every passage, when asked

    hits = search(db, EMBEDDER, "rural hospitals", k=3)
    assert len({h.item_key for h in hits}) == 3 and hits[0].item_key == MULTI
    assert len(hits[0].more) >= 2 and {m.item_key for m in hits[0].more} == {MULTI}
    assert all(m.fused <= hits[0].fused for m in hits[0].more)
    printed = format_hits(hits)
    assert [line.split()[2] for line in printed.splitlines() if line[:4].strip().endswith(".")] == [
        h.item_key for h in hits]
    assert "also:" in printed


def test_a_quoted_phrase_is_a_condition_of_the_hybrid_search_too(db):
    _put(db, "CMS-2026-0001-0097", "The floor payment was set before the payment rates changed for the floor.", {})
    hits = search(db, EMBEDDER, '"payment floor"', k=10)
    assert [h.item_key for h in hits] == [TARGET]
    words_apart = search(db, EMBEDDER, "payment floor", k=10)
    assert "CMS-2026-0001-0097" in {h.item_key for h in words_apart}  # unquoted: the words, any order


def test_a_comment_holding_the_query_sentence_verbatim_ranks_first(db):
    # The sentence once, among much else; others hold its words shuffled and over again,
    # nearer to the query for the embedding and denser for the full-text rank.
    _put(db, EXACT, " ".join(SENTENCES) + " " + SENTENCE + " " + " ".join(reversed(SENTENCES)), {})
    words = SENTENCE.rstrip(".").split()
    for n in range(1, 4):
        shuffled = words[n:] + words[:n]
        _put(db, f"CMS-2026-0001-009{n}", " ".join(reversed(shuffled)) + ". " + " ".join(shuffled) + ".", {})
    by_vector = search(db, EMBEDDER, SENTENCE, k=5, mode="vector")
    assert by_vector[0].item_key != EXACT  # the embedding alone prefers the shuffled words
    hits = search(db, EMBEDDER, SENTENCE, k=5)
    assert hits[0].item_key == EXACT and hits[0].exact
    assert not any(h.exact for h in hits[1:])
    # Any case, any spacing: still the same sentence.
    assert search(db, EMBEDDER, "  rural EMERGENCY departments   are closing because staffing grants ended ", k=1)[0].item_key == EXACT


def test_the_score_shown_is_the_one_the_results_are_sorted_by(db):
    _put(db, EXACT, " ".join(SENTENCES) + " " + SENTENCE, {})
    for query in (CITATION, SENTENCE, "rural hospitals", '"payment floor"'):
        hits = search(db, EMBEDDER, query, k=10)
        shown = [float(line.split()[1]) for line in format_hits(hits).splitlines()
                 if line[:4].strip().endswith(".")]
        assert shown == sorted(shown, reverse=True), (query, shown)
        assert shown == [round(h.fused, 4) for h in hits]
    # The citation's comment is first by fusion, though its cosine is below the next ones'.
    hits = search(db, EMBEDDER, CITATION, k=10)
    assert hits[0].item_key == TARGET and hits[0].score < max(h.score for h in hits[1:])


def test_a_quoted_phrase_of_stop_words_only_narrows_nothing(db):
    assert search(db, EMBEDDER, '"the" medicare', k=5) == search(db, EMBEDDER, "the medicare", k=5)


def test_an_id_asked_alone_ranks_the_comment_citing_it_first_not_its_neighbours(db):
    _put(db, EXACT, " ".join(SENTENCES) + " See docket CMS-2026-0042 for the earlier rule.", {})
    for n in range(3):
        _put(db, f"CMS-2026-0001-009{n}", f"Docket CMS-2026-0042{n} and docket CMS-2026-0042{n} again.", {})
    hits = search(db, EMBEDDER, "CMS-2026-0042", k=5)
    assert hits[0].item_key == EXACT and hits[0].exact and not any(h.exact for h in hits[1:])
