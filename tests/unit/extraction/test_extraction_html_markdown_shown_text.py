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


# --- HTML visibility, hidden and aria-hidden ---------------------------------------------------------


@pytest.mark.parametrize(
    "style",
    ["visibility:hidden", "visibility: collapse", "color: red; VISIBILITY : Hidden !important"],
)
def test_html_elements_styled_visibility_hidden_are_not_extracted(style: str) -> None:
    """A browser keeps the room of an element styled ``visibility: hidden`` but shows none of its
    words or images (a form's honeypot, a tooltip not opened)."""
    page = (
        f'<body><div style="{style}">Leave this field empty <img src="t.png" alt="Trap icon">'
        "<p>and this paragraph</p></div><p>Dear Ana,</p></body>"
    )
    assert _html(page) == "Dear Ana,"


def test_visibility_visible_inside_a_hidden_element_shows_again() -> None:
    page = (
        '<body><div style="visibility:hidden">Hidden words <span style="visibility: visible">Shown again'
        ' <img src="c.png" alt="Pie chart of costs"></span> hidden too'
        '<p style="visibility:inherit">Inherits hidden</p></div><p>After</p></body>'
    )
    assert _html(page) == "Shown again Pie chart of costs\n\nAfter"


def test_visibility_hidden_inside_a_heading_or_preformatted_block_is_not_extracted() -> None:
    page = (
        '<h1>Report<span style="visibility:hidden"> draft 3</span></h1>'
        '<pre>kept\n<span style="visibility:hidden">secret</span></pre>'
    )
    assert _html(page) == "# Report\n\nkept"


def test_the_last_visibility_declaration_wins_and_an_important_one_over_the_others() -> None:
    page = (
        '<p style="visibility:hidden; visibility:visible">Shown, declared visible last</p>'
        '<p style="visibility:hidden !important; visibility:visible">Hidden, important</p>'
        '<p style="display:none; display:block">Shown, displayed last</p>'
    )
    assert _html(page) == "Shown, declared visible last\n\nShown, displayed last"


def test_a_hidden_attribute_hides_unless_an_inline_display_shows_it_and_until_found_is_found() -> None:
    """``hidden`` is the browser's own ``display: none``, which a page's style overrides; content
    hidden "until found" opens when the page's search finds it, so it is meant to be found."""
    page = (
        "<body><p hidden>Draft paragraph</p>"
        '<p hidden style="display:block">Shown by its style</p>'
        '<details><summary>FAQ</summary><div hidden="until-found">The answer is 42</div></details>'
        "</body>"
    )
    assert _html(page) == "Shown by its style\n\nFAQ\n\nThe answer is 42"


def test_aria_hidden_text_is_shown_but_the_alternative_text_of_images_inside_it_is_not() -> None:
    """``aria-hidden`` hides from screen readers only: its words are on the page, and alternative
    text, which only a screen reader would read, is left out."""
    page = (
        '<body><p aria-hidden="TRUE">Decorative quote <img src="q.png" alt="Quotation marks"></p>'
        '<p aria-hidden="false"><img src="m.png" alt="Map of the site"></p></body>'
    )
    assert _html(page) == "Decorative quote\n\nMap of the site"


def test_visibility_hidden_ten_thousand_elements_deep_is_read_without_recursion() -> None:
    """Ten times Python's recursion limit: a walk that recursed per element would fail here."""
    depth = 10_000
    page = '<div style="visibility:hidden">' + "<span>x" * depth + '<b style="visibility:visible">deep</b>'
    assert _html(page) == "deep"
