"""Search within a knowledge base, retrieval for an agent across its linked knowledge bases, and the
knowledge graph of a knowledge base (OD-B07 as overridden, KB-GEN-02).

Rules:

- Search and retrieval run the hybrid search of :mod:`notochord.knowledge.hybrid_search` (full text and
  vectors, fused) over the knowledge bases' own collections only: the collections a caller may read
  are decided *before* the query and passed into it, so nothing else is ranked, counted or timed.
- A search body is ``{query, limit?, filters?}``: ``query`` a string (empty lists the newest
  passages), ``limit`` a JSON whole number of 1 or more (default 10, capped at 100), read by the same
  rule as every listing's ``?limit`` (:func:`~notochord.kbservice.validation.limit_value`),
  ``filters`` an object whose only key is ``timeRange`` (``{from?, to?}`` on the document date).
  Anything else is a 400.
- Retrieval for an agent needs ``view`` on the agent; it searches each linked knowledge base the
  caller may view on its own (each has its own index, KB-GEN-02) and fuses the lists by their
  rank-based hybrid scores: passages of equal rank in different knowledge bases tie, and ties go to
  the higher link priority, then to the earlier link. Each passage carries its knowledge base's id,
  name and priority. Only the knowledge bases the caller may view take part, so another's passages
  are never ranked.
- A search is one read transaction: the knowledge base and the caller's grant on it (one
  statement), then the passages with their documents' keys, so the permission question is answered
  in the snapshot the passages are read from. A retrieval reads the agent, its links with the
  caller's grant on each linked knowledge base, and the passages of every linked knowledge base of
  the agent's organization in one transaction too.
- Every passage has a locator: its document's public id, the chunk number and the character offsets
  ``from``/``to`` in the document's text.
- The knowledge graph is derived on request from the knowledge base's chunks and stores nothing: an
  entity is an email address, an acronym, or a run of capitalised words that is not just the first
  word of a sentence; two entities co-occur when one chunk holds both. At most 5,000 chunks are
  read (``truncated`` says so); the ``limit`` entities found in the most documents are returned with
  the co-occurrence edges among them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import chunks, documents
from notochord.errors import KnowledgeValidationError
from notochord.kbservice.actors import Actor
from notochord.kbservice.errors import KbValidationError
from notochord.kbservice.grants import locate, locating
from notochord.kbservice.knowledge_bases import KnowledgeBase, kb_from_row
from notochord.kbservice.links import Links
from notochord.kbservice.policy import Action, Resource, ResourceType, decide
from notochord.kbservice.spaces import Directory, OrgSpace
from notochord.kbservice.validation import JsonBody, Paging, limit_value
from notochord.knowledge.candidates import DataVersion
from notochord.knowledge.hybrid_search import Hit, hybrid_search
from notochord.knowledge.timeranges import TimeRange, parse_time_range

__all__ = [
    "DEFAULT_SEARCH_LIMIT",
    "MAX_SEARCH_LIMIT",
    "Graph",
    "GraphEdge",
    "GraphEntity",
    "KbRetrieval",
    "Passage",
    "SearchRequest",
    "recognise_entities",
]

DEFAULT_SEARCH_LIMIT = 10
MAX_SEARCH_LIMIT = 100
_MAX_QUERY = 10_000
_MAX_GRAPH_CHUNKS = 5000
# Fused scores are sums of 1/(k + rank); equal ranks must compare equal despite float noise.
_SCORE_DIGITS = 12

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_TOKEN = re.compile(r"[^\W_][\w'’&-]*")
_SENTENCE_BREAK = re.compile(r"[.!?:;]")
_CONNECTORS = frozenset({"of", "de", "da", "di", "del", "der", "den", "van", "von", "la", "le", "du", "y"})
# capitalised only because they open a sentence or a title, never names on their own
_STOPWORDS = frozenset(
    " ".join(
        (
            "a an the this that these those it its we our you your i he she they their his her if in on at",
            "for and but or so as by to of from with when where what why how who which there here then also",
            "not no yes all any each every some many most more less one two three first second next new see",
            "note please thank thanks hello hi dear",
        )
    ).split(" ")
)


@dataclass(frozen=True)
class SearchRequest:
    """A validated search body."""

    query: str
    limit: int
    time_range: TimeRange | None

    @classmethod
    def parse(cls, fields: Mapping[str, Any], *, store: OrgSpace) -> SearchRequest:
        """Read ``{query, limit?, filters?}``.

        Raises:
            KbValidationError: a missing or non-string query, a limit that is not a whole number of 1
                or more, an unknown filter or a malformed time range.
        """
        query = fields.get("query")
        if not isinstance(query, str):
            raise KbValidationError("query is required and must be a string")
        if len(query) > _MAX_QUERY:
            raise KbValidationError(f"query is longer than {_MAX_QUERY} characters")
        limit = limit_value(fields.get("limit"), default=DEFAULT_SEARCH_LIMIT, maximum=MAX_SEARCH_LIMIT, source="body")
        filters = fields.get("filters")
        if filters is None:
            filters = {}
        if not isinstance(filters, dict):
            raise KbValidationError("filters must be a JSON object")
        unknown = sorted(set(filters) - {"timeRange"})
        if unknown:
            raise KbValidationError(f"unknown filter {', '.join(map(str, unknown))}; the filter offered is timeRange")
        try:
            time_range = parse_time_range(filters.get("timeRange"), tz=store.core.store.clock.tz)
        except KnowledgeValidationError as exc:
            raise KbValidationError(exc.message) from exc
        return cls(query=query, limit=limit, time_range=time_range)


@dataclass(frozen=True)
class Passage:
    """One retrieved chunk, tagged with its knowledge base and located in its document."""

    kb_id: str
    kb_name: str
    document_id: str
    title: str
    text: str
    score: float
    chunk: int
    start: int
    end: int
    source_type: str
    source_url: str | None
    priority: int = 0


@dataclass(frozen=True)
class GraphEntity:
    id: str
    name: str
    kind: str
    documents: int
    mentions: int


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    weight: int


@dataclass(frozen=True)
class Graph:
    entities: list[GraphEntity]
    edges: list[GraphEdge]
    truncated: bool


@dataclass(frozen=True)
class _Searched:
    """A linked knowledge base taking part in a retrieval."""

    kb: KnowledgeBase
    priority: int
    order: int


class KbRetrieval:
    def __init__(self, directory: Directory, links: Links) -> None:
        self._directory = directory
        self._links = links

    def search(self, *, actor: Actor, kb_id: object, body: JsonBody) -> list[Passage]:
        """Hybrid search within one knowledge base."""
        located = locating(self._directory, actor=actor, type=ResourceType.KB, resource_id=kb_id, action=Action.SEARCH)
        with located as (found, _, conn):
            kb = kb_from_row(found.row)
            request = SearchRequest.parse(body.object(), store=found.store)
            searched = {kb.collection_id: _Searched(kb, 0, 0)}
            return _search_store(
                found.store, request, searched, depth=request.limit, within=conn, data_version=found.data_version
            )

    def retrieve(self, *, actor: Actor, agent_id: object, body: JsonBody) -> list[Passage]:
        """Passages from every knowledge base linked to the agent that the caller may view."""
        located = locating(
            self._directory, actor=actor, type=ResourceType.AGENT, resource_id=agent_id, action=Action.RETRIEVE
        )
        with located as (found, agent, conn):
            request = SearchRequest.parse(body.object(), store=found.store)
            ranked: list[tuple[Passage, int]] = []
            for order, (link, granted) in enumerate(self._links.linked_to(found, agent, actor=actor, within=conn)):
                kb = link.knowledge_base
                target = Resource(ResourceType.KB, kb.id, kb.organization_id)
                if not decide(actor=actor, action=Action.SEARCH, target=target, grant=granted).allowed:
                    continue
                # the agent's own organization is read in the snapshot of the checks
                same = kb.organization_id == agent.organization_id
                store = found.store if same else self._directory.store(kb.organization_id)
                searched = {kb.collection_id: _Searched(kb, link.priority, order)}
                passages = _search_store(
                    store,
                    request,
                    searched,
                    depth=request.limit,
                    within=conn if same else None,
                    data_version=found.data_version if same else None,
                )
                ranked += [(p, order) for p in passages]
        ranked.sort(
            key=lambda p: (-round(p[0].score, _SCORE_DIGITS), -p[0].priority, p[1], p[0].document_id, p[0].chunk)
        )
        return [p for p, _ in ranked[: request.limit]]

    def graph(self, *, actor: Actor, kb_id: object, limit: object = None) -> Graph:
        """The entities of the knowledge base's documents and their co-occurrence."""
        found, _ = locate(
            self._directory, actor=actor, type=ResourceType.KB, resource_id=kb_id, action=Action.READ_DOCUMENTS
        )
        kb = kb_from_row(found.row)
        wanted = Paging.of(limit).limit
        with found.store.read() as conn:
            rows = conn.execute(
                sa.select(chunks.c.document_id, chunks.c.text)
                .join(documents, documents.c.id == chunks.c.document_id)
                .where(documents.c.collection_id == kb.collection_id, documents.c.deleted_at.is_(None))
                .order_by(chunks.c.id)
                .limit(_MAX_GRAPH_CHUNKS + 1)
            ).all()
        truncated = len(rows) > _MAX_GRAPH_CHUNKS
        return _graph(((r.document_id, r.text) for r in rows[:_MAX_GRAPH_CHUNKS]), limit=wanted, truncated=truncated)


