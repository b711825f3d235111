"""The Search page as data: the same filters as the API, passages with their locators and why.

Filters mirror ``space.user.search`` (K-SRCH-01…10): the collections (each with its subfolders,
K-SRCH-04), a time range on the document date (a date alone is the whole local day, K-SRCH-06),
and an entity of a kind, found by its name or e-mail (K-SRCH-09). Each problem with a filter is
reported against its own field, and nothing is searched until every field is right.

Matched words are highlighted as data: a passage becomes a list of :class:`Piece` (text, marked or
not) and the template escapes every piece, so a document's own markup can never reach the page
as HTML.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from notochord.access.sentences import Lang
from notochord.app import Space
from notochord.console.forms import whole_number
from notochord.console.refusal_words import refusal
from notochord.errors import KnowledgeError
from notochord.knowledge.hybrid_search import Hit, is_relevant
from notochord.search.bm25 import stem

__all__ = ["KINDS", "LIMIT", "Piece", "Problem", "SearchForm", "SearchHit", "SearchPage", "highlight", "search_page"]

LIMIT: Final = 20
KINDS: Final = ("person", "org", "place")
SNIPPET: Final = 320
_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MAX_QUERY: Final = 1000

Problem = tuple[str, dict[str, object]]
"""What to fix in a field: a label key of :mod:`notochord.console.i18n` and its values."""


@dataclass(frozen=True)
class Piece:
    text: str
    marked: bool


@dataclass(frozen=True)
class SearchForm:
    """What the user asked, as typed; ``errors`` maps a field to what to fix in it."""

    q: str = ""
    collections: tuple[int, ...] = ()
    date_from: str = ""
    date_to: str = ""
    kind: str = "person"
    entity: str = ""
    errors: dict[str, Problem] = field(default_factory=dict)

    @staticmethod
    def parse(query: Mapping[str, str], chosen: list[str]) -> SearchForm:
        """The form from a query string; ``chosen`` are the ``collection`` values (repeatable)."""
        errors: dict[str, Problem] = {}
        q = query.get("q", "").strip()
        if len(q) > _MAX_QUERY:
            errors["q"] = ("search_err_long", {"n": len(q), "max": _MAX_QUERY})
        ids: list[int] = []
        for value in chosen:
            number = whole_number(value)
            if number is not None:
                ids.append(number)
            elif value.strip():
                errors["collection"] = ("search_err_collection", {})
        dates = {}
        for name in ("from", "to"):
            value = query.get(name, "").strip()
            if value and not _DATE.match(value):
                errors[name] = ("search_err_date", {"value": value})
            dates[name] = value
        both = not errors.get("from") and not errors.get("to") and dates["from"] and dates["to"]
        if both and dates["from"] > dates["to"]:
            errors["to"] = ("search_err_order", {})
        kind = query.get("kind", "").strip() or "person"
        if kind not in KINDS:
            errors["kind"] = ("search_err_kind", {"value": kind})
        return SearchForm(
            q=q,
            collections=tuple(dict.fromkeys(ids)),
            date_from=dates["from"],
            date_to=dates["to"],
            kind=kind,
            entity=query.get("entity", "").strip(),
            errors=errors,
        )


@dataclass(frozen=True)
class SearchHit:
    document_id: int
    title: str
    collection: str
    chunk: int
    start: int
    end: int
    date: str
    score: float
    why: list[Problem]
    """Why it was found, as labels of :mod:`notochord.console.i18n` and their values."""
    pieces: list[Piece]


@dataclass(frozen=True)
class SearchPage:
    form: SearchForm
    collections: list[tuple[int, str]]
    hits: list[SearchHit]
    hidden: int
    searched: bool
    entity_name: str | None


def _terms(query: str) -> list[str]:
    """The query's words, casefolded, and each pair of characters of a CJK run (the full-text index
    matches CJK text by such pairs)."""
    terms: list[str] = []
    for word in _WORD.findall(query.casefold()):
        if _CJK.search(word) and len(word) > 2:
            terms += [word[i : i + 2] for i in range(len(word) - 1)]
        terms.append(word)
    return sorted(set(terms), key=len, reverse=True)


def highlight(text: str, query: str) -> list[Piece]:
    """``text`` cut into pieces, the ones that match a query word marked.

    A word matches when the full-text index would match it: the same word in any case, or the same
    stem ("cooked" for "cooking"). CJK text matches by the query's characters, wherever they stand.
    """
    terms = _terms(query)
    if not terms or not text:
        return [Piece(text, False)] if text else []
    cjk = [t for t in terms if _CJK.search(t)]
    words = {t for t in terms if not _CJK.search(t)}
    stems = {token for w in words for token in stem(w)}
    marks = [False] * len(text)
    for found in _WORD.finditer(text):
        word = found.group().casefold()
        if len(word) != len(found.group()):
            continue  # casefolding changed its length (ß → ss): no offset inside it is safe to mark
        if _CJK.search(word):
            for term in cjk:
                start = word.find(term)
                while start >= 0:
                    for i in range(found.start() + start, found.start() + start + len(term)):
                        marks[i] = True
                    start = word.find(term, start + 1)
        elif word in words or stems.intersection(stem(word)):
            for i in range(found.start(), found.end()):
                marks[i] = True
    pieces: list[Piece] = []
    begin = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or marks[i] != marks[begin]:
            pieces.append(Piece(text[begin:i], marks[begin]))
            begin = i
    return pieces


def _snippet(text: str, query: str) -> str:
    """About :data:`SNIPPET` characters of the passage, around the first query word it contains."""
    flat = " ".join(text.split())
    if len(flat) <= SNIPPET:
        return flat
    lowered = flat.casefold()
    found = [p for term in _terms(query) if (p := lowered.find(term)) >= 0]
    start = max(0, min(found) - SNIPPET // 4) if found else 0
    start = min(start, len(flat) - SNIPPET)
    piece = flat[start : start + SNIPPET]
    return ("…" if start > 0 else "") + piece + ("…" if start + SNIPPET < len(flat) else "")


def _why(hit: Hit) -> list[Problem]:
    reasons: list[Problem] = [("search_why_words", {})] if hit.text_match else []
    if hit.similarity is not None:
        reasons.append(("search_why_meaning", {"similarity": f"{hit.similarity:.2f}"}))
    return reasons


def _entity(space: Space, form: SearchForm, errors: dict[str, Problem], lang: Lang) -> tuple[int | None, str | None]:
    if not form.entity or "kind" in errors:
        return None, None
    try:
        if "@" in form.entity:
            found = space.user.entities.resolve(kind=form.kind, email=form.entity)
        else:
            found = space.user.entities.resolve(kind=form.kind, name=form.entity)
    except KnowledgeError as error:
        errors["entity"] = ("plain", {"text": refusal(error, lang, field="refused_field_entity")})
        return None, None
    if found is None:
        errors["entity"] = ("search_err_entity", {"value": form.entity})
        return None, None
    return found.id, found.display_name


def search_page(space: Space, form: SearchForm, lang: Lang = "en") -> SearchPage:
    """The page for ``form``: the hits when every field is right, else the form with its errors,
    a refusal of the store's said in ``lang``."""
    names = [(c.id, c.name) for c in space.user.collections.list()]
    errors = dict(form.errors)
    known = {cid for cid, _ in names}
    if any(c not in known for c in form.collections):
        errors["collection"] = ("search_err_collection", {})
    entity_id, entity_name = _entity(space, form, errors, lang)
    checked = SearchForm(
        q=form.q,
        collections=form.collections,
        date_from=form.date_from,
        date_to=form.date_to,
        kind=form.kind,
        entity=form.entity,
        errors=errors,
    )
    searched = not errors and bool(form.q or form.collections or form.date_from or form.date_to or entity_id)
    if not searched:
        return SearchPage(checked, names, [], 0, False, entity_name)
    window: dict[str, Any] | None = None
    if form.date_from or form.date_to:
        window = {"from": form.date_from or None, "to": form.date_to or None}
    try:
        found = space.user.search(
            form.q,
            collections=list(form.collections) or None,
            time_range=window,
            entities=[entity_id] if entity_id is not None else None,
            limit=LIMIT,
        )
    except KnowledgeError as error:
        errors["q"] = ("plain", {"text": refusal(error, lang, field="refused_field_query")})
        return SearchPage(checked, names, [], 0, False, entity_name)
    shown = [h for h in found if is_relevant(h)] if form.q else found
    by_id = dict(names)
    hits = [
        SearchHit(
            document_id=h.document_id,
            title=h.title,
            collection=by_id.get(h.collection_id, str(h.collection_id)),
            chunk=h.chunk,
            start=h.start,
            end=h.end,
            date=h.doc_date,
            score=h.score,
            why=_why(h),
            pieces=highlight(_snippet(h.text, form.q), form.q),
        )
        for h in shown
    ]
    return SearchPage(checked, names, hits, len(found) - len(shown), True, entity_name)
