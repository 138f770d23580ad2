"""Chunking: paragraph packing, size limits, overlap, page markers, determinism."""

from __future__ import annotations

import pytest

from pipeline.index.chunking import (
    CHUNKER_VERSION,
    Chunk,
    TokenBudget,
    chunk_text,
    counted_words_and_marks,
    split_markdown_sections,
)


def _paragraphs(n: int, words: int = 40) -> str:
    return "\n\n".join(" ".join(f"p{i}w{j}" for j in range(words)) + "." for i in range(n))


def test_version_is_a_fingerprint_ingredient():
    assert CHUNKER_VERSION == "chunk-2"


def test_short_sections_become_one_chunk_each_with_global_ordinals():
    chunks = chunk_text([("Comment", "See attached file(s)"), ("attachment_1.pdf", "One.\n\nTwo.")])
    assert chunks == [
        Chunk(0, "See attached file(s)", None, "Comment"),
        Chunk(1, "One.\n\nTwo.", None, "attachment_1.pdf"),
    ]


def test_empty_and_blank_sections_give_no_chunks():
    assert chunk_text([("Comment", ""), ("x", "  \n\n \n"), ("y", "<!-- page 1 -->\n")]) == []


def test_chunks_respect_max_chars_and_break_between_paragraphs():
    text = _paragraphs(20)
    chunks = chunk_text([("body", text)], max_chars=600, overlap=80)
    assert len(chunks) > 3
    assert all(len(c.text) <= 600 for c in chunks)
    # Every paragraph appears whole in some chunk: none is cut when it fits.
    for paragraph in text.split("\n\n"):
        assert any(paragraph in c.text for c in chunks)


def test_consecutive_chunks_overlap_at_a_word_boundary():
    chunks = chunk_text([("body", _paragraphs(12))], max_chars=500, overlap=100)
    for previous, current in zip(chunks, chunks[1:], strict=False):
        head = current.text.split("\n\n")[0]
        assert 0 < len(head) <= 100
        assert previous.text.endswith(head)
        assert head.split()[0].startswith("p")  # a whole word, not a fragment


def test_no_overlap_across_sections():
    chunks = chunk_text([("a", _paragraphs(6)), ("b", "Fresh start.")], max_chars=400, overlap=100)
    assert chunks[-1] == Chunk(len(chunks) - 1, "Fresh start.", None, "b")


def test_overlap_zero_gives_disjoint_chunks():
    text = _paragraphs(10)
    chunks = chunk_text([("body", text)], max_chars=400, overlap=0)
    assert "\n\n".join(c.text for c in chunks) == text


def test_a_giant_paragraph_is_split_at_sentences_then_words():
    sentences = " ".join(f"Sentence {i} talks about rural hospital payments." for i in range(100))
    one_long_word = "x" * 3000
    chunks = chunk_text([("body", sentences + "\n\n" + one_long_word)], max_chars=500, overlap=50)
    assert all(len(c.text) <= 500 for c in chunks)
    assert any(c.text.endswith("payments.") for c in chunks[:-3])
    assert sum(c.text.count("x") for c in chunks) >= 3000


def test_page_markers_set_the_page_of_each_chunk():
    text = (
        "Preamble before any page.\n\n<!-- page 1 -->\nFirst page words.\n\n"
        "<!-- page 2 -->\n" + _paragraphs(8) + "\n\n  <!--page 3-->  \nLast page."
    )
    chunks = chunk_text([("attachment_1.pdf", text)], max_chars=400, overlap=50)
    assert chunks[0].page is None
    assert "First page words." in chunks[0].text
    assert chunks[1].page == 2
    assert chunks[-1].page in (2, 3)
    assert "Last page." in chunks[-1].text
    assert not any("<!--" in c.text for c in chunks)


def test_a_chunk_page_is_where_its_new_text_starts():
    text = "<!-- page 1 -->\n" + _paragraphs(3, 30) + "\n\n<!-- page 2 -->\n" + _paragraphs(3, 30)
    chunks = chunk_text([("a.pdf", text)], max_chars=250, overlap=60)
    pages = [c.page for c in chunks]
    assert pages == sorted(pages)
    assert pages[0] == 1 and pages[-1] == 2


def test_form_feeds_number_pages_from_one():
    pages = [
        "Page one has this longer text.",
        "Page two has this longer text.",
        "",
        "Page four has this longer text.",
    ]
    chunks = chunk_text([("a.pdf", "\f".join(pages))], max_chars=50, overlap=0)
    assert [(c.page, c.text) for c in chunks] == [
        (1, "Page one has this longer text."),
        (2, "Page two has this longer text."),
        (4, "Page four has this longer text."),
    ]


