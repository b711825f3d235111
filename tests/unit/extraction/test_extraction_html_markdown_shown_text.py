"""HTML and Markdown text is what a browser or a Markdown viewer shows (P-GEN-02, K-DOC-06,
KB-GEN-01): elements styled ``display: none`` (an e-mail's hidden preheader, a closed dialog saved
with the page) and Markdown's HTML comments (notes to the file's editors) are not extracted; the
same words shown as code are.
"""

from __future__ import annotations

import pytest

from notochord.extraction.text import extract_text


def _html(page: str) -> str:
    return extract_text(page.encode(), filename="page.html").text


def _markdown(text: str) -> str:
    return extract_text(text.encode(), filename="notes.md").text


# --- HTML ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "style",
    [
        "display:none",
        "display: none",
        "color: red; DISPLAY : None !important",
        "mso-hide:all;display:none;max-height:0",
    ],
)
def test_html_elements_styled_display_none_are_not_extracted(style: str) -> None:
    """A saved e-mail hides its preheader ("View this e-mail in your browser…") with an inline
    ``display: none``; a browser shows nothing of it or of what it holds."""
    page = f'<body><div style="{style}">Preheader teaser <p>and a paragraph</p></div><p>Dear Ana,</p></body>'
    assert _html(page) == "Dear Ana,"


def test_display_none_inside_a_heading_is_not_extracted_and_other_styles_are() -> None:
    page = (
        '<h1>Report<span style="display:none"> draft 3</span></h1>'
        '<p style="display: block; visibility: visible">Shown</p><p style="font-display: none-ish">Also shown</p>'
    )
    assert _html(page) == "# Report\n\nShown\n\nAlso shown"


# --- Markdown --------------------------------------------------------------------------------------


def test_markdown_html_comments_are_not_extracted() -> None:
    """A Markdown viewer shows nothing of an HTML comment, on its own lines or within a line."""
    text = (
        "# Release notes\n\n<!-- TODO: ask legal before publishing -->\n\n"
        "Version 2 is out<!-- (finally) -->.\n\n<!--\nOld section:\nVersion 1 notes\n-->\nThanks."
    )
    assert _markdown(text) == "# Release notes\n\nVersion 2 is out.\n\nThanks."


def test_comments_shown_as_code_in_markdown_are_extracted() -> None:
    text = "Write `<!-- note -->` to hide a note.\n\n```html\n<!-- kept in the block -->\n```\n\n~~~\n<!-- too -->\n~~~"
    assert _markdown(text) == text


def test_an_unclosed_markdown_comment_opener_is_text() -> None:
    """``<!--`` without a closing ``-->`` is no comment: it and what follows are shown."""
    text = "Open one: <!-- and never close it.\n\nStill here."
    assert _markdown(text) == text


def test_a_commented_out_heading_is_not_the_markdown_title() -> None:
    text = "<!--\n# Draft title\n-->\n# Final title\n\nBody"
    document = extract_text(text.encode(), filename="notes.md")
    assert document.title == "Final title"
    assert document.text == "# Final title\n\nBody"


# --- HTML images ------------------------------------------------------------------------------------


def test_an_html_image_s_alternative_text_is_read_where_the_image_stands() -> None:
    """What a screen reader reads for an image, as for a DOCX picture: a chart's description is
    found by the words it uses."""
    page = (
        "<body><p>Revenue grew.</p>"
        '<p><img src="q3.png" alt="Bar chart: revenue per quarter, Q3 highest"> Source: finance.</p></body>'
    )
    assert _html(page) == "Revenue grew.\n\nBar chart: revenue per quarter, Q3 highest Source: finance."


@pytest.mark.parametrize(
    "image",
    [
        '<img src="a.png" alt="">',
        '<img src="a.png">',
        '<img src="a.png" alt="IMG_2041.JPG">',
        '<img src="a.png" alt="image 3">',
        '<img src="a.png" alt="A spacer" role="presentation">',
        '<img src="a.png" alt="A spacer" aria-hidden="true">',
    ],
    ids=["empty", "none", "file-name", "generic", "presentation", "aria-hidden"],
)
def test_an_html_image_whose_alternative_text_says_nothing_adds_nothing(image: str) -> None:
    """An empty ``alt`` marks a decorative image; a file name or "image 3" is a tool's default, and
    an image hidden from assistive technology is read by none."""
    assert _html(f"<body><p>Before {image} after.</p></body>") == "Before after."
