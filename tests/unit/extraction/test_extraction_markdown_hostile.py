"""Markdown built to be slow to read (P-GEN-02, P-NET-10, K-DOC-06, KB-GEN-01): Markdown is read in
the calling process, without a reader's deadline, so every hostile shape costs work in proportion
to its length. Asserted by the text that comes out of shapes that would take hours if any step
backtracked over a long run, and by counting the tokens the comment scan visits.
"""

from __future__ import annotations

import pytest
from counted_pattern import CountingPattern

from notochord.extraction import markdown
from notochord.extraction.text import extract_text

_MILLION = 1_000_000


def _read(text: str) -> tuple[str | None, str]:
    document = extract_text(text.encode(), filename="notes.md")
    return document.title, document.text


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> CountingPattern:
    counting = CountingPattern(markdown._TOKEN)
    monkeypatch.setattr(markdown, "_TOKEN", counting)
    return counting


# --- headings and front matter: no pattern backtracks over a long run of blanks ---------------------


@pytest.mark.parametrize("blank", [" ", "\t", " \t"], ids=["spaces", "tabs", "mixed"])
def test_a_heading_whose_words_stand_a_million_blanks_apart_is_the_title(blank: str) -> None:
    """A heading line is read in one pass: the blanks between its words, or before closing ``#``
    marks that are not there, are not tried again at every position (a title is one line with
    single spaces)."""
    gap = blank * (_MILLION // len(blank))
    title, text = _read(f"# Minutes{gap}final\n\nBody.")
    assert title == "Minutes final"
    assert text == f"# Minutes{gap}final\n\nBody."


def test_a_heading_ending_in_a_million_blanks_and_a_hash_inside_a_word_keeps_its_words() -> None:
    title, _ = _read("# Notes on C#" + " " * _MILLION + "x#\n")
    assert title == "Notes on C# x#"


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("# Release notes #", "Release notes"),
        ("# Release notes ###   ", "Release notes"),
        ("# Notes on C#", "Notes on C#"),
        ("   #\tTabbed", "Tabbed"),
        ("# #", None),
        ("#NoBlank", None),
        ("    # Indented code", None),
    ],
)
def test_a_level_one_heading_gives_the_title_without_its_closing_marks(line: str, title: str | None) -> None:
    assert _read(f"{line}\n\nBody.")[0] == title


def test_a_front_matter_title_with_a_million_blanks_inside_is_read_whole() -> None:
    gap = " " * _MILLION
    title, text = _read(f"---\ntitle: Trip{gap}to Rome{gap}\ntags: [travel]\n---\n\nWe saw the Forum.\n")
    assert title == "Trip to Rome"
    assert text == "We saw the Forum."


def test_a_heading_in_a_fence_whose_closing_line_goes_on_is_still_code() -> None:
    """A fence closes only on a line holding nothing but its marks, as in the comment scan."""
    text = "```\n# not the title\n``` still code\n# nor this\n```\n\n# Title\n"
    assert _read(text)[0] == "Title"


# --- the comment scan: each token once --------------------------------------------------------------


def test_a_million_backticks_before_a_comment_are_each_visited_once(counted: CountingPattern) -> None:
    text = "` " * _MILLION + "end <!-- note --> here"
    assert _read(text)[1] == ("` " * _MILLION + "end  here").strip()
    assert counted.tokens == _MILLION + 1


def test_tokens_inside_a_comment_are_not_visited(counted: CountingPattern) -> None:
    """The scan goes on after a comment's end: a comment full of backticks, fences and openers costs
    one search for its end."""
    inside = "` ```\n<!-- ~~~\n\n" * 100_000
    assert _read(f"Before\n<!--{inside}--> after <!-- last -->.")[1] == "Before\n after ."
    assert counted.tokens == 2


@pytest.mark.parametrize(
    "hostile",
    [
        "<!--" * 3 * _MILLION,
        "<!-- x " * _MILLION,
        "<!-" * 3 * _MILLION + "<!--",
        "<!--" + "-" * 12 * _MILLION,
    ],
    ids=["openers", "openers-with-words", "almost-openers", "dashes"],
)
def test_comment_openers_that_nothing_closes_are_text_after_one_search(hostile: str, counted: CountingPattern) -> None:
    assert _read(hostile)[1] == hostile.strip()
    assert counted.tokens == 1


def test_a_fence_of_a_million_lines_is_read_line_by_line_once(counted: CountingPattern) -> None:
    text = "```\n" * _MILLION + "<!-- hidden -->shown"
    assert _read(text)[1] == ("```\n" * _MILLION).strip() + "\nshown"
    assert counted.tokens == _MILLION + 1


@pytest.mark.parametrize(
    "hostile",
    ["*" * 12 * _MILLION, "_" * 12 * _MILLION, "[" * 6 * _MILLION + "]" * 6 * _MILLION, "![](" * 3 * _MILLION],
    ids=["stars", "underscores", "brackets", "images"],
)
def test_long_runs_of_emphasis_and_link_marks_are_read_as_written(hostile: str) -> None:
    """Emphasis and links are not parsed at all: their marks are text, read as such."""
    assert _read(hostile + "<!-- x -->\n# Heading")[1] == hostile + "\n# Heading"
