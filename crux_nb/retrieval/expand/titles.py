"""Source-name match: how fully the query names a chunk's source, a second signal beside the chunk's relevance.

A chunk's text is all BM25 sees, but a source's name (its id: ``with``, ``command/add_library``,
``manual/cmake-buildsystem.7``, a Wikipedia title) says what the whole source is about. A question that names
it -- "what does ``include()`` do", "the ``global`` statement" -- points at that source even when its chunks
use the word less than others do (measured on the technical docs: gold chunks at BM25 rank 5-35 whose
source the question names; bench/HISTORY.md, issue 31 round 5).

The match is a share in 0..1: the name's distinct tokens (split as the knowledge base's BM25 splits text)
that the query holds, each weighted by its inverse source frequency among the names
(``ln(1 + (S - df + 0.5) / (df + 0.5))``, the BM25 idf over the ``S`` names), over the weight of all of them.
A token every name shares (``command``, ``md``) weighs next to nothing; a source whose name the query holds
whole scores 1. The names' postings are built once per state (cached); a query reads the postings of its
own tokens and the candidates' sources, nothing per chunk.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..retriever.lexical import BM25Leg, analyzer_for

__all__ = ["TITLE_WEIGHT", "TITLE_DEPTH", "SourceNames", "source_names", "name_term"]

#: the weight of the source-name match against relevance (0..1, the best chunk 1): a chunk of a source the
#: query names whole gains what a chunk 0.3 more relevant has (bench/HISTORY.md: 0.25-0.4 alike on the
#: technical docs)
TITLE_WEIGHT = 0.3
#: rows of the retrieve step's ranking read past the budget when the match is on: a deeper row can now outrank
#: a shallower one (the gains measured came from BM25 ranks up to 15)
TITLE_DEPTH = 8


class SourceNames:
    """The names of a state's sources as BM25 splits them: per token, the sources whose name holds it and its
    weight; per source, the weight of its name; per chunk row, its source."""

    def __init__(self, state: Any) -> None:
        split = analyzer_for(BM25Leg().settings(state))
        codes, ids = pd.factorize(state.chunks["source_id"])  # hashed, not sorted: one pass over the rows
        self.source_of_row = np.asarray(codes, dtype=np.int64)
        names = [set(split(str(name))) for name in ids]
        postings: dict[str, list[int]] = {}
        for i, tokens in enumerate(names):
            for token in tokens:
                postings.setdefault(token, []).append(i)
        n = len(ids)
        self.weight = {t: math.log(1 + (n - len(s) + 0.5) / (len(s) + 0.5)) for t, s in postings.items()}
        self.postings = {t: np.asarray(s, dtype=np.int64) for t, s in postings.items()}
        self.total = np.array([sum(self.weight[t] for t in tokens) for tokens in names])
        self.split = split

    def match(self, query: str, rows: np.ndarray) -> np.ndarray:
        """The source-name match (0..1) of each chunk row in ``rows`` for ``query``."""
        rows = np.asarray(rows, dtype=np.int64)
        tokens = [t for t in dict.fromkeys(self.split(query)) if t in self.postings]
        if not tokens or not len(rows):
            return np.zeros(len(rows))
        sources = np.concatenate([self.postings[t] for t in tokens])
        weights = np.concatenate([np.full(len(self.postings[t]), self.weight[t]) for t in tokens])
        named, at = np.unique(sources, return_inverse=True)
        held = np.bincount(at, weights=weights)  # per named source: the weight of its tokens the query holds
        mine = self.source_of_row[rows]
        slot = np.minimum(np.searchsorted(named, mine), len(named) - 1)
        found = named[slot] == mine
        total = self.total[mine]
        return np.where(found & (total > 0), held[slot] / np.where(total > 0, total, 1.0), 0.0)


def source_names(state: Any) -> SourceNames:
    """The state's :class:`SourceNames`, built on first use and cached with the state (as its BM25 index is).

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="names")
    >>> for name in ("command/set", "command/unset", "manual/cmake-language.7"):
    ...     kb.add_text(name, "Variables and their scopes.")
    >>> names = source_names(kb.state)
    >>> names.split("command/set"), round(names.weight["command"], 2), round(names.weight["set"], 2)
    (['command', 'set'], 0.47, 0.98)
    >>> names.match("What does set(ENV{x}) change?", [0, 1, 2]).round(2).tolist()  # set holds 0.98 of 1.45
    [0.68, 0.0, 0.0]
    """
    key = ("source_names", BM25Leg().settings(state))
    return state.cached(key, lambda: SourceNames(state))


def name_term(state: Any, query: str, weight: float, *, rows: int) -> Callable[[np.ndarray], np.ndarray] | None:
    """The source-name term of a candidate's score, per chunk row (``weight`` x the match), or None when it is off
    (``weight`` 0) or ``state`` is not the one the ``rows`` chunk rows of the run's relevance come from.

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="names")
    >>> kb.add_text("global", "Names listed here are module-level."); kb.add_text("break", "Ends a loop.")
    >>> name_term(kb.state, "the global statement", 0.3, rows=2)([0, 1]).round(2).tolist()  # rows: break, global
    [0.0, 0.3]
    >>> name_term(kb.state, "the global statement", 0.0, rows=2) is None
    True
    """
    if weight <= 0 or len(state.chunks) != rows:
        return None
    names = source_names(state)
    return lambda chunk_rows: weight * names.match(query, chunk_rows)
