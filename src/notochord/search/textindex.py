"""Full-text indexing: CJK bigram and unigram derivation, safe queries and SQLite FTS5 helpers (DESIGN §5).

Rules:

- **Derived column.** The FTS table indexes :func:`index_text` of a chunk, never the raw text: every
  run of CJK characters (Han ideographs, kana, hangul) becomes its overlapping character bigrams
  followed by its single characters (``烤鸭`` → ``烤鸭 烤 鸭``; a lone character is kept once),
  separated by spaces; all other text is only NFKC-normalised and left to the
  ``porter unicode61 remove_diacritics 2`` tokenizer. No dictionary segmenter: bigrams find names
  and new words a dictionary misses, unigrams find one-character words and surnames (``鸭``,
  ``张``). On PostgreSQL the same derived text is tokenised by FTS5 itself into a postings table
  (:mod:`~notochord.search.text_store_pg`), so both backends hold the same terms. A vault indexed before the
  unigrams existed gets them from migration ``0007``.
- **Queries.** :func:`match_query` rewrites user text by :func:`query_text` and builds an FTS5
  expression in which every term is a double-quoted string, so nothing a user types (``"``, ``*``,
  ``NEAR``, ``-``, ``:``, ``^``, ``AND``/``OR``/``NOT``, parentheses) acts as FTS5 syntax. A CJK run
  of two or more characters in a query becomes its bigrams only, so ``香菜`` never matches ``菜香``
  and multi-character queries rank exactly as with bigrams alone; a one-character run becomes that
  character, which matches the unigrams. English stop words are dropped unless the query consists
  of nothing else (so "The Who" still searches). Terms are OR-ed; BM25 ranks passages that match
  more and rarer terms first.
- **Table.** :func:`fts_table_ddl` makes an FTS5 table that stores its own copy of the derived text,
  keyed by ``rowid`` = chunk id. Why not contentless: SQLite before 3.43 (ours is older) can only
  delete from a contentless table by replaying the exact original tokens, so any change to
  :func:`index_text` would leave stale postings behind; why not external content: the derived text is
  not a column of the chunks table, and keeping it there costs the same space plus triggers. A stored
  copy deletes by rowid, always correctly.
- **Ranking is elsewhere.** Search reads this table into an inverted index
  (:mod:`notochord.search.inverted_index`) and ranks only the caller's candidates with BM25
  (:mod:`notochord.search.bm25`): a forbidden chunk is never ranked or counted, and a page is never
  short because of it.
- Table names are interpolated into SQL, so they must be plain identifiers; every value is bound.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from sqlalchemy import Connection, text

from notochord.db.bulk import copy_rows
from notochord.db.engine import storage_errors
from notochord.errors import KnowledgeValidationError
from notochord.search import text_store_pg

__all__ = [
    "ENGLISH_STOP_WORDS",
    "FTS_TOKENIZER",
    "cjk_bigrams",
    "fts_delete",
    "fts_insert",
    "fts_table_ddl",
    "index_text",
    "is_cjk",
    "match_query",
    "query_term_counts",
    "query_terms",
    "query_text",
]

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

_CJK_RANGES = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\U00020000-\U0003134f"  # CJK Extensions B–G (and compatibility supplement)
)
_CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")
# What unicode61 treats as token characters: letters, numbers (and marks, which it folds away).
_WORD = re.compile(r"[^\W_]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

# A conventional short English list (the Lucene/Snowball core): words that occur in nearly every
# passage and only add noise to an OR query. Negations stay out on purpose ("not", "no").
ENGLISH_STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself of off on once only or other our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your yours
    yourself yourselves
    """.split()  # noqa: SIM905 - a word list reads better as text
)


