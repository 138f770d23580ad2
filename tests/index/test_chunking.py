"""Chunking: paragraph packing, size limits, overlap, page markers, determinism."""

from __future__ import annotations

import pytest

from pipeline.index.chunking import CHUNKER_VERSION, Chunk, chunk_text, split_markdown_sections


def _paragraphs(n: int, words: int = 40) -> str:
    return "\n\n".join(" ".join(f"p{i}w{j}" for j in range(words)) + "." for i in range(n))


def test_version_is_a_fingerprint_ingredient():
    assert CHUNKER_VERSION == "chunk-1"


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
