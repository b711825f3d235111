"""What the cascade of a page's styles does to one element's visibility, for
:mod:`notochord.extraction.html_shown`.

Five properties are resolved: ``display``, ``content-visibility``, ``visibility`` (inherited),
``opacity`` and ``font-size`` (inherited). Their declarations rank as a browser ranks them: an
inline ``!important`` one over a sheet's ``!important`` one, over an animation, over an inline one,
over a sheet's; among a sheet's, by specificity, then the later one. Of the sheets' rules
(:mod:`notochord.extraction.css_rules`) a certain rule applies where it matches as the page's mode
compares (:mod:`notochord.extraction.document_mode`: class and id selectors in any case in quirks
mode, exactly in the other modes; attribute values exactly). A rule that matches only when
attribute values, or classes and ids where the mode is not known, are compared in any case, or any
doubtful rule that may match, is taken to show: where such a rule could outrank the declaration
that hides, the element is not hidden. A value not understood never hides.

An element is hidden by the value that wins:

- ``display: none``, or no ``display`` at all and what a browser's own sheet hides: an element
  with a ``hidden`` attribute (other than ``until-found``, whose content the page's search finds
  and opens) or a ``popover`` attribute (shown only when a script or a button opens it), and a
  ``dialog`` without ``open``;
- ``content-visibility: hidden``, which skips all an element holds, where it applies: on an
  element laid out as a block, a flex or grid container, a list item or an inline block, not on
  inline text (a ``span``), a table or its parts, and not where a rule that may apply could change
  the element's ``display``;
- ``opacity`` of 0 or less (``0``, ``0.0``, ``0%``, ``-1``); not inherited, but nothing inside an
  element without opacity can show;
- ``visibility: hidden`` or ``collapse``, inherited: a descendant with ``visibility: visible``
  shows again;
- a ``font-size`` of zero (``0``, ``0px``, ``0%``, …), inherited: a descendant given an absolute
  size (``12px``, ``medium``, ``1rem`` unless the root's size is zero) shows again, one given a
  relative size (``1em``, ``100%``, ``smaller``) stays zero.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Final, NamedTuple

from notochord.extraction.css_rules import ANY_ELEMENT, Rule, shown_declarations
from notochord.extraction.css_syntax import declaration_list

if TYPE_CHECKING:
    from bs4.element import Tag

    from notochord.extraction.css_rules import Compound

__all__ = ["MATCH_STEPS", "MATCH_STEPS_PER_ELEMENT", "Cascade", "CascadeBeyondBoundsError", "Shown"]

# Each rule is filed under one thing its selector needs (an id, a class, an attribute name, a
# type), so an element meets only the rules filed under what it has; but a hostile page can give a
# million elements one class that thousands of rules need, or one rule thousands of classes. The
# work of matching is counted over the whole page (a rule checked against an element costs one step
# for itself, one for each part of its selector and one for each of its declarations), and may be
# at most a fixed amount plus a few steps for each element: linear in the page's size. Past that
# the sheets are not applied at all.
MATCH_STEPS: Final = 250_000
MATCH_STEPS_PER_ELEMENT: Final = 32

_SHEET, _INLINE, _ANIMATION, _SHEET_IMPORTANT, _INLINE_IMPORTANT = range(5)
_NO_SPECIFICITY: Final = (0, 0, 0)
_INHERITING: Final = frozenset({"inherit", "unset", "revert", "revert-layer"})
_INVISIBLE: Final = frozenset({"hidden", "collapse"})
# the layouts ``content-visibility`` applies to (an element's own box that size containment can
# apply to), and the elements a browser lays out so by its own sheet
_CONTAINABLE_DISPLAYS: Final = frozenset(
    {"block", "flow-root", "flex", "grid", "inline-block", "inline-flex", "inline-grid", "list-item"}
)
_BLOCKS_BY_DEFAULT: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "center", "dd", "details", "dialog", "dir",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4",
        "h5", "h6", "header", "hgroup", "hr", "html", "legend", "li", "listing", "main", "menu", "nav",
        "ol", "p", "plaintext", "pre", "search", "section", "summary", "ul", "xmp",
    }
)  # fmt: skip
# possessive: a value of a million digits is read once, not once for each place it could split
_FIGURES: Final = r"[+-]?+(?:\d++(?:\.\d*+)?+|\.\d++)(?:e[+-]?\d++)?+"
_NUMBER: Final = re.compile(rf"({_FIGURES})(%?)")
_LENGTH: Final = re.compile(rf"({_FIGURES})([a-z]*+|%)")
_RELATIVE_UNITS: Final = frozenset({"em", "ex", "ch", "cap", "ic", "%"})
_ROOT_UNITS: Final = frozenset({"rem", "rex", "rch", "rcap", "ric"})
_OTHER_UNITS: Final = frozenset(
    {
        "px", "pt", "pc", "in", "cm", "mm", "q", "lh", "rlh", "vw", "vh", "vi", "vb", "vmin", "vmax",
        "svw", "svh", "svi", "svb", "svmin", "svmax", "lvw", "lvh", "lvi", "lvb", "lvmin", "lvmax",
        "dvw", "dvh", "dvi", "dvb", "dvmin", "dvmax", "cqw", "cqh", "cqi", "cqb", "cqmin", "cqmax",
    }
)  # fmt: skip

# Ranks: (level, specificity, order)
_Rank = tuple[int, tuple[int, int, int], int]


class CascadeBeyondBoundsError(Exception):
    """Matching the sheets' rules against the page took more steps than it may."""


