"""The fence around a gem's SQL database: what a statement of the gem's own SQL may not reach.

A gem's database is its alone, in its own folder, under a key notochord keeps. SQLite's authorizer
asks :func:`fence_refusal` about every action a statement is prepared with, and the statement is
refused, in these words, before it runs:

- ``ATTACH`` of a file, and ``VACUUM INTO`` (which attaches one): the gem would reach another file
  (another gem's, the vault's) or write its data outside its folder. ``ATTACH ':memory:'`` and the
  empty name give a temporary database and are allowed.
- Every ``PRAGMA`` but the ones that read the schema or check integrity and a few harmless switches:
  the others change the key, the journal or the file's safety as notochord set them.
- ``load_extension()`` (native code) and ``fts3_tokenizer()`` (a pointer handed to SQLite).
"""

from __future__ import annotations

from typing import Final

import sqlcipher3

__all__ = ["ALLOWED_PRAGMAS", "fence_refusal"]

ALLOWED_PRAGMAS: Final = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "foreign_key_check",
        "foreign_keys",
        "defer_foreign_keys",
        "integrity_check",
        "quick_check",
        "user_version",
        "recursive_triggers",
        "data_version",
    }
)
_DENIED_FUNCTIONS: Final = frozenset({"load_extension", "fts3_tokenizer"})
_TEMPORARY_ATTACH: Final = ("", ":memory:")
_ATTACH: Final[int] = sqlcipher3.SQLITE_ATTACH
_PRAGMA: Final[int] = sqlcipher3.SQLITE_PRAGMA
_FUNCTION: Final[int] = sqlcipher3.SQLITE_FUNCTION


def fence_refusal(action: int, arg1: str | None, arg2: str | None, what: str) -> str | None:
    """Why the authorizer's ``action`` (with its first two arguments) is refused on the gem's ``what``,
    or ``None`` when it is allowed."""
    if action == _ATTACH and arg1 not in _TEMPORARY_ATTACH:
        return (
            f"the gem's {what} reaches only its own database: ATTACH of a file and VACUUM INTO are not"
            " allowed (ATTACH ':memory:' gives a temporary database); keep the gem's tables in this one"
        )
    if action == _PRAGMA and (arg1 or "").lower() not in ALLOWED_PRAGMAS:
        return (
            f"PRAGMA {arg1} is not allowed on the gem's {what}: its key, journal and safety settings"
            f" stay as notochord set them; the allowed pragmas are {', '.join(sorted(ALLOWED_PRAGMAS))}"
        )
    if action == _FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return f"the function {arg2}() is not allowed in the gem's {what}"
    return None
