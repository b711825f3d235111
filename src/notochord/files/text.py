"""Text a gem hands over to be stored as a file, in UTF-8."""

from __future__ import annotations

from notochord.errors import FileError

__all__ = ["utf8"]


def utf8(text: str, what: str) -> bytes:
    """``text`` as UTF-8 bytes, or a :class:`~notochord.errors.FileError` naming ``what`` when it holds
    a lone surrogate (half of a UTF-16 pair, as JavaScript strings may), which UTF-8 cannot hold."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FileError(
            f"the text for {what} holds a lone surrogate (U+{ord(exc.object[exc.start]):04X}), which UTF-8 "
            "cannot hold; remove it, or write the text's bytes instead"
        ) from None
