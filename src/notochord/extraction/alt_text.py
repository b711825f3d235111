"""Which alternative text of an image says what the image shows (DOCX drawings, HTML ``<img>``).

Left out, because they say nothing of what the image shows: text that is empty, a file name
(``image1.png``, ``IMG_2041.JPG``) or a generic word with an optional number (``Picture 3``,
``Grafik 2``, ``Screenshot``), as tools write by default; and Word's note that it generated a
description ("Description automatically generated", with its confidence), while the generated
description itself is kept.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["meaningful_alt_text"]

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


def meaningful_alt_text(text: str) -> str:
    """``text`` on one line without Word's generated note, or ``""`` when it says nothing."""
    text = _GENERATED.sub("", " ".join(text.split()))  # whitespace first: the pattern then needs no \s*
    if not text or _FILE_NAME.fullmatch(text) or _GENERIC.fullmatch(text):
        return ""
    return text
