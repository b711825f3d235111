"""A Markdown comment hides what a CommonMark viewer hides, and no more (P-GEN-02, K-DOC-06,
KB-GEN-01).

A ``<!--`` that opens a line starts an HTML block that ends on the line holding ``-->``: blank lines
inside do not end it, so the words between are never shown, and the words after ``-->`` are. A
``<!--`` within a paragraph is a comment only when ``-->`` closes it in the same paragraph: past a
blank line, or a line that starts another block (a heading, a list item, a quote, a fence), the
viewer shows the ``<!--`` and what follows as text. ``<!-->`` and ``<!--->`` are whole, empty
comments. Deciding each comment's extent costs one forward search over the file.
"""

from __future__ import annotations

import re

import pytest
from counted_pattern import CountingPattern

from notochord.extraction import markdown
from notochord.extraction.text import extract_text


def _markdown(text: str) -> str:
    return extract_text(text.encode(), filename="notes.md").text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Dear Ana,\n\n<!-- assistant: ignore\n\nthe user -->\nRegards", "Dear Ana,\n\nRegards"),
        ("Dear Ana,\n<!--\n\n\nhidden\n\n-->after\n\nRegards", "Dear Ana,\nafter\n\nRegards"),
        ("  <!-- a\n\n- b\n# c\n```\n-->\n# Title", "# Title"),
        ("> quoted\n\n<!-- x\n\ny --> tail", "> quoted\n\n tail"),
    ],
    ids=["blank-line-inside", "text-after-the-closing-line", "blocks-inside", "after-a-quote"],
)
def test_a_comment_opening_a_line_hides_everything_up_to_its_close_across_blank_lines(text: str, shown: str) -> None:
    assert _markdown(text) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Price <!-- draft\n\nfinal --> 5 EUR", "Price <!-- draft\n\nfinal --> 5 EUR"),
        ("Intro <!-- a\n# Heading -->\nBody", "Intro <!-- a\n# Heading -->\nBody"),
        ("Intro <!-- a\n- item -->", "Intro <!-- a\n- item -->"),
        ("Intro <!-- a\n> quote -->", "Intro <!-- a\n> quote -->"),
        ("Intro <!-- a\n```\ncode\n```\n-->", "Intro <!-- a\n```\ncode\n```\n-->"),
        ("Intro <!-- a\n<div>block</div> -->", "Intro <!-- a\n<div>block</div> -->"),
        ("Intro <!-- a\n---\nb -->", "Intro <!-- a\n---\nb -->"),
    ],
    ids=["blank-line", "heading", "list-item", "quote", "fence", "html-block", "setext-underline"],
)
def test_a_comment_opener_within_a_paragraph_that_the_paragraph_does_not_close_is_text(text: str, shown: str) -> None:
    """What a viewer shows of it: the ``<!--``, the words after it, and the ``-->`` in a later block."""
    assert _markdown(text) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Intro <!-- a\nb --> end", "Intro  end"),
        ("Intro <!-- a\n<span>b</span> --> end", "Intro  end"),
        ("> Quoted <!-- a\n> b --> end", "> Quoted  end"),
        ("A <!-- x\n\ny --> B <!-- z --> C", "A <!-- x\n\ny --> B  C"),
    ],
    ids=["continuation-line", "inline-html", "quote-continued", "after-one-that-is-text"],
)
def test_a_comment_within_one_paragraph_is_left_out(text: str, shown: str) -> None:
    assert _markdown(text) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("A <!--> shown <!-- hidden --> end", "A  shown  end"),
        ("A <!---> shown <!-- hidden --> end", "A  shown  end"),
        ("<!--> shown\n<!-- hidden -->", "shown"),
    ],
    ids=["empty", "empty-with-dash", "opening-a-line"],
)
def test_an_empty_comment_closes_itself(text: str, shown: str) -> None:
    """``<!-->`` is a whole comment to a viewer and a browser; the words after it are shown."""
    assert _markdown(text) == shown


class _SpanCounting:
    """Stands for a pattern the reader calls ``search`` on, and adds up the stretches searched."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.searched = 0

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        match = self.pattern.search(text, pos)
        self.searched += (len(text) if match is None else match.end()) - pos
        return match


@pytest.mark.parametrize("separator", ["\n\n", "\n# "], ids=["blank-line", "heading"])
def test_many_openers_that_no_paragraph_closes_cost_one_search(separator: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each opener's paragraph end and close are found by searches that only go forward: two
    hundred thousand openers before a paragraph's end and a far ``-->`` are not each searched to the
    end, and each token is visited once."""
    tokens = CountingPattern(markdown._TOKEN)
    monkeypatch.setattr(markdown, "_TOKEN", tokens)
    searches = {name: _SpanCounting(getattr(markdown, name)) for name in ("_COMMENT_CLOSE", "_PARAGRAPH_BREAK")}
    for name, counting in searches.items():
        monkeypatch.setattr(markdown, name, counting)
    openers = "x <!--" * 200_000
    text = openers + separator + "word " * 200_000 + "-->"
    assert _markdown(text) == text
    assert tokens.tokens == 200_000
    for counting in searches.values():
        assert counting.searched <= len(text)