class Shown(NamedTuple):
    """What an element's styles leave of it: ``removed`` when nothing of it or inside it shows,
    whether its text is ``visible``, and whether its text has a zero ``font_zero`` size."""

    removed: bool
    visible: bool
    font_zero: bool


def _opacity_zero(value: str) -> bool:
    match = _NUMBER.fullmatch(value)
    return match is not None and float(match[1]) <= 0  # below 0 is clamped to 0


def _font_size_zero(value: str, parent_zero: bool, root_zero: bool) -> bool:
    if value in _INHERITING or value == "smaller":
        return parent_zero
    match = _LENGTH.fullmatch(value)
    if match is None:
        return False  # a keyword (``medium``, ``initial``) or a value not understood
    number, unit = float(match[1]), match[2]
    if number < 0 or (not unit and number != 0):
        return False  # no valid size
    if unit and unit not in _RELATIVE_UNITS and unit not in _ROOT_UNITS and unit not in _OTHER_UNITS:
        return False
    if number == 0:
        return True
    if unit in _RELATIVE_UNITS:
        return parent_zero
    return unit in _ROOT_UNITS and root_zero


class _Element:
    """An element's id, classes and attributes, in their own case and folded."""

    def __init__(self, tag: Tag, quirks: bool | None) -> None:
        self._quirks = quirks
        self.name = tag.name
        self.attributes = tag.attrs
        ident = tag.attrs.get("id")
        self.id = ident if isinstance(ident, str) else None
        classes = tag.attrs.get("class")
        self.classes = frozenset(classes if isinstance(classes, list) else str(classes or "").split())
        self._folded_classes: frozenset[str] | None = None
        self._folded_values: dict[str, str] = {}

    @property
    def folded_classes(self) -> frozenset[str]:
        if self._folded_classes is None:
            self._folded_classes = frozenset(each.lower() for each in self.classes)
        return self._folded_classes

    def _folded(self, name: str, value: str) -> str:
        folded = self._folded_values.get(name)
        if folded is None:
            folded = self._folded_values[name] = value.lower()
        return folded

    def filing_keys(self) -> set[str]:
        keys = {"*", "t" + self.name}
        keys.update("." + each for each in self.folded_classes)
        keys.update("[" + name for name in self.attributes)
        if self.id is not None:
            keys.add("#" + self.id.lower())
        return keys

    def matches(self, compound: Compound, exact: bool) -> bool:
        """Whether the element matches ``compound``: ``exact``, as the page's mode compares classes
        and ids and with attribute values in their own case; else as it may compare them, and
        attribute values in any case (HTML compares some so)."""
        fold_names = self._quirks is True if exact else self._quirks is not False
        fold_values = not exact
        if compound.tag is not None and compound.tag != self.name:
            return False
        for ident in compound.ids:
            if self.id is None or (self.id.lower() != ident.lower() if fold_names else self.id != ident):
                return False
        for each in compound.classes:
            if each.lower() not in self.folded_classes if fold_names else each not in self.classes:
                return False
        for name, value in compound.attributes:
            given = self.attributes.get(name)
            if given is None:
                return False
            if value is None:
                continue
            if isinstance(given, list):  # a list of tokens keeps no record of the spaces between them
                if not fold_values:
                    return False
                given = " ".join(given)
            if self._folded(name, given) != value.lower() if fold_values else given != value:
                return False
        return True


def _hidden_by_default(tag: Tag) -> bool:
    """Whether a browser's own sheet gives ``tag`` ``display: none`` (of the elements left after
    those never shown are dropped)."""
    hidden = tag.get("hidden")
    if hidden is not None and str(hidden).strip().lower() != "until-found":
        return True
    if tag.name == "dialog":
        return tag.get("open") is None
    return tag.get("popover") is not None


def _key(compound: Compound) -> str:
    if compound.ids:
        return "#" + compound.ids[0].lower()
    if compound.classes:
        return "." + compound.classes[0].lower()
    if compound.attributes:
        return "[" + compound.attributes[0][0]
    return "*" if compound.tag is None else "t" + compound.tag


