"""A backtick in Markdown opens code only where CommonMark says it does (P-GEN-02, K-DOC-06,
KB-GEN-01): a run of backticks that no run of the same length closes in its paragraph is text, and a
fence opens a code block wherever it stands. So an unclosed backtick ("press ` to open the console")
neither keeps an editor's hidden comment in the text nor makes a code block's ``<!--`` swallow the
rest of the file; and deciding it costs one forward search, however many runs stay unclosed.
"""

from __future__ import annotations

import pytest
from counted_pattern import CountingPattern

from notochord.extraction import markdown
from notochord.extraction.text import extract_text


def _markdown(text: str) -> str:
    return extract_text(text.encode(), filename="notes.md").text


def test_an_unclosed_backtick_before_a_code_block_leaves_the_block_and_the_rest_whole() -> None:
    """The fence opens a code block even though a backtick above it was never closed; the block's
    own ``<!--`` is code, and the text after it is kept."""
    text = (
        "Press ` to open the console.\n```js\nconst s = `<!-- template`;\n```\n"
        "More text.\n\nA note <!-- for editors --> here."
    )
    assert _markdown(text) == (
        "Press ` to open the console.\n```js\nconst s = `<!-- template`;\n```\nMore text.\n\nA note  here."
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("It costs 5` <!-- internal: raise it --> more.", "It costs 5`  more."),
        ("Ticks `` and ` <!-- hidden --> stay.", "Ticks `` and `  stay."),
        ("One ` here\n\nand <!-- hidden --> there `", "One ` here\n\nand  there `"),
        ("``` not a fence ` here\n<!-- hidden -->\ntext", "``` not a fence ` here\n\ntext"),
    ],
    ids=["unclosed", "no-run-of-the-same-length", "closer-past-a-blank-line", "backtick-in-info-string"],
)
def test_a_comment_after_an_unclosed_backtick_run_is_still_left_out(text: str, shown: str) -> None:
    """A run of backticks that nothing of its length closes in its paragraph is text, so the comment
    after it is a comment, which a viewer never shows."""
    assert _markdown(text) == shown


@pytest.mark.parametrize(
    "text",
    ["Code ` <!-- x --> ` kept", "Ticks `` one ` <!-- x --> ` two", "Wide `` a <!-- x --> `` b", "` <!-- ` -->"],
)
def test_a_comment_inside_a_closed_code_span_is_shown_as_written(text: str) -> None:
    assert _markdown(text) == text


@pytest.mark.parametrize(
    ("runs", "count"),
    [("`" + " x``" * 500_000, 500_001), ("".join("`" * n + " " for n in range(1, 1_500)), 1_499)],
    ids=["one-unclosed-before-half-a-million-pairs", "fifteen-hundred-unclosed-lengths"],
)
def test_the_search_for_closing_runs_visits_each_run_at_most_once(
    runs: str, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each unclosed run would send a naive search to the paragraph's end: a million of them, a
    million million steps. The search goes forward only and remembers what it passed."""
    counting = CountingPattern(markdown._AHEAD)
    monkeypatch.setattr(markdown, "_AHEAD", counting)
    text = runs + " <!-- editors only --> end"
    assert _markdown(text) == runs + "  end"
    assert counting.tokens <= count