def _search_store(
    store: OrgSpace,
    request: SearchRequest,
    searched: Mapping[int, _Searched],
    *,
    depth: int,
    within: sa.Connection | None = None,
    data_version: DataVersion | None = None,
) -> list[Passage]:
    core = store.core
    hits = hybrid_search(
        core.store,
        core.vectors,
        query=request.query,
        collection_ids=set(searched),
        time_range=request.time_range,
        limit=depth,
        within=within,
        data_version=data_version,
    )
    return [_passage(hit, searched[hit.collection_id]) for hit in hits]


def _passage(hit: Hit, searched: _Searched) -> Passage:
    value = hit.meta.get("kb")
    service_meta: Mapping[str, Any] = value if isinstance(value, dict) else {}
    return Passage(
        kb_id=searched.kb.id,
        kb_name=searched.kb.name,
        document_id=hit.document_key,
        title=hit.title,
        text=hit.text,
        score=hit.score,
        chunk=hit.chunk,
        start=hit.start,
        end=hit.end,
        source_type=str(service_meta.get("source_type") or "text"),
        source_url=hit.source_uri,
        priority=searched.priority,
    )


# ---------------------------------------------------------------------- the knowledge graph


def recognise_entities(text: str) -> dict[str, tuple[str, str]]:
    """The entities named in ``text``: key → (name as written, kind).

    Kinds are ``email``, ``acronym`` and ``name``. Markdown heading lines and code fences are skipped,
    and so are capitalised words that only open a sentence: a sentence's first word stays part of a
    name only when nothing in the text says otherwise (the word also appears in lower case, or the
    rest of the run appears as a name in mid-sentence).

    >>> sorted(recognise_entities("Ada Lovelace wrote to Charles Babbage. She met NASA.").values())
    [('Ada Lovelace', 'name'), ('Charles Babbage', 'name'), ('NASA', 'acronym')]
    """
    found: dict[str, tuple[str, str]] = {}
    runs: list[tuple[list[str], bool]] = []
    lower: set[str] = set()
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence or stripped.startswith("#"):
            continue
        for match in _EMAIL.finditer(line):
            found.setdefault("email:" + match.group().casefold(), (match.group(), "email"))
        runs += _runs(_EMAIL.sub(" ", line), lower)
    mid_sentence = {" ".join(words) for words, opens in runs if not opens}
    for words, opens_sentence in runs:
        _add_run(words, opens_sentence=opens_sentence, lower=lower, mid_sentence=mid_sentence, found=found)
    return found


