"""The alternative text of a drawing in a DOCX (a picture, chart or shape), for
:mod:`notochord.extraction.docx_blocks`.

An image's alternative text says what it shows; a screen reader reads it where the image stands,
and so it is extracted there. Word keeps it in ``wp:docPr``: ``descr`` (the text its Alt Text pane
edits) and ``title`` (an older short label); ``pic:cNvPr/@descr`` repeats the description, and is
read when ``wp:docPr`` has none. A title and a description both come out, ``title: description``.

Left out, because they say nothing of what the image shows:

- an image marked decorative (Word's ``adec:decorative``), which screen readers skip;
- text that says nothing of the image, and Word's note that it generated a description
  (:func:`~notochord.extraction.alt_text.meaningful_alt_text`).
"""

from __future__ import annotations

from dataclasses import dataclass

from notochord.extraction.alt_text import meaningful_alt_text

__all__ = ["Drawing"]


@dataclass
class Drawing:
    """What one drawing (``wp:inline`` or ``wp:anchor``) says of itself, read as its XML streams by."""

    level: int  # how many ancestors its element has
    inline: bool
    title: str = ""
    description: str = ""
    picture_description: str = ""
    decorative: bool = False

    def alternative_text(self) -> str:
        """The text a screen reader reads for it, or ``""``."""
        if self.decorative:
            return ""
        description = meaningful_alt_text(self.description) or meaningful_alt_text(self.picture_description)
        title = meaningful_alt_text(self.title)
        if title and description and title != description:
            return f"{title}: {description}"
        return title or description
