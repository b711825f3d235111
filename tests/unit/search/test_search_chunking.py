"""Chunking: Markdown-aware passages with character locators (K-CON-20, K-DOC-11, OD-K36, OD-K40)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from notochord.errors import KnowledgeValidationError
from notochord.search.chunking import Chunk, chunk_markdown


def non_ws(s: str) -> str:
    return "".join(ch for ch in s if not ch.isspace())


def assert_invariants(text: str, chunks: list[Chunk], max_chars: int) -> None:
    previous_end = 0
    for i, chunk in enumerate(chunks):
        assert chunk.index == i
        assert previous_end <= chunk.start < chunk.end <= len(text)
        assert chunk.end - chunk.start <= max_chars
        assert text[chunk.start : chunk.end] == chunk.text
        assert not chunk.text[0].isspace()
        assert not chunk.text[-1].isspace()
        assert non_ws(text[previous_end : chunk.start]) == ""
        previous_end = chunk.end
    assert non_ws(text[previous_end:]) == ""
    assert "".join(non_ws(c.text) for c in chunks) == non_ws(text)


def test_whitespace_only_text_has_no_chunks() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown(" \n\n\t  \n") == []


def test_short_document_is_one_chunk_whose_locator_excludes_surrounding_whitespace_od_k40() -> None:
    text = "\n\n  Tomato beef stew tonight.\n\nIt was good.  \n"
    [chunk] = chunk_markdown(text)
    assert chunk == Chunk(index=0, text="Tomato beef stew tonight.\n\nIt was good.", start=4, end=43)


def test_small_blocks_are_packed_up_to_the_size_and_numbered_from_zero_od_k36() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 30 for i in range(10)]
    text = "\n\n".join(p.strip() for p in paragraphs)
    chunks = chunk_markdown(text, max_chars=400)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert 1 < len(chunks) < len(paragraphs)
    assert all(c.text.startswith("Paragraph") for c in chunks)
    assert_invariants(text, chunks, 400)


def test_a_heading_starts_a_new_chunk_and_stays_with_the_text_after_it() -> None:
    text = "Intro line.\n\n# Dinner\n\nTomato beef stew.\n\n## Dessert\n### Cake\nChocolate cake."
    chunks = chunk_markdown(text)
    assert [c.text for c in chunks] == [
        "Intro line.",
        "# Dinner\n\nTomato beef stew.",
        "## Dessert\n### Cake\nChocolate cake.",
    ]


def test_a_heading_above_a_long_paragraph_shares_its_first_piece() -> None:
    text = "# Notes\n\n" + "This sentence is about stew. " * 60
    chunks = chunk_markdown(text, max_chars=300)
    assert chunks[0].text.startswith("# Notes\n\nThis sentence")
    assert_invariants(text, chunks, 300)


def test_a_long_paragraph_is_hard_split_at_sentence_ends() -> None:
    text = " ".join(f"Sentence number {i} talks about beef." for i in range(80))
    chunks = chunk_markdown(text, max_chars=300)
    assert len(chunks) > 5
    assert all(c.text.endswith("beef.") for c in chunks)
    assert all(c.text.startswith("Sentence") for c in chunks)
    assert_invariants(text, chunks, 300)


def test_a_paragraph_without_sentence_ends_is_split_at_whitespace() -> None:
    text = " ".join(f"word{i}" for i in range(300))
    chunks = chunk_markdown(text, max_chars=200)
    joined_words = [w for c in chunks for w in c.text.split()]
    assert joined_words == text.split()
    assert_invariants(text, chunks, 200)


def test_a_run_without_any_boundary_is_cut_at_exactly_max_chars() -> None:
    text = "x" * 250
    chunks = chunk_markdown(text, max_chars=100)
    assert [len(c.text) for c in chunks] == [100, 100, 50]


def test_chinese_text_is_split_after_full_stops() -> None:
    text = "今天晚上吃了番茄牛腩，味道很好。" * 40
    chunks = chunk_markdown(text, max_chars=100)
    assert all(c.text.endswith("。") for c in chunks)
    assert_invariants(text, chunks, 100)


def test_a_code_fence_is_never_split_at_its_blank_lines() -> None:
    fence = "```python\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n```"
    text = "Before.\n\n" + fence + "\n\nAfter."
    chunks = chunk_markdown(text, max_chars=1000)
    assert len(chunks) == 1
    assert fence in chunks[0].text


def test_a_code_fence_that_does_not_fit_moves_whole_to_the_next_chunk() -> None:
    fence = "~~~\n" + "\n\n".join(f"line_{i} = {i}" for i in range(20)) + "\n~~~"
    text = "Lead " * 40 + "\n\n" + fence
    chunks = chunk_markdown(text, max_chars=len(fence) + 10)
    assert [c.text for c in chunks][-1] == fence


def test_a_code_fence_longer_than_max_is_split_at_line_breaks() -> None:
    fence = "```\n" + "\n".join(f"value_{i:03d} = compute({i})" for i in range(60)) + "\n```"
    chunks = chunk_markdown(fence, max_chars=200)
    assert len(chunks) > 1
    for chunk in chunks[:-1]:
        assert fence[chunk.end] == "\n"
    assert_invariants(fence, chunks, 200)


def test_an_unclosed_fence_runs_to_the_end_of_the_text() -> None:
    text = "```\ncode\n\nmore code"
    assert [c.text for c in chunk_markdown(text)] == [text]


def test_an_indented_fence_chunk_starts_at_its_first_backtick() -> None:
    text = "Lead " * 30 + "\n\n   ```\n   code\n   ```\n"
    chunks = chunk_markdown(text, max_chars=150)
    assert chunks[-1].text == "```\n   code\n   ```"
    assert_invariants(text, chunks, 150)


def test_max_chars_below_the_floor_is_refused() -> None:
    with pytest.raises(KnowledgeValidationError, match="max_chars"):
        chunk_markdown("text", max_chars=10)


markdownish = st.lists(
    st.one_of(
        st.text(alphabet=st.sampled_from("ab cd.\n番茄。 "), min_size=0, max_size=400),
        st.sampled_from(["# Title", "## Sub heading", "```", "  ~~~", "~~~", "\n\n", "- item", "    indented"]),
    ),
    max_size=30,
).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(text=markdownish, max_chars=st.integers(min_value=40, max_value=400))
def test_chunks_cover_every_non_whitespace_character_once_in_order(text: str, max_chars: int) -> None:
    assert_invariants(text, chunk_markdown(text, max_chars=max_chars), max_chars)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=1500))
def test_any_unicode_text_keeps_the_invariants(text: str) -> None:
    assert_invariants(text, chunk_markdown(text, max_chars=120), 120)
