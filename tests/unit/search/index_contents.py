"""What an in-memory full-text index holds, independent of how its arrays are laid out."""

from __future__ import annotations

from notochord.search.inverted_index import InvertedIndex


def index_contents(index: InvertedIndex) -> tuple[dict[int, int], dict[str, list[tuple[int, int]]]]:
    """Each live chunk's length, and each term's ``(chunk id, tf)`` postings in chunk order (terms
    without a live posting left out) — equal for an index kept current and one rebuilt."""
    live = index.alive
    lengths = {
        int(i): int(n)
        for p, (i, n) in enumerate(zip(index.ids.tolist(), index.lengths.tolist(), strict=True))
        if live is None or live[p]
    }
    postings: dict[str, list[tuple[int, int]]] = {}
    for term in index.terms:
        positions, frequencies = index.postings(term)
        found = [
            (int(index.ids[p]), int(f))
            for p, f in zip(positions.tolist(), frequencies.tolist(), strict=True)
            if live is None or live[p]
        ]
        assert [i for i, _ in found] == sorted({i for i, _ in found}), term
        if found:
            postings[term] = found
    return lengths, postings
