"""The styles part of a DOCX: paragraph style names, and whether a run's text is hidden, for
:mod:`notochord.extraction.docx_blocks`.

- A paragraph's style name is looked up as python-docx does (built-in styles by their UI names, a
  paragraph naming no style or an unknown one has the default paragraph style).
- Hidden text (``w:vanish``) is resolved as Word resolves a toggle property: formatting set on the
  run itself decides outright; otherwise the paragraph style's value (the first one found up its
  ``w:basedOn`` chain) replaces the document default, and a character style that sets it flips
  that value, so a hiding character style on text of a hidden paragraph shows it again.
  ``w:specVanish`` hides a run whatever the rest says: the run's own value, else its character
  style's, else its paragraph style's, else the document default.
- A ``w:basedOn`` chain that loops ends where it would repeat; each style's value is worked out
  once, so a long chain costs its length once, not once per run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from notochord.extraction.docx_xml import Attributes, PartReader, W

__all__ = ["Styles", "on"]

# python-docx shows these built-in styles by their UI names
_UI_NAMES: Final = {f"heading {n}": f"Heading {n}" for n in range(1, 10)} | {
    "caption": "Caption",
    "footer": "Footer",
    "header": "Header",
}
_VAL, _TYPE = f"{W}val", f"{W}type"
_STYLE, _RPR = f"{W}style", f"{W}rPr"
_DEFAULTS: Final = [f"{W}docDefaults", f"{W}rPrDefault", _RPR]
_OFF: Final = frozenset({"0", "false", "off"})
_TRUE: Final = frozenset({"1", "true", "on"})
Toggle = Literal["vanish", "spec_vanish"]
_TOGGLES: Final[dict[str, Toggle]] = {f"{W}vanish": "vanish", f"{W}specVanish": "spec_vanish"}


def on(attrs: Attributes) -> bool:
    """The value of an on/off property element: on unless its ``w:val`` says off."""
    return attrs.get(_VAL, "1").strip().lower() not in _OFF


@dataclass
class _Style:
    based_on: str | None = None
    vanish: bool | None = None
    spec_vanish: bool | None = None


class Styles(PartReader):
    """Paragraph style names by id, the default styles, and the hiding properties of every style."""

    def __init__(self) -> None:
        super().__init__()
        self.names: dict[str, str | None] = {}
        self.default: str | None = None  # the default paragraph style's name
        self.default_paragraph: str | None = None
        self.default_character: str | None = None
        self._styles: dict[str, _Style] = {}
        self._document = _Style()
        self._name: str | None = None
        self._style = _Style()
        self._resolved: dict[tuple[str, Toggle], bool | None] = {}

    def start(self, tag: str, attrs: Attributes) -> None:  # noqa: ARG002  # a style's own attributes are read at its end
        if tag == _STYLE:
            self._name, self._style = None, _Style()

    def end(self, tag: str, attrs: Attributes, text: str) -> None:  # noqa: ARG002  # properties are attributes
        path = self.path
        if tag in _TOGGLES and path[-1:] == [_RPR]:
            if path[-2:-1] == [_STYLE]:
                setattr(self._style, _TOGGLES[tag], on(attrs))
            elif path[-3:] == _DEFAULTS:
                setattr(self._document, _TOGGLES[tag], on(attrs))
        elif tag == _STYLE:
            self._end_style(attrs)
        elif path[-1:] != [_STYLE]:
            return
        elif tag == f"{W}name":
            self._name = attrs.get(_VAL)
        elif tag == f"{W}basedOn":
            self._style.based_on = attrs.get(_VAL)

    def _end_style(self, attrs: Attributes) -> None:
        kind, style_id = attrs.get(_TYPE, "paragraph"), attrs.get(f"{W}styleId")
        default = attrs.get(f"{W}default") in _TRUE
        if kind not in ("paragraph", "character") or style_id is None:
            return
        self._styles.setdefault(style_id, self._style)
        if kind == "character":
            if default:
                self.default_character = style_id
            return
        shown = _UI_NAMES.get(self._name, self._name) if self._name is not None else None
        self.names.setdefault(style_id, shown)
        if default:  # the last default wins, as the format says
            self.default, self.default_paragraph = shown, style_id

    def name(self, style_id: str | None) -> str:
        if style_id is not None and style_id in self.names:
            return self.names[style_id] or ""
        return self.default or ""

    def hidden(
        self, paragraph_style: str | None, run_style: str | None, vanish: bool | None, spec_vanish: bool | None
    ) -> bool:
        """Whether a run is hidden, given its paragraph's and its own style ids and its own
        ``w:vanish`` and ``w:specVanish`` (None where it sets none)."""
        paragraph = paragraph_style if paragraph_style in self._styles else self.default_paragraph
        character = run_style if run_style in self._styles else self.default_character
        if spec_vanish is None:
            spec_vanish = self._chain(character, "spec_vanish")
        if spec_vanish is None:
            spec_vanish = self._chain(paragraph, "spec_vanish")
        if spec_vanish if spec_vanish is not None else self._document.spec_vanish:
            return True
        if vanish is not None:
            return vanish
        by_paragraph = self._chain(paragraph, "vanish")
        base = by_paragraph if by_paragraph is not None else bool(self._document.vanish)
        return base ^ bool(self._chain(character, "vanish"))

    def _chain(self, style_id: str | None, toggle: Toggle) -> bool | None:
        """The first value of ``toggle`` up the ``w:basedOn`` chain from ``style_id``."""
        visited: list[str] = []
        seen: set[str] = set()
        value: bool | None = None
        while style_id is not None:
            if (style_id, toggle) in self._resolved:
                value = self._resolved[style_id, toggle]
                break
            style = self._styles.get(style_id)
            if style is None or style_id in seen:
                break
            visited.append(style_id)
            seen.add(style_id)
            value = getattr(style, toggle)
            if value is not None:
                break
            style_id = style.based_on
        for passed in visited:  # none sets it before the value found: they all have that value
            self._resolved[passed, toggle] = value
        return value