def test_a_chunk_spanning_pages_takes_the_page_it_starts_on():
    [chunk] = chunk_text([("a.pdf", "End of page one.\fStart of page two.")])
    assert (chunk.page, chunk.text) == (1, "End of page one.\n\nStart of page two.")


def test_control_characters_that_postgres_rejects_are_removed():
    [chunk] = chunk_text([("a.pdf", "nul\x00 byte and bell\x07 here\ttab")])
    assert chunk.text == "nul byte and bell here\ttab"


def test_chunking_is_deterministic():
    sections = [("Comment", _paragraphs(5)), ("a.pdf", "<!-- page 1 -->\n" + _paragraphs(30))]
    assert chunk_text(sections) == chunk_text(list(sections))


@pytest.mark.parametrize("max_chars, overlap", [(10, 0), (400, 300), (400, -1)])
def test_bad_sizes_are_refused(max_chars, overlap):
    with pytest.raises(ValueError):
        chunk_text([("a", "text")], max_chars=max_chars, overlap=overlap)


def test_split_markdown_sections_drops_front_matter_and_keeps_page_markers():
    markdown = (
        "---\ncomment_id: CMS-1-0001\nsources: [a]\n---\n"
        "Intro without heading.\n\n"
        "## Comment\n\nSee attached.\n\n"
        "## attachment_1.pdf\n\n<!-- page 1 -->\nPage one.\fStill text.\n"
    )
    sections = split_markdown_sections(markdown)
    assert [h for h, _ in sections] == ["", "Comment", "attachment_1.pdf"]
    assert "comment_id" not in sections[0][1]
    assert "<!-- page 1 -->" in sections[2][1]
    assert "\f" in sections[2][1]


# --- chunks within the model's own tokens -------------------------------------------------

FIGURES = ("Under 42 CFR 482.12(a)(1)-(3), see §§ 412.8, 413.65(b); costs rose 3.7% ($1,204.50) "
           "in FY2025 vs. FY2024, per Table 4-B (p. 17), lines 9–12.")


def _words(texts) -> list[str]:
    return [word for text in texts for word in text.split()]


def test_the_tokenizer_free_count_adds_up_over_joined_texts():
    parts = [FIGURES, "Plain words here.", "a-b c/d"]
    assert counted_words_and_marks("\n\n".join(parts)) == sum(map(counted_words_and_marks, parts))
    assert counted_words_and_marks("Rule 3(a), ok.") == 8  # Rule 3 ( a ) , ok .


def test_chunks_keep_within_the_token_budget_and_lose_no_word():
    # Dense in tokens per character; each sentence numbered, so no two overlaps look alike.
    text = "\n\n".join(" ".join(f"({p}.{n}) {FIGURES}" for n in range(3)) for p in range(6))
    budget = TokenBudget(counted_words_and_marks, 120, 16)
    by_chars = chunk_text([("a.pdf", text)], max_chars=1200, overlap=150)
    assert max(counted_words_and_marks(c.text) for c in by_chars) > 120  # a model would cut these
    chunks = chunk_text([("a.pdf", text)], max_chars=1200, overlap=150, tokens=budget)
    assert len(chunks) > len(by_chars)
    assert all(counted_words_and_marks(c.text) <= 120 and len(c.text) <= 1200 for c in chunks)
    # Every word is in a chunk, in order, once besides the overlaps (each at most 16 tokens).
    new_words: list[str] = []
    for previous, chunk in zip([None, *chunks], chunks, strict=False):
        words = chunk.text.split()
        if previous is not None:
            shared = next(n for n in range(len(words), -1, -1)
                          if n == 0 or previous.text.split()[-n:] == words[:n])
            assert counted_words_and_marks(" ".join(words[:shared])) <= 16
            words = words[shared:]
        new_words.extend(words)
    assert new_words == _words([text])


def test_one_word_longer_than_the_token_budget_is_sliced_not_dropped():
    word = "x" * 50 + "." * 300  # one "word" of 301 tokens
    budget = TokenBudget(counted_words_and_marks, 100, 10)
    chunks = chunk_text([("a", word)], max_chars=1200, overlap=0, tokens=budget)
    assert all(counted_words_and_marks(c.text) <= 100 for c in chunks)
    assert "".join(c.text.replace(" ", "") for c in chunks) == word
