"""Which parts of parsed HTML a browser shows, for :mod:`notochord.extraction.text`.

Only what a page says of itself counts: the ``hidden`` attribute, ``aria-hidden`` and inline
``style`` declarations (style sheets are not applied). Of an inline style, the last declaration of
a property wins, and one marked ``!important`` wins over those that are not.

- ``display: none`` hides an element and all it holds; nothing inside can show again.
- The ``hidden`` attribute is the browser's own ``display: none``: an inline ``display`` of
  another value shows the element after all. ``hidden="until-found"`` content is shown when the
  page's search finds it, so it is meant to be found and is kept.
- ``visibility: hidden`` (or ``collapse``) hides an element's text and images but is inherited,
  not final: a descendant styled ``visibility: visible`` shows again.
- ``aria-hidden="true"`` hides nothing from the eye, so its text stays; an image inside it is read
  by no screen reader, and its alternative text, which is only ever read, is left out.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from notochord.extraction.inline_style import declared_style

if TYPE_CHECKING:
    from collections.abc import Iterator

    from bs4 import BeautifulSoup
    from bs4.element import PageElement, Tag

__all__ = ["drop_unshown"]

# values of ``visibility`` that take the parent's: the property is inherited
_INHERITED: Final = frozenset({"inherit", "unset", "revert", "revert-layer"})
_INVISIBLE: Final = frozenset({"hidden", "collapse"})
# cheap tests of whether a page needs the walk at all
_MENTIONS_VISIBILITY: Final = re.compile("visibility", re.IGNORECASE)
_ARIA_HIDDEN: Final = re.compile(r"^\s*true\s*$", re.IGNORECASE)


def _style(tag: Tag) -> str:
    style = tag.get("style")
    return style if isinstance(style, str) else ""


def _displayed_none(tag: Tag) -> bool:
    display = declared_style(_style(tag), "display")
    if display is not None:
        return display == "none"
    hidden = tag.get("hidden")
    return hidden is not None and str(hidden).strip().lower() != "until-found"


def _aria_hidden(tag: Tag) -> bool:
    return _ARIA_HIDDEN.match(str(tag.get("aria-hidden") or "")) is not None


def drop_unshown(soup: BeautifulSoup) -> None:
    """Take out of ``soup`` what a browser shows nothing of, and the alternative text no one reads."""
    for element in soup.find_all(_displayed_none):
        element.decompose()
    if soup.find(style=_MENTIONS_VISIBILITY) is None and soup.find(_aria_hidden) is None:
        return
    _drop_invisible(soup)


def _drop_invisible(soup: BeautifulSoup) -> None:
    """Take out the text and images that ``visibility`` hides, and the images inside ``aria-hidden``.

    With a stack of its own, not recursion, and one visit of each node: pages nest thousands deep.
    """
    from bs4.element import NavigableString, Tag

    unshown: list[PageElement] = []
    # each level: the children still to visit, whether they are visible, and whether they are read aloud
    stack: list[tuple[Iterator[PageElement], bool, bool]] = [(iter(soup.children), True, True)]
    while stack:
        children, visible, read = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        if isinstance(child, Tag):
            visibility = declared_style(_style(child), "visibility")
            shown = visible if visibility is None or visibility in _INHERITED else visibility not in _INVISIBLE
            aloud = read and not _aria_hidden(child)
            if child.name == "img" and not (shown and aloud):
                unshown.append(child)
            else:
                stack.append((iter(child.children), shown, aloud))
        elif not visible and type(child) is NavigableString:
            unshown.append(child)
    for node in unshown:
        node.extract()
