"""Retrieval legs: BM25 over chunk text (the embedded default) and reciprocal-rank fusion.

A leg scores every chunk of a state for a query. A second leg (dense
embeddings, say) plugs in beside BM25 and the two are fused by RRF (k = 60).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

RRF_K = 60


@runtime_checkable
class Leg(Protocol):
    """A retrieval leg: ``id`` and ``scores(state, query)`` aligned with ``state.chunks`` rows (0 = no match)."""

    id: str

    def scores(self, state: Any, query: str) -> np.ndarray: ...


@dataclass(frozen=True)
class BM25Leg:
    """Okapi BM25 over chunk content with English stop words (bm25s)."""

    id: str = "bm25"
    k1: float = 1.5
    b: float = 0.75

    def _index(self, state: Any):
        key = ("bm25", self.k1, self.b)
        index = state.cache.get(key)
        if index is None:
            import bm25s

            corpus = state.lookup.columns["content"]
            tokens = bm25s.tokenize(corpus, stopwords="en", show_progress=False) if corpus else None
            index = bm25s.BM25(k1=self.k1, b=self.b)
            if corpus:
                index.index(tokens, show_progress=False)
            state.cache[key] = index
        return index

    def scores(self, state: Any, query: str) -> np.ndarray:
        import bm25s

        n = len(state.lookup.columns["content"])
        if n == 0:
            return np.zeros(0)
        index = self._index(state)
        terms = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        terms = [t for t in terms if t in index.vocab_dict]
        if not terms:
            return np.zeros(n)
        return np.asarray(index.get_scores(terms), dtype=float)


def ranked(scores: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Row indices with a positive score, best first; ties keep chunk order (source, ordinal)."""
    keep = scores > 0
    if mask is not None:
        keep &= mask
    rows = np.flatnonzero(keep)
    order = np.argsort(-scores[rows], kind="stable")
    return rows[order]


def rrf(rankings: list[tuple[np.ndarray, float]], *, k: int = RRF_K) -> tuple[np.ndarray, np.ndarray]:
    """Fuse ranked row lists with weights: score = sum of weight / (k + rank), rank from 1."""
    fused: dict[int, float] = {}
    for rows, weight in rankings:
        for rank, row in enumerate(rows.tolist(), start=1):
            fused[row] = fused.get(row, 0.0) + weight / (k + rank)
    if not fused:
        return np.zeros(0, dtype=int), np.zeros(0)
    rows = np.array(sorted(fused, key=lambda r: (-fused[r], r)))
    return rows, np.array([fused[r] for r in rows.tolist()])
