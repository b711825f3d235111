"""The rules of a page's own ``<style>`` sheets that bear on what it shows, for
:mod:`notochord.extraction.style_cascade`.

Only the declarations of ``display``, ``content-visibility``, ``visibility``, ``opacity`` and
``font-size`` are kept (the ``font`` shorthand counts as ``font-size``, ``all`` as each of them).

A rule is *certain* when its selector is one the cascade matches exactly: a type (``p``), ``*``, a
class (``.x``), an id (``#x``), an attribute's presence or exact value (``[data-x]``,
``[data-x="y"]``), or a compound of those (``p.x[data-x]``), in a rule at the top level of the
sheet whose selector list holds only such selectors.

Every other rule that declares one of those properties is *doubtful*: it may or may not apply, so
it may show what a certain rule hides, and it never hides anything itself. What an element must have
to match it is read from its selector's last compound (the classes, ids, type and attribute names
there) where it can be. Doubtful are rules with other selectors (combinators, pseudo-classes,
pseudo-elements, namespaces, attribute operators or flags), rules inside ``@media``, ``@supports``,
``@layer``, ``@container``, ``@scope`` and any other block at-rule not named below, rules nested in
another rule (they need what their last compound needs, or, where that is ``&`` or the nested rule
an at-rule, what the outer rule's element needs), rules of a sheet that declares an ``@namespace``
or whose ``<style media>`` is not for screens, and ``@keyframes`` (an animation outranks the
declarations that are not ``!important`` and may apply to any element). ``@font-face``, ``@page``,
``@counter-style``, ``@property``, ``@font-feature-values``, ``@font-palette-values``,
``@view-transition``, ``@position-try``, ``@import`` and ``@charset`` style no element's visibility
and are skipped. A rule whose selector list holds an empty selector is dropped, as a browser drops it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final, NamedTuple

from notochord.extraction.css_syntax import Declaration, declaration_list, scan, strip_comments, unescape

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

__all__ = [
    "ANY_ELEMENT",
    "CSS_WIDE_KEYWORDS",
    "MAX_NESTING",
    "MAX_RULES",
    "Compound",
    "Rule",
    "SheetsBeyondBoundsError",
    "shown_declarations",
    "style_rules",
]

# Style sheets are read whole (they are part of the page, so that pass is linear in its size), but
# a page may hold at most this many rules that bear on what is shown, counting each selector of a
# list, and nest blocks at most this deep (each level is scanned once more). Beyond either bound
# the page's sheets are not applied at all and its inline styles alone decide, as for a page
# without sheets: never a part of the sheets, which could hide what a later rule shows.
MAX_RULES: Final = 20_000
MAX_NESTING: Final = 8

CSS_WIDE_KEYWORDS: Final = frozenset({"inherit", "initial", "unset", "revert", "revert-layer"})
_PROPERTIES: Final = ("display", "content-visibility", "visibility", "opacity", "font-size")
_SKIPPED_AT_RULES: Final = frozenset(
    {
        "font-face",
        "page",
        "counter-style",
        "property",
        "font-feature-values",
        "font-palette-values",
        "view-transition",
        "position-try",
        "import",
        "charset",
    }
)
_SYSTEM_FONTS: Final = frozenset({"caption", "icon", "menu", "message-box", "small-caption", "status-bar"})
_FONT_SIZE_WORD: Final = frozenset(
    {"xx-small", "x-small", "small", "medium", "large", "x-large", "xx-large", "xxx-large", "smaller", "larger", "math"}
)
# possessive: a value of a million digits is read once, not once for each place it could split
_DIMENSION: Final = re.compile(
    r"[+-]?+(?:\d++(?:\.\d*+)?+|\.\d++)(?:e[+-]?\d++)?+(?:[a-z]++|%)"  # a number and its unit
    r"|[+-]?+(?:0++(?:\.0*+)?+|\.0++)"  # zero, which needs none
)

_ESC: Final = r"\\(?:[0-9a-fA-F]{1,6}[ \t\n\r\f]?|[^\n\r\f0-9a-fA-F])"
_NMCHAR: Final = rf"(?:[A-Za-z0-9_\-\u0080-\U0010ffff]|{_ESC})"
_IDENT: Final = rf"(?:--|-?(?:[A-Za-z_\u0080-\U0010ffff]|{_ESC})){_NMCHAR}*"
_AT_NAME: Final = re.compile(_IDENT)
_WHITESPACE: Final = re.compile(r"[ \t\n\r\f]+")
# atomic: a namespace prefix (``svg|a``) is no type selector, nor is any shorter part of it
_SIMPLE: Final = re.compile(rf"(?P<type>(?>{_IDENT})|\*)(?!\|)|#(?P<id>{_IDENT})|\.(?P<cls>{_IDENT})")
_COMBINATOR: Final = re.compile(r"[ \t\n\r\f]*(?:\|\||[>+~])[ \t\n\r\f]*|[ \t\n\r\f]+")
_PSEUDO: Final = re.compile(rf"::?(?:{_IDENT})?")
_ATTRIBUTE: Final = re.compile(
    rf"""\s*(?P<name>{_IDENT})\s*(?:(?P<op>[~|^$*]?=)\s*"""
    rf"""(?:(?P<bare>{_IDENT})|"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>(?:[^'\\\n]|\\.)*)')\s*(?P<flag>[a-zA-Z])?\s*)?""",
    re.DOTALL,
)


class SheetsBeyondBoundsError(Exception):
    """The page's style sheets hold more rules, or nest deeper, than are applied."""


class Compound(NamedTuple):
    """What an element must be to match: its type (lowercase, or None for any), ids, classes and
    attributes, each attribute with the value it must have or None for presence alone."""

    tag: str | None
    ids: tuple[str, ...]
    classes: tuple[str, ...]
    attributes: tuple[tuple[str, str | None], ...]


ANY_ELEMENT: Final = Compound(None, (), (), ())


class Rule(NamedTuple):
    """One selector's rule: for a certain rule ``subject`` is its selector, for a doubtful one what
    every element it matches has. ``specificity`` is None where it is not known; ``animation``
    marks keyframes. Each declaration is (property, value, important, order in the page)."""

    subject: Compound
    specificity: tuple[int, int, int] | None
    certain: bool
    animation: bool
    declarations: tuple[tuple[str, str, bool, int], ...]


class _Selector(NamedTuple):
    understood: bool  # one compound of the simple selectors a certain rule may have
    subject: Compound  # the whole compound when understood, else what its last compound needs
    nesting: bool  # the last compound names the rule it is nested in (``&``)


def _font_size(value: str) -> str:
    """The ``font-size`` a ``font`` shorthand sets; ``medium`` where it names none (it is then no
    valid shorthand, and nothing is hidden on its account)."""
    if value in CSS_WIDE_KEYWORDS:
        return value
    if value in _SYSTEM_FONTS:
        return "medium"
    for token in value.split():
        if token[0] in "\"',":
            break
        size = token.split("/", 1)[0]
        if size in _FONT_SIZE_WORD or _DIMENSION.fullmatch(size):
            return size
    return "medium"


def shown_declarations(declarations: Iterable[Declaration]) -> Iterator[tuple[str, str, bool]]:
    """The (property, value, important) of those ``declarations`` that bear on what is shown."""
    for declaration in declarations:
        name, value, important = declaration
        if name in _PROPERTIES:
            yield name, value, important
        elif name == "font":
            yield "font-size", _font_size(value), important
        elif name == "all" and value in CSS_WIDE_KEYWORDS:
            for each in _PROPERTIES:
                yield each, value, important


def _attribute(inside: str) -> tuple[tuple[str, str | None] | None, bool]:
    """An attribute selector's condition for a certain rule (None when it has none), and whether a
    certain rule may hold it at all."""
    match = _ATTRIBUTE.fullmatch(inside)
    if match is None:
        return None, False
    name = unescape(match["name"]).lower()
    operator = match["op"]
    if operator is None:
        return (name, None), True
    value = match["bare"] if match["bare"] is not None else match["dq"] if match["dq"] is not None else match["sq"]
    flag = (match["flag"] or "s").lower()
    if operator != "=" or flag != "s":
        return (name, None), False
    return (name, unescape(value or "")), True


def parse_selector(text: str) -> _Selector | None:
    """One selector of a list, or None when it is empty."""
    text = text.strip(" \t\n\r\f")
    if not text:
        return None
    understood = True
    tag: str | None = None
    ids: list[str] = []
    classes: list[str] = []
    attributes: list[tuple[str, str | None]] = []
    fresh = True  # at a compound's start
    nesting = False
    i, end = 0, len(text)
    while i < end:
        combinator = _COMBINATOR.match(text, i)
        if combinator is not None:
            understood = False
            tag, ids, classes, attributes, fresh, nesting = None, [], [], [], True, False
            i = combinator.end()
            continue
        simple = _SIMPLE.match(text, i)
        if simple is not None:
            if simple["type"] is not None and not fresh:  # a type after another part: no selector
                understood = False
            elif simple["type"] is not None:
                tag = None if simple["type"] == "*" else unescape(simple["type"]).lower()
            elif simple["id"] is not None:
                ids.append(unescape(simple["id"]))
            else:
                classes.append(unescape(simple["cls"]))
            i, fresh = simple.end(), False
            continue
        fresh = False
        if text[i] == "[":
            close = scan(text, i + 1, end, "]")
            condition, simple_enough = _attribute(text[i + 1 : close])
            understood = understood and simple_enough
            if condition is not None:
                attributes.append(condition)
            i = close + 1
            continue
        understood = False
        pseudo = _PSEUDO.match(text, i)
        if pseudo is not None and pseudo.end() > i + 1:
            i = pseudo.end()
            if i < end and text[i] == "(":
                i = scan(text, i + 1, end, ")") + 1
            continue
        nesting = nesting or text[i] == "&"
        i += 1  # a character no simple selector starts with (``&``, ``|``, ``%``, …): read on
    if not understood:
        attributes = [(name, None) for name, _ in attributes]
    return _Selector(understood, Compound(tag, tuple(ids), tuple(classes), tuple(attributes)), nesting)


def _specificity(compound: Compound) -> tuple[int, int, int]:
    return len(compound.ids), len(compound.classes) + len(compound.attributes), int(compound.tag is not None)


class _Reader:
    """Reads sheets into rules, counting them and the depth of blocks against the bounds."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self._order = 0

    def _declarations(self, declarations: Iterable[Declaration]) -> tuple[tuple[str, str, bool, int], ...]:
        kept: list[tuple[str, str, bool, int]] = []
        for name, value, important in shown_declarations(declarations):
            self._order += 1
            kept.append((name, value, important, self._order))
        return tuple(kept)

    def _add(self, rule: Rule) -> None:
        if len(self.rules) >= MAX_RULES:
            raise SheetsBeyondBoundsError
        self.rules.append(rule)

    def sheet(self, text: str, conditional: bool) -> None:
        self._rule_list(text, 0, len(text), conditional, 0)

    def _rule_list(self, text: str, i: int, end: int, conditional: bool, depth: int) -> None:
        if depth > MAX_NESTING:
            raise SheetsBeyondBoundsError
        while i < end:
            space = _WHITESPACE.match(text, i)
            if space is not None:
                i = space.end()
                continue
            if text.startswith("/*", i):
                close = text.find("*/", i + 2, end)
                i = end if close < 0 else close + 2
                continue
            if text.startswith("<!--", i) or text.startswith("-->", i):  # markup around a sheet
                i += 4 if text[i] == "<" else 3
                continue
            block = scan(text, i, end, "{;" if text[i] == "@" else "{")
            if block >= end:
                return
            if text[i] == "@":
                name_match = _AT_NAME.match(text, i + 1)
                name = unescape(name_match.group()).lower() if name_match else ""
                if text[block] == ";":
                    # a default namespace makes type selectors match other elements than HTML's
                    conditional = conditional or name == "namespace"
                    i = block + 1
                    continue
                close = scan(text, block + 1, end, "}")
                if name.endswith("keyframes"):
                    self._keyframes(text, block + 1, close, depth + 1)
                elif name not in _SKIPPED_AT_RULES:
                    self._rule_list(text, block + 1, close, True, depth + 1)
                i = close + 1
                continue
            close = scan(text, block + 1, end, "}")
            self._style_rule(text, i, block, close, conditional, depth)
            i = close + 1

    def _selectors(self, prelude: str) -> list[_Selector] | None:
        selectors: list[_Selector] = []
        i, end = 0, len(prelude)
        while i <= end:
            comma = scan(prelude, i, end, ",")
            selector = parse_selector(prelude[i:comma])
            if selector is None:
                return None
            selectors.append(selector)
            if len(selectors) > MAX_RULES:  # each selector is a rule of its own
                raise SheetsBeyondBoundsError
            i = comma + 1
        return selectors

    def _style_rule(self, text: str, start: int, block: int, close: int, conditional: bool, depth: int) -> None:
        declarations, nested = declaration_list(text, block + 1, close)
        kept = self._declarations(declarations)
        if not kept and not nested:
            return  # a rule that bears on nothing shown needs no selector read
        selectors = self._selectors(strip_comments(text[start:block]))
        if selectors is None:
            return
        # a list holding one selector this reader does not know may be one a browser rejects, and
        # with it the whole rule: then none of its selectors is certain
        certain = not conditional and all(selector.understood for selector in selectors)
        if kept:
            for selector in selectors:
                specificity = _specificity(selector.subject) if selector.understood else None
                self._add(Rule(selector.subject, specificity, certain, False, kept))
        outer = [selector.subject for selector in selectors]
        for inner in nested:
            self._nested(text, inner, outer, depth + 1)

    def _nested(self, text: str, where: tuple[int, int, int], outer: list[Compound], depth: int) -> None:
        """A rule nested in another, whose elements need what one of ``outer`` needs: doubtful, and
        needing what its selector's last compound needs, or, where that compound is the outer
        rule's own (``&``) or the rule is an at-rule (``@media print { … }``), what the outer
        rule's element needs."""
        if depth > MAX_NESTING:
            raise SheetsBeyondBoundsError
        prelude, start, close = where
        selector_text = strip_comments(text[prelude : start - 1])
        subjects = outer
        if not selector_text.lstrip().startswith("@"):
            selectors = self._selectors(selector_text)
            if selectors is None:
                return
            # each ``&`` stands for every outer subject: count them before listing them
            if sum(len(outer) if selector.nesting else 1 for selector in selectors) > MAX_RULES:
                raise SheetsBeyondBoundsError
            subjects = list(
                dict.fromkeys(
                    subject for selector in selectors for subject in (outer if selector.nesting else [selector.subject])
                )
            )
        declarations, nested = declaration_list(text, start, close)
        kept = self._declarations(declarations)
        if kept:
            for subject in subjects:
                self._add(Rule(subject, None, False, False, kept))
        for inner in nested:
            self._nested(text, inner, subjects, depth + 1)

    def _keyframes(self, text: str, start: int, end: int, depth: int) -> None:
        if depth > MAX_NESTING:
            raise SheetsBeyondBoundsError
        i = start
        while i < end:
            block = scan(text, i, end, "{")
            if block >= end:
                return
            close = scan(text, block + 1, end, "}")
            declarations, _ = declaration_list(text, block + 1, close)
            # a keyframe's ``!important`` declarations are ignored by browsers
            kept = self._declarations(d for d in declarations if not d.important)
            if kept:
                self._add(Rule(ANY_ELEMENT, None, False, True, kept))
            i = close + 1


def style_rules(sheets: Sequence[tuple[str, bool]]) -> list[Rule]:
    """The rules of ``sheets`` (each its text, and whether it applies only under a condition, such as
    a ``media`` attribute for other devices) in the page's order.

    Raises :class:`SheetsBeyondBoundsError` when they hold more than :data:`MAX_RULES` such rules or nest
    deeper than :data:`MAX_NESTING`."""
    reader = _Reader()
    for text, conditional in sheets:
        reader.sheet(text, conditional)
    return reader.rules
