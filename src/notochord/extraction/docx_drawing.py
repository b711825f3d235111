"""The alternative text of a drawing in a DOCX (a picture, chart or shape), for
:mod:`notochord.extraction.docx_blocks`.

An image's alternative text says what it shows; a screen reader reads it where the image stands,
and so it is extracted there. Word keeps it in ``wp:docPr``: ``descr`` (the text its Alt Text pane
edits) and ``title`` (an older short label); ``pic:cNvPr/@descr`` repeats the description, and is
read when ``wp:docPr`` has none. A title and a description both come out, ``title: description``.

Left out, because they say nothing of what the image shows:

- an image marked decorative (Word's ``adec:decorative``), which screen readers skip;
- text that is empty, a file name (``image1.png``, ``IMG_2041.JPG``) or a generic word with an
  optional number (``Picture 3``, ``Grafik 2``, ``Screenshot``), as tools write by default;
- Word's note that it generated a description ("Description automatically generated", with its
  confidence), while the generated description itself is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["Drawing"]

_FILE_NAME: Final = re.compile(
    r"[^\s/\\]{1,200}\.(?:png|jpe?g|jfif|gif|bmp|dib|tiff?|svg|emf|wmf|webp|heic|heif|ico)", re.IGNORECASE
)
_GENERIC: Final = re.compile(
    r"(?:picture|image|img|photo|graphic|graphics|figure|screenshot|screen shot|untitled|alt text|"
    r"alternative text|grafik|bild|imagen|imagem|immagine|afbeelding|obraz|kuva|billede|bilde|"
    r"grafika|图片|图像|画像|그림)[\s_-]*\d*",
    re.IGNORECASE,
)
_GENERATED: Final = re.compile(
    r" ?description automatically generated(?: with (?:very )?(?:low|medium|high) confidence)?\.?$",
    re.IGNORECASE,
)


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
        description = _meaningful(self.description) or _meaningful(self.picture_description)
        title = _meaningful(self.title)
        if title and description and title != description:
            return f"{title}: {description}"
        return title or description


def _meaningful(text: str) -> str:
    """``text`` on one line without Word's generated note, or ``""`` when it says nothing."""
    text = _GENERATED.sub("", " ".join(text.split()))  # whitespace first: the pattern then needs no \s*
    if not text or _FILE_NAME.fullmatch(text) or _GENERIC.fullmatch(text):
        return ""
    return text
