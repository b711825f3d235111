"""Why an undo was refused, in the reader's language (K-UI-11).

The store refuses an undo that would overwrite later work with a
:class:`~notochord.errors.RevertError`: a reason code, the values its words need, and the English
sentence the command line, the REST service and MCP show ("cannot revert change 12: superseded by
…"). The console words each code itself (one label ``revert_<code>``), without the "cannot revert
change 12:" lead: the page already says which change it was about. A refusal it has no words for
(the code ``other``, a code from a newer store, values its words do not fit, any other error) keeps
the store's English sentence, so a reason is never shown blank or as a crash. An undo refused as the
reader's mistake (a revert of a revert, say) is worded by :mod:`notochord.console.refusal_words`.
"""

from __future__ import annotations

import re
import string
from typing import Final

from notochord.access.sentences import Lang
from notochord.console.i18n import LABELS, text
from notochord.console.refusal_words import refusal
from notochord.errors import NotochordError, RevertError

__all__ = ["undo_refusal"]

_CHANGE_LEAD: Final = re.compile(r"^cannot revert change \d+: ")
_ACTORS: Final = {"user": "revert_actor_user", "assistant": "revert_actor_assistant", "system": "revert_actor_system"}


def _placeholders(key: str) -> set[str]:
    """The values the words of ``key`` take, in either language."""
    return {name for template in LABELS[key] for _, name, _, _ in string.Formatter().parse(template) if name}


def _actor(actor: str, lang: Lang) -> str:
    """Who made a change, as the changes page names them."""
    if actor in _ACTORS:
        return text(_ACTORS[actor], lang)
    if actor.startswith("gem:"):
        return text("revert_actor_gem", lang, gem=actor.removeprefix("gem:"))
    return actor


def undo_refusal(error: NotochordError, lang: Lang) -> str:
    """Why the undo ``error`` refused was not done, in ``lang``: the reason alone, to follow
    ``undo_refused``'s "This cannot be undone:"."""
    english = _CHANGE_LEAD.sub("", str(error))
    if not isinstance(error, RevertError):
        return refusal(error, lang) if lang != "en" else english
    key = f"revert_{error.reason}"
    if key not in LABELS:
        return english
    values = dict(error.values)
    # a code whose values changed since these words were written: its English still says why
    if not _placeholders(key) <= values.keys():
        return english
    if "actor" in values:
        values["actor"] = _actor(values["actor"], lang)
    return text(key, lang, **values)
