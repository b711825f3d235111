"""Which declared charsets name a character set text is written in.

A ``charset`` comes from outside (an HTTP header, an upload's content type) and picks a Python codec
by name. Python's codecs include some that are no character set: bytes-to-bytes codecs (``base64``,
``zlib``, ``bz2``, ``rot13``) decompress or rewrite instead of decoding, ``undefined`` always fails,
``idna`` refuses to replace what it cannot read, ``punycode`` takes quadratic time (a megabyte holds
a process for minutes) and the escape codecs read backslashes as code points.
"""

from __future__ import annotations

import codecs
from typing import Final

__all__ = ["text_codec"]

_PSEUDO_CHARSETS: Final = frozenset({"undefined", "idna", "punycode", "unicode-escape", "raw-unicode-escape"})


def text_codec(declared: str) -> str | None:
    """The codec ``declared`` names when it is a character set text is written in, else ``None``
    (unknown, or a codec that is no character set)."""
    try:
        info = codecs.lookup(declared)
    except (LookupError, ValueError):  # ValueError: a name holding a NUL
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name.replace("_", "-") in _PSEUDO_CHARSETS:
        return None
    return info.name
