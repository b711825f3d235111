"""The alternative text of a drawing in a DOCX (a picture, chart or shape), for
:mod:`notochord.extraction.docx_blocks`.

An image's alternative text says what it shows; a screen reader reads it where the image stands,
and so it is extracted there. Word keeps it in ``wp:docPr``: ``descr`` (the text its Alt Text pane
edits) and ``title`` (an older short label); ``pic:cNvPr/@descr`` repeats the description, and is
read when ``wp:docPr`` has none. A title and a description both come out, ``title: description``.

Older documents (and Word's compatibility mode) draw pictures in VML instead (``w:pict`` or
``w:object`` holding ``v:shape``, ``v:rect``, ``v:group`` …): the outermost VML shape is the
drawing, its ``alt`` the description and its ``title`` the title; a shape inside it gives the
description when the outer one has none, and the picture's ``v:imagedata/@o:title`` the title. A
shape positioned ``absolute`` floats (read after its paragraph); one styled ``visibility: hidden``
is not shown, and its text is not read.

Left out, because they say nothing of what the image shows:

- an image marked decorative (Word's ``adec:decorative``), which screen readers skip;
- text that says nothing of the image, and Word's note that it generated a description
  (:func:`~notochord.extraction.alt_text.meaningful_alt_text`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from notochord.extraction.alt_text import meaningful_alt_text
from notochord.extraction.inline_style import declared_style

__all__ = ["VML_SHAPES", "Drawing", "vml_drawing", "vml_property"]

_V: Final = "urn:schemas-microsoft-com:vml}"
# the VML elements that draw something and may carry alternative text
VML_SHAPES: Final = frozenset(
    f"{_V}{name}"
    for name in ("shape", "rect", "roundrect", "oval", "line", "polyline", "curve", "arc", "image", "group")
)
_IMAGEDATA: Final = f"{_V}imagedata"
_O_TITLE: Final = "urn:schemas-microsoft-com:office:office}title"


@dataclass
class Drawing:
    """What one drawing (``wp:inline`` or ``wp:anchor``, or an outermost VML shape) says of
    itself, read as its XML streams by."""

    level: int  # how many ancestors its element has
    inline: bool
    title: str = ""
    description: str = ""
    picture_title: str = ""
    picture_description: str = ""
    decorative: bool = False  # or, for VML, not shown: either way nothing is read
    vml: bool = False

    def alternative_text(self) -> str:
        """The text a screen reader reads for it, or ``""``."""
        if self.decorative:
            return ""
        description = meaningful_alt_text(self.description) or meaningful_alt_text(self.picture_description)
        title = meaningful_alt_text(self.title) or meaningful_alt_text(self.picture_title)
        if title and description and title != description:
            return f"{title}: {description}"
        return title or description


def vml_drawing(level: int, attrs: dict[str, str]) -> Drawing:
    """The drawing an outermost VML shape at ``level`` with the attributes ``attrs`` begins."""
    style = attrs.get("style", "")
    return Drawing(
        level,
        inline=declared_style(style, "position") != "absolute",
        title=attrs.get("title", ""),
        description=attrs.get("alt", ""),
        decorative=declared_style(style, "visibility") == "hidden",
        vml=True,
    )


def vml_property(drawing: Drawing, tag: str, attrs: dict[str, str]) -> None:
    """Note what an element inside the VML drawing ``drawing`` says of the picture."""
    if tag == _IMAGEDATA:
        drawing.picture_title = drawing.picture_title or attrs.get(_O_TITLE, "")
    elif tag in VML_SHAPES:
        drawing.picture_description = drawing.picture_description or attrs.get("alt", "")