def _runs(line: str, lower: set[str]) -> list[tuple[list[str], bool]]:
    """The capitalised runs of one line (``Ada Lovelace``, ``Bank of America``), each with whether it
    opens a sentence; lower-case words are added to ``lower``."""
    runs: list[tuple[list[str], bool]] = []
    current: list[str] | None = None
    previous_end: int | None = None
    for match in _TOKEN.finditer(line):
        word = match.group()
        gap = line[previous_end or 0 : match.start()]
        opens_sentence = previous_end is None or bool(_SENTENCE_BREAK.search(gap))
        previous_end = match.end()
        if not word[0].isupper():
            lower.add(word.casefold())
        if current and gap in {" ", "\u00a0"} and (word[0].isupper() or word.casefold() in _CONNECTORS):
            current.append(word)
        elif word[0].isupper():
            current = [word]
            runs.append((current, opens_sentence))
        else:
            current = None
    return runs


def _add_run(
    run: list[str],
    *,
    opens_sentence: bool,
    lower: set[str],
    mid_sentence: set[str],
    found: dict[str, tuple[str, str]],
) -> None:
    words = list(run)
    while words and words[-1].casefold() in _CONNECTORS:
        words.pop()
    while words and words[0].casefold() in _STOPWORDS:
        words.pop(0)
    if not words:
        return
    opener = opens_sentence and words[0] == run[0]
    if opener and len(words) > 1 and " ".join(words) not in mid_sentence:
        rest = " ".join(words[1:])
        if words[0].casefold() in lower or rest in mid_sentence:
            words = words[1:]
            opener = False
    if len(words) == 1:
        word = words[0]
        if _is_acronym(word):
            found.setdefault("acronym:" + word, (word, "acronym"))
        elif len(word) > 1 and not opener:
            found.setdefault("name:" + word.casefold(), (word, "name"))
        return
    name = " ".join(words)
    found.setdefault("name:" + name.casefold(), (name, "name"))