class Cascade:
    """The page's rules, filed for matching, and the count of checks made so far."""

    def __init__(self, rules: list[Rule], *, quirks: bool | None = None) -> None:
        """``quirks``: whether the page is in quirks mode (:mod:`notochord.extraction.document_mode`),
        where class and id selectors match in any case; None when that is not known."""
        self._quirks = quirks
        self._filed: defaultdict[str, list[tuple[Rule, int]]] = defaultdict(list)
        # doubtful rules that may match anything (keyframes, nested rules, ``:hover``) are met by
        # every element: only their distinct declarations are kept, in one rule each for animations
        # and for the others
        anywhere: dict[tuple[bool, str, str, bool], None] = {}
        for rule in rules:
            subject = rule.subject
            if not rule.certain and rule.specificity is None and subject == ANY_ELEMENT:
                for name, value, important, _ in rule.declarations:
                    anywhere[rule.animation, name, value, important] = None
                continue
            cost = 1 + len(subject.ids) + len(subject.classes) + len(subject.attributes) + len(rule.declarations)
            self._filed[_key(subject)].append((rule, cost))
        for animation in (False, True):
            merged = tuple(
                (name, value, important, 0) for kind, name, value, important in anywhere if kind == animation
            )
            if merged:
                self._filed["*"].append((Rule(ANY_ELEMENT, None, False, animation, merged), 1 + len(merged)))
        self._steps_left = MATCH_STEPS

    def _declarations(
        self, tag: Tag
    ) -> tuple[dict[str, tuple[_Rank, str]], defaultdict[str, list[tuple[int, tuple[int, int, int] | None, int, str]]]]:
        """The winning certain declaration of each property, and every doubtful one."""
        winners: dict[str, tuple[_Rank, str]] = {}
        doubtful: defaultdict[str, list[tuple[int, tuple[int, int, int] | None, int, str]]] = defaultdict(list)
        style = tag.get("style")
        if isinstance(style, str) and ":" in style:
            declarations, _ = declaration_list(style)
            for order, (name, value, important) in enumerate(shown_declarations(declarations)):
                rank = (_INLINE_IMPORTANT if important else _INLINE, _NO_SPECIFICITY, order)
                if name not in winners or rank > winners[name][0]:
                    winners[name] = (rank, value)
        if not self._filed:
            return winners, doubtful
        self._steps_left += MATCH_STEPS_PER_ELEMENT
        element = _Element(tag, self._quirks)
        for key in element.filing_keys():
            for rule, cost in self._filed.get(key, ()):
                self._steps_left -= cost
                if self._steps_left < 0:
                    raise CascadeBeyondBoundsError
                certain = rule.certain and element.matches(rule.subject, exact=True)
                if not certain and not element.matches(rule.subject, exact=False):
                    continue
                for name, value, important, order in rule.declarations:
                    level = _ANIMATION if rule.animation else _SHEET_IMPORTANT if important else _SHEET
                    if certain and rule.specificity is not None:
                        rank = (level, rule.specificity, order)
                        if name not in winners or rank > winners[name][0]:
                            winners[name] = (rank, value)
                    else:
                        doubtful[name].append((level, rule.specificity, order, value))
        return winners, doubtful

    def shown(self, tag: Tag, parent: Shown, root_font_zero: bool) -> Shown:
        """What the styles leave of ``tag``, inside a parent of which ``parent`` is left."""
        winners, doubtful = self._declarations(tag)
        if not winners and not doubtful:
            return Shown(_hidden_by_default(tag), parent.visible, parent.font_zero)

        def contained() -> bool:
            """Whether ``content-visibility`` applies to the element's box, as far as is known."""
            if doubtful.get("display"):
                return False
            winner = winners.get("display")
            if winner is None:
                return tag.name in _BLOCKS_BY_DEFAULT
            return winner[1] in _CONTAINABLE_DISPLAYS

        def hides(name: str, value: str | None) -> bool:
            if name == "display":
                if value is None or value in ("revert", "revert-layer"):
                    return _hidden_by_default(tag)
                return value == "none"
            if name == "content-visibility":
                return value == "hidden" and contained()
            if name == "visibility":
                if value is None or value in _INHERITING:
                    return not parent.visible
                return value in _INVISIBLE
            if name == "opacity":
                return value is not None and _opacity_zero(value)
            if value is None:
                return parent.font_zero
            return _font_size_zero(value, parent.font_zero, root_font_zero)

        def hidden(name: str) -> bool:
            winner = winners.get(name)
            if not hides(name, None if winner is None else winner[1]):
                return False
            for level, specificity, order, value in doubtful.get(name, ()):
                if winner is not None:
                    (top_level, top_specificity, top_order), _ = winner
                    if level < top_level or (
                        level == top_level
                        and specificity is not None
                        and (specificity, order) <= (top_specificity, top_order)
                    ):
                        continue  # cannot outrank the declaration that hides
                if not hides(name, value):
                    return False
            return True

        return Shown(
            removed=hidden("display") or hidden("opacity") or hidden("content-visibility"),
            visible=not hidden("visibility"),
            font_zero=hidden("font-size"),
        )
