"""Which parts of parsed HTML a browser shows, for :mod:`notochord.extraction.text`.

Only what a page says of itself counts: its ``hidden``, ``popover`` and ``aria-hidden`` attributes,
a ``dialog``'s ``open``, its inline ``style`` declarations and its own ``<style>`` sheets. Sheets a
page links (``<link rel=stylesheet>``, ``@import``) are never fetched, by design (extraction is a
pure function of the file's bytes and never reaches the network): what they would hide is kept,
and the page is read as without them. Scripts are not run; ``<style>`` inside ``template``, ``noscript``,
``iframe``, ``textarea``, ``title``, ``xmp``, ``noembed`` and ``noframes`` styles nothing, and one
whose ``type`` is not CSS is not read. Which styles an element gets, and which of their values
hide it, is decided by :mod:`notochord.extraction.style_cascade` (which rules of a sheet are
applied: :mod:`notochord.extraction.css_rules`; whether class and id selectors match in any case:
:mod:`notochord.extraction.document_mode`). Hidden, and left out of the text:

- an element whose ``display`` is ``none``, or that has a ``hidden`` or ``popover`` attribute or is
  a ``dialog`` without ``open`` and has no ``display`` (``hidden="until-found"`` content is shown
  when the page's search finds it, so it is meant to be found and is kept), or whose ``opacity`` is
  zero, or whose contents ``content-visibility: hidden`` skips (not on inline text, where it does
  nothing): it and all it holds, which nothing inside can show again;
- text and images whose ``visibility`` is ``hidden`` or ``collapse`` (inherited: a descendant
  styled ``visible`` shows again);
- text whose ``font-size`` is zero (inherited: a descendant given an absolute size shows again);
- the alternative text of an image inside ``aria-hidden="true"``, which only a screen reader would
  read and none does; the words beside it are on the page and stay.

Kept: text clipped to nothing (``clip-path: inset(50%)``, ``clip: rect(0 0 0 0)``) and text moved
out of view. That is how pages write text for screen readers only ("Skip to content", "opens in a
new tab", a chart's data), which is meant to be read, and its CSS cannot be told apart from the same
CSS used to hide other text; so it is read. Near-zero values (``opacity: 0.01``, ``font-size:
0.1px``) and text coloured like its background are not told apart either, and are kept.

A page whose sheets go beyond the bounds of :mod:`notochord.extraction.css_rules` or
:mod:`notochord.extraction.style_cascade` is read by its attributes and inline styles alone.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from notochord.extraction.css_rules import SheetsBeyondBoundsError, style_rules
from notochord.extraction.style_cascade import Cascade, CascadeBeyondBoundsError, Shown

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from bs4 import BeautifulSoup
    from bs4.element import NavigableString, PageElement, Tag

__all__ = ["drop_unshown", "page_style_sheets", "shown_string_types", "take_out"]

_ARIA_HIDDEN: Final = re.compile(r"^\s*true\s*$", re.IGNORECASE)
# elements whose content a browser renders as no part of the page, style sheets included
_INERT: Final = frozenset({"template", "noscript", "iframe", "textarea", "title", "xmp", "noembed", "noframes"})
_SCREEN_MEDIA: Final = frozenset({"", "all", "screen"})
_TOP: Final = Shown(removed=False, visible=True, font_zero=False)


def shown_string_types() -> tuple[type[NavigableString], ...]:
    """The kinds of the parser's strings a browser shows as text: plain text and a ruby annotation
    (``rt``), not its fallback parentheses (``rp``, shown only where ruby is not supported), nor
    comments, doctypes, processing instructions or CDATA sections (in HTML a comment)."""
    from bs4.element import NavigableString, RubyTextString

    return (NavigableString, RubyTextString)


def _aria_hidden(tag: Tag) -> bool:
    return _ARIA_HIDDEN.match(str(tag.get("aria-hidden") or "")) is not None


def page_style_sheets(soup: BeautifulSoup) -> list[tuple[str, bool]]:
    """The text of each ``<style>`` sheet of the page in its order, and whether it applies only
    under a condition (a ``media`` attribute other than ``all`` or ``screen``).

    Read before the parts of the page that are not text (its ``head``, inline ``svg``) are dropped,
    as their sheets style the whole page; with a stack of its own, one visit of each element."""
    from bs4.element import NavigableString, Tag

    sheets: list[tuple[str, bool]] = []
    stack: list[Iterator[PageElement]] = [iter(soup.children)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        elif isinstance(child, Tag) and child.name == "style":
            kind = str(child.get("type") or "").strip().lower()
            if kind in ("", "text/css"):
                text = "".join(str(part) for part in child.contents if isinstance(part, NavigableString))
                media = str(child.get("media") or "").strip().lower()
                sheets.append((text, media not in _SCREEN_MEDIA))
        elif isinstance(child, Tag) and child.name not in _INERT:
            stack.append(iter(child.children))
    return sheets


def drop_unshown(soup: BeautifulSoup, sheets: Sequence[tuple[str, bool]] = (), *, quirks: bool | None = None) -> None:
    """Take out of ``soup`` what a browser shows nothing of, by the page's attributes, inline styles
    and ``sheets`` (from :func:`page_style_sheets`), and the alternative text no one reads.

    ``quirks`` says whether the page is rendered in quirks mode, None when that is not known
    (:func:`notochord.extraction.document_mode.quirks_mode`, asked before anything is taken out)."""
    try:
        unshown = _unshown(soup, Cascade(style_rules(sheets), quirks=quirks))
    except (SheetsBeyondBoundsError, CascadeBeyondBoundsError):
        unshown = _unshown(soup, Cascade([]))
    take_out(unshown)


def take_out(nodes: Iterable[PageElement]) -> None:
    """Take ``nodes`` out of their tree.

    A node's own ``extract`` first looks itself up in its parent's list of children and deletes it
    there, each a pass over all its siblings: a million hidden siblings would cost a million
    million steps. Here each node is unlinked from its neighbours alone, and each parent's list is
    filtered once.
    """
    parents: dict[int, Tag] = {}
    gone: set[int] = set()
    for node in nodes:
        parent = node.parent
        if parent is not None:
            parents[id(parent)] = parent
        gone.add(id(node))
        node.parent = None  # so extract leaves the parent's children to the pass below
        node.extract()
    for parent in parents.values():
        parent.contents = [child for child in parent.contents if id(child) not in gone]


def _unshown(soup: BeautifulSoup, cascade: Cascade) -> list[PageElement]:
    """What to take out: elements nothing of which shows, invisible text, and images not shown or
    read. Changes nothing, so a walk given up midway leaves the page as it was.

    With a stack of its own, not recursion, and one visit of each node: pages nest thousands deep.
    """
    from bs4.element import NavigableString, Tag

    text_types = shown_string_types()
    root = soup.find("html", recursive=False)
    root_font_zero = isinstance(root, Tag) and cascade.shown(root, _TOP, False).font_zero
    unshown: list[PageElement] = []
    # each level: the children still to visit, what the parent's styles leave, and whether they are read aloud
    stack: list[tuple[Iterator[PageElement], Shown, bool]] = [(iter(soup.children), _TOP, True)]
    while stack:
        children, parent, read = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        if isinstance(child, Tag):
            shown = cascade.shown(child, parent, root_font_zero)
            aloud = read and not _aria_hidden(child)
            if shown.removed or (child.name == "img" and not (shown.visible and aloud)):
                unshown.append(child)
            else:
                stack.append((iter(child.children), shown, aloud))
        elif (
            (not parent.visible or parent.font_zero)
            and isinstance(child, NavigableString)
            and type(child) in text_types
            and not child.isspace()
        ):
            # white space stays: it keeps the words on either side apart, as hidden text's room does
            unshown.append(child)
    return unshown
