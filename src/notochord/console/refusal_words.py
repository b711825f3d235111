"""What the store refused as the reader's mistake, in the reader's language (K-UI-07, K-UI-11, K-UI-12).

A :class:`~notochord.errors.KnowledgeValidationError` (and a
:class:`~notochord.errors.ServiceContentError`), a :class:`~notochord.errors.ConfigurationError` of
the network settings and a :class:`~notochord.errors.FileError` of a working folder or a file
history carry a reason code and the values its words need beside their English sentence (the one
the command line, the REST service and MCP show). The English console shows that sentence as it
is; in Chinese each code has a label ``refused_<code>`` (:mod:`notochord.console.i18n_refusals`,
:mod:`notochord.console.i18n_setting_refusals`; the codes of these classes never share a name), and
a refusal about a field names the field the reader typed into, which only the page knows (``field``,
one of the ``refused_field_*`` labels). A refusal the console has no words for (the code ``other``,
a code from a newer store, values its words do not fit, any other error) keeps the store's English
sentence, so a reason is never blank or a crash.
"""

from __future__ import annotations

import string
from typing import Final

from notochord.access.sentences import Lang
from notochord.console.forms import FieldValueError
from notochord.console.i18n import LABELS, text
from notochord.errors import ConfigurationError, FileError, KnowledgeValidationError, ServiceContentError

__all__ = ["refusal", "worded"]

_CODED: Final = (KnowledgeValidationError, ServiceContentError, ConfigurationError, FileError)
"""The errors that carry a reason code and its values."""

_KINDS: Final = {
    "person": "refused_kind_person",
    "organization": "refused_kind_organization",
    "place": "refused_kind_place",
}
_STATUSES: Final = {"applied": "status_applied", "conflict": "status_conflict", "reverted": "status_reverted"}
_NET_LISTS: Final = {"external": "refused_net_list_external", "local": "refused_net_list_local"}
_NET_MODES: Final = {"allowlist": "refused_net_mode_allowlist", "blocklist": "refused_net_mode_blocklist"}


def _placeholders(key: str) -> set[str]:
    """The values the words of ``key`` take, in either language."""
    return {name for template in LABELS[key] for _, name, _, _ in string.Formatter().parse(template) if name}


def _in_words(values: dict[str, str], lang: Lang) -> dict[str, str]:
    """``values`` with the words the store spells in English (kinds, statuses, lists, modes) in ``lang``."""
    for name in ("merged_kind", "kept_kind"):
        if values.get(name) in _KINDS:
            values[name] = text(_KINDS[values[name]], lang)
    if values.get("status") in _STATUSES:
        values["status"] = text(_STATUSES[values["status"]], lang)
    if values.get("list") in _NET_LISTS:
        values["list"] = text(_NET_LISTS[values["list"]], lang)
    if values.get("mode") in _NET_MODES:
        values["mode"] = text(_NET_MODES[values["mode"]], lang)
    return values


def worded(error: Exception, lang: Lang, *, field: str = "refused_field_text") -> str | None:
    """The console's own words for the reason ``error`` carries, in ``lang``; ``None`` when it has
    none (an error without a code, the code ``other``, a code or values these words do not know)."""
    if not isinstance(error, _CODED):
        return None
    key = f"refused_{error.reason}"
    if key not in LABELS:
        return None
    values = _in_words({**error.values, "field": text(field, lang)}, lang)
    # a code whose values changed since these words were written: its English still says why
    if not _placeholders(key) <= values.keys():
        return None
    return text(key, lang, **values)


def refusal(error: Exception, lang: Lang, *, field: str = "refused_field_text") -> str:
    """Why ``error`` refused what the reader asked for, in ``lang``.

    ``field`` is the ``refused_field_*`` label of the form field the request came from, for the
    refusals about what was typed there.
    """
    if isinstance(error, FieldValueError):
        return text(error.key, lang, **error.values)
    if lang == "en":
        return str(error)
    said = worded(error, lang, field=field)
    return str(error) if said is None else said