def is_cjk(char: str) -> bool:
    """Whether ``char`` is a CJK ideograph, kana or hangul character (bigrammed for indexing)."""
    return _CJK_CHAR.fullmatch(char) is not None


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of one CJK run; a one-character run is kept as is."""
    if len(run) <= 1:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _indexed_run(run: str) -> str:
    grams = cjk_bigrams(run)
    if len(run) > 1:
        grams += list(run)
    return " " + " ".join(grams) + " "


def index_text(source: str) -> str:
    """Return the derived text the full-text index stores for ``source`` (CJK runs as bigrams and unigrams).

    The text is NFKC-normalised first, so full-width Latin letters and digits (common in CJK text)
    match their ASCII forms.
    """
    normal = unicodedata.normalize("NFKC", source)
    return _CJK_RUN.sub(lambda m: _indexed_run(m.group(0)), normal)


def query_text(query: str) -> str:
    """Return the derived text of a query: like :func:`index_text`, but CJK runs give bigrams only.

    A one-character run stays that character, so it matches the indexed unigrams; a longer run
    never falls back to its single characters, which would match text holding them in any order.
    """
    normal = unicodedata.normalize("NFKC", query)
    return _CJK_RUN.sub(lambda m: " " + " ".join(cjk_bigrams(m.group(0))) + " ", normal)


def query_term_counts(query: str) -> dict[str, int]:
    """Return the search words of ``query`` with how many times each occurs, in first-seen order.

    Words are lowercased; CJK runs become their bigrams, a lone CJK character stays itself
    (:func:`query_text`). English stop words are dropped unless nothing else remains. Every word is
    kept, however long the query: the full-text leg's cost grows with the number of distinct words.
    """
    counts: dict[str, int] = {}
    for token in _WORD.findall(query_text(query)):
        word = token.lower()
        counts[word] = counts.get(word, 0) + 1
    content = {w: n for w, n in counts.items() if w not in ENGLISH_STOP_WORDS}
    return content or counts


def query_terms(query: str) -> list[str]:
    """Return the distinct search terms of ``query``, in order (see :func:`query_term_counts`)."""
    return list(query_term_counts(query))


def match_query(query: str) -> str | None:
    """Build a safe FTS5 ``MATCH`` expression for user text, or ``None`` if nothing is searchable.

    Example: ``match_query('tomato "beef" NEAR stew*')`` → ``'"tomato" OR "beef" OR "near" OR "stew"'``.
    """
    terms = query_terms(query)
    if not terms:
        return None
    # Terms hold only letters and digits, but quoting is what makes them inert, so escape anyway.
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _table(name: str) -> str:
    if not _IDENTIFIER.fullmatch(name):
        raise KnowledgeValidationError(f"invalid full-text table name {name!r}: use letters, digits and _")
    return name


def fts_table_ddl(name: str) -> str:
    """Return the ``CREATE VIRTUAL TABLE`` statement for a chunk full-text table.

    One column, ``body``, holds :func:`index_text` of the chunk; ``rowid`` is the chunk id.
    """
    table = _table(name)
    return f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(body, tokenize='{FTS_TOKENIZER}')"


def fts_insert(conn: Connection, table: str, rows: Iterable[tuple[int, str]], *, fresh: bool = False) -> int:
    """Index chunks given as ``(chunk id, raw chunk text)``; replaces rows with the same id.

    The text is derived with :func:`index_text` here, so callers pass the chunk text itself.
    Runs in the caller's transaction. Returns the number of rows written. ``fresh``: the ids were
    just created in this transaction, so there is nothing to replace (no full-text rows, no
    postings), and the rows go in one bulk statement (:func:`~notochord.db.bulk.copy_rows`).
    """
    name = _table(table)
    derived = [(int(rowid), index_text(body)) for rowid, body in rows]
    if not derived:
        return 0
    # translated as every write is: a full disk or a read-only store says so, not the driver's text
    with storage_errors(f"writing the full-text index {name}"):
        if fresh:
            copy_rows(conn, name, ("rowid", "body"), derived)
        else:
            batch = [{"id": rowid, "body": body} for rowid, body in derived]
            # FTS5 has no upsert; delete first so re-indexing an edited chunk never duplicates it.
            conn.execute(text(f"DELETE FROM {name} WHERE rowid = :id"), [{"id": r["id"]} for r in batch])
            conn.execute(text(f"INSERT INTO {name}(rowid, body) VALUES (:id, :body)"), batch)
    if text_store_pg.is_postgresql(conn):
        text_store_pg.index_terms(conn, name, derived, FTS_TOKENIZER, fresh=fresh)
    return len(derived)


def fts_delete(conn: Connection, table: str, rowids: Iterable[int]) -> None:
    """Remove chunks from the full-text table; unknown ids are ignored."""
    name = _table(table)
    params = [{"id": int(r)} for r in rowids]
    if not params:
        return
    with storage_errors(f"deleting from the full-text index {name}"):
        conn.execute(text(f"DELETE FROM {name} WHERE rowid = :id"), params)
    if text_store_pg.is_postgresql(conn):
        text_store_pg.delete_terms(conn, name, [p["id"] for p in params])
