"""Which Unicode encoding a text file's bytes are in, when the bytes themselves say so.

- A byte order mark names UTF-8, UTF-16 or UTF-32 and its byte order; the UTF-32 marks are looked
  for first, as the little-endian one begins with the UTF-16 one.
- UTF-16 without a mark (what some Windows tools write as "Unicode" text) is told from a binary
  file by where its zero bytes sit: text in Latin scripts has a zero in one half of nearly every
  code unit and almost none in the other, and it decodes without error to few control characters.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["byte_order_mark", "unmarked_utf16"]

_MARKS: Final = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
_SAMPLE: Final = 8192
_ZERO_SHARE: Final = 0.3  # of code units with a zero byte in the half that holds them
_STRAY_SHARE: Final = 0.02  # of code units with a zero byte in the other half
_CONTROLS: Final = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")


def byte_order_mark(data: bytes) -> tuple[str, int] | None:
    """The codec a byte order mark at the start of ``data`` names, and the mark's length."""
    for mark, codec in _MARKS:
        if data.startswith(mark):
            return codec, len(mark)
    return None


def unmarked_utf16(data: bytes) -> str | None:
    """``"utf-16-le"`` or ``"utf-16-be"`` when ``data`` is UTF-16 text without a mark, else None."""
    sample = data[: _SAMPLE - _SAMPLE % 2]
    units = len(sample) // 2
    if units < 2 or len(data) % 2:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if odd >= _ZERO_SHARE * units and even <= _STRAY_SHARE * units:
        codec = "utf-16-le"
    elif even >= _ZERO_SHARE * units and odd <= _STRAY_SHARE * units:
        codec = "utf-16-be"
    else:
        return None
    try:
        text = sample.decode(codec)
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 4:  # only a surrogate pair cut at the sample's end is forgiven
            return None
        text = sample[: exc.start].decode(codec)
    return codec if len(_CONTROLS.findall(text)) <= _STRAY_SHARE * len(text) else None