def _is_acronym(word: str) -> bool:
    letters = [c for c in word if c.isalpha()]
    return 2 <= len(word) <= 10 and len(letters) >= 2 and all(c.isupper() for c in letters)


def _graph(rows: Iterable[tuple[int, str]], *, limit: int, truncated: bool) -> Graph:
    names: dict[str, Counter[str]] = {}
    kinds: dict[str, str] = {}
    documents_of: dict[str, set[int]] = {}
    mentions: Counter[str] = Counter()
    per_chunk: list[set[str]] = []
    for document_id, text in rows:
        entities = recognise_entities(text)
        for key, (name, kind) in entities.items():
            names.setdefault(key, Counter())[name] += 1
            kinds[key] = kind
            documents_of.setdefault(key, set()).add(document_id)
            mentions[key] += 1
        if len(entities) > 1:
            per_chunk.append(set(entities))
    ranked = sorted(names, key=lambda k: (-len(documents_of[k]), -mentions[k], k))[:limit]
    chosen = set(ranked)
    weights: Counter[tuple[str, str]] = Counter()
    for keys in per_chunk:
        for pair in combinations(sorted(keys & chosen), 2):
            weights[pair] += 1
    edges = sorted(weights.items(), key=lambda item: (-item[1], item[0]))[: limit * 5]
    return Graph(
        entities=[
            GraphEntity(
                id=key,
                name=names[key].most_common(1)[0][0],
                kind=kinds[key],
                documents=len(documents_of[key]),
                mentions=mentions[key],
            )
            for key in ranked
        ],
        edges=[GraphEdge(source=a, target=b, weight=w) for (a, b), w in edges],
        truncated=truncated,
    )
