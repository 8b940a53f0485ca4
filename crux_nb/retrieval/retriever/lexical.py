"""Retrieval legs: BM25 over chunk text (the embedded default) and reciprocal-rank fusion.

A leg scores every chunk of a state for a query. A second leg (dense
embeddings, say) plugs in beside BM25 and the two are fused by RRF (k = 60).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...store.lexical import DEFAULT_SETTINGS, LexicalSettings, analyzer, lexical_settings

RRF_K = 60


@runtime_checkable
class Leg(Protocol):
    """A retrieval leg: ``id`` and ``scores(state, query)`` aligned with ``state.chunks`` rows (0 = no match).

    Examples
    --------
    >>> import crux_nb, numpy as np
    >>> from crux_nb.retrieval import BM25Leg, Leg
    >>> class Longest:  # any object with an id and a scores method is a leg
    ...     id = "longest"
    ...     def scores(self, state, query):
    ...         return np.array([float(len(text)) for text in state.chunks["content"]])
    >>> isinstance(Longest(), Leg), isinstance(BM25Leg(), Leg)
    (True, True)
    >>> kb = crux_nb.datasets.load_tiny()
    >>> [h.source.id for h in kb.recipe(steps=[crux_nb.retrieve(legs=(Longest(),))]).retrieve("anything")]
    ['plan.md', 'team.md', 'ops.md']
    """

    id: str

    def scores(self, state: Any, query: str) -> np.ndarray:
        """One score per row of ``state.chunks`` (0 = no match); the step ranks and fuses them.

        Examples
        --------
        >>> import crux_nb, numpy as np
        >>> class Mentions:  # how often the query's first word occurs in each chunk
        ...     id = "mentions"
        ...     def scores(self, state, query):
        ...         return np.array([float(text.count(query.split()[0])) for text in state.chunks["content"]])
        >>> state = crux_nb.datasets.load_tiny().state
        >>> list(zip(state.chunks["source_id"], Mentions().scores(state, "Beacon launch").tolist()))
        [('ops.md', 0.0), ('plan.md', 2.0), ('team.md', 0.0)]
        """
        ...


#: a BM25Leg setting left to the knowledge base (its ``knowledge_base(language=..., stopwords=..., ...)``)
KB = "kb"
_SETTINGS = ("language", "stopwords", "stemmer", "tokenizer")


@dataclass(frozen=True)
class BM25Leg:
    """Okapi BM25 over chunk content (bm25s' Lucene scores; the index is incremental per source, see
    :mod:`.lexical_index`), with the knowledge base's lexical settings unless overridden here.

    ``language``, ``stopwords``, ``stemmer``, ``tokenizer``: ``"kb"`` (default) keeps the knowledge base's
    setting; any other value is validated as :func:`crux_nb.knowledge_base` validates it (``stopwords=None``: no
    stop words; ``stopwords="en"``: bm25s' English list; a list: your own; ``tokenizer="bm25s"``: bm25s' split).

    >>> import crux_nb
    >>> from crux_nb.retrieval import BM25Leg
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "The launch moved to May."); kb.add_text("b.md", "Lunch is at noon.")
    >>> [round(float(s), 4) for s in BM25Leg().scores(kb.state, "launch")]  # one score per chunk row
    [0.2544, 0.0]
    >>> BM25Leg(stopwords="en").scores(kb.state, "the").tolist()  # bm25s' English stop words: nothing left
    [0.0, 0.0]
    """

    id: str = "bm25"
    k1: float = 1.5
    b: float = 0.75
    language: Any = KB
    stopwords: Any = KB
    stemmer: Any = KB
    tokenizer: Any = KB

    def __post_init__(self) -> None:
        if isinstance(self.stopwords, (list, set, frozenset)):  # hashable, like every other field
            object.__setattr__(self, "stopwords", tuple(self.stopwords))
        given = self._overrides()
        if given:  # fail at construction, not at the first query
            lexical_settings("BM25Leg()", **{"language": "en", **dict(given)})

    def _overrides(self) -> tuple[tuple[str, Any], ...]:
        return tuple((name, getattr(self, name)) for name in _SETTINGS
                     if not (isinstance(getattr(self, name), str) and getattr(self, name) == KB))

    def settings(self, state: Any) -> LexicalSettings:
        """The lexical settings this leg applies to ``state``: its knowledge base's, with this leg's overrides;
        ``stopwords="auto"`` resolved on the state's text (``None`` when it reads as code, else ``"language"``).

        >>> import crux_nb
        >>> from crux_nb.retrieval import BM25Leg
        >>> kb = crux_nb.knowledge_base(id="fr", language="fr")
        >>> BM25Leg(stemmer=None).settings(kb.state).describe()
        "language='fr', stopwords='language', stemmer=None, tokenizer='crux'"
        >>> kb.add_text("code.md", "Call os.path.join(a, b) or sys.exit(); --verbose prints more.")
        >>> BM25Leg().settings(kb.state).stopwords is None  # auto: code-like text keeps every word
        True
        """
        settings = _resolve(state.lexical or DEFAULT_SETTINGS, self._overrides())
        if settings.stopwords == "auto":
            from .lexical_index import corpus_code_like

            settings = replace(settings, stopwords=None if corpus_code_like(state) else "language")
        return settings

    def _index(self, state: Any):
        settings = self.settings(state)
        from .lexical_index import build_index

        return state.cached(("bm25", self.k1, self.b, settings),
                            lambda: build_index(state, k1=self.k1, b=self.b, settings=settings))

    def scores(self, state: Any, query: str) -> np.ndarray:
        """BM25 of the query's terms (stop words dropped) for every row of ``state.chunks``.

        Examples
        --------
        >>> import crux_nb
        >>> from crux_nb.retrieval import BM25Leg
        >>> kb = crux_nb.datasets.load_tiny()
        >>> kb.state.chunks["source_id"].tolist(), BM25Leg().scores(kb.state, "Atlas").round(4).tolist()
        (['ops.md', 'plan.md', 'team.md'], [0.4421, 0.0, 0.0])
        >>> BM25Leg().scores(kb.state, "the").tolist()  # only stop words: nothing matches
        [0.0, 0.0, 0.0]
        """
        n = len(state.chunks)
        if n == 0:
            return np.zeros(0)
        index = self._index(state)
        ids = index.term_ids(index.shared.query_tokens(query))
        if not ids:
            return np.zeros(n)
        return np.asarray(index.scores(ids), dtype=float)

    def query_warning(self, state: Any, query: str) -> str | None:
        """Why ``query`` can match nothing whatever the corpus holds (no term survives the split), or None.

        >>> import crux_nb
        >>> from crux_nb.retrieval import BM25Leg
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> print(BM25Leg().query_warning(kb.state, "Is it in there?"))  # doctest: +ELLIPSIS
        BM25: the query 'Is it in there?' has no indexable terms: every word it has is a stop word ...
        >>> BM25Leg().query_warning(kb.state, "What is a lambda?") is None
        True
        """
        settings = self.settings(state)
        if analyzer_for(settings)(query):
            return None
        plain = analyzer_for(replace(settings, stopwords=None))(query)
        if plain:
            return (f"BM25: the query {query!r} has no indexable terms: every word it has is a stop word "
                    f"(stopwords={settings.stopwords!r}, language={settings.language!r}); pass stopwords=None or "
                    "your own list to knowledge_base() or BM25Leg() to search for them.")
        return (f"BM25: the query {query!r} has no indexable terms: the {settings.tokenizer!r} tokenizer keeps "
                "words of two or more letters or digits" + (" and CJK characters" if settings.tokenizer == "crux"
                                                             else "; tokenizer='crux' also keeps CJK text")
                + ", and the query has none.")


@lru_cache(maxsize=64)
def _resolve(base: LexicalSettings, overrides: tuple[tuple[str, Any], ...]) -> LexicalSettings:
    if not overrides:
        return base
    merged = {**{name: getattr(base, name) for name in _SETTINGS}, **dict(overrides)}
    return lexical_settings("BM25Leg()", **merged)


@lru_cache(maxsize=64)
def analyzer_for(settings: LexicalSettings):
    """The (cached) split function of ``settings``."""
    return analyzer(settings)


def top_order(values: np.ndarray, rows: np.ndarray, top: int | None) -> np.ndarray:
    """The first ``top`` of ``rows`` ordered by (value descending, row ascending); all of them for ``top=None``.

    Exactly the head of the full stable sort, found with a partial partition (O(n)) when ``top``
    is small: rows tying with the cut-off value are taken in row order.
    """
    if top is None or top >= len(rows):
        return rows[np.lexsort((rows, -values))]
    if top <= 0:
        return rows[:0]
    # the top-th largest value, selected from the front of the negated values: numpy's introselect with the kth
    # near the end of many equal values (common BM25 scores of a short query) took 25x longer (2.2 vs 0.09 ms
    # on 20k rows with two distinct scores)
    cut = -np.partition(-values, top - 1)[top - 1]
    above = values > cut
    tied = np.flatnonzero(values == cut)
    need = top - int(above.sum())
    if len(tied) > need:  # ties: the lowest rows first (rows usually come sorted: then no sort is needed)
        tied_rows = rows[tied]
        if not (tied_rows[1:] >= tied_rows[:-1]).all():
            tied = tied[np.argsort(tied_rows, kind="stable")]
        tied = tied[:need]
    keep = np.concatenate([np.flatnonzero(above), tied])
    return rows[keep[np.lexsort((rows[keep], -values[keep]))]]


def ranked(scores: np.ndarray, mask: np.ndarray | None = None, *, top: int | None = None) -> np.ndarray:
    """Row indices with a positive score, best first; ties keep chunk order (source, ordinal); the first ``top``."""
    keep = scores > 0
    if mask is not None:
        keep &= mask
    rows = np.flatnonzero(keep)
    return top_order(scores[rows], rows, top)


def rrf(rankings: list[tuple[np.ndarray, float]], *, k: int = RRF_K,
        top: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Fuse ranked row lists with weights: score = sum of weight / (k + rank), rank from 1; the best ``top`` rows.

    >>> rows, fused = rrf([(np.array([2, 0]), 1.0), (np.array([0, 1]), 1.0)])
    >>> rows.tolist(), [round(f, 5) for f in fused.tolist()]
    ([0, 2, 1], [0.03252, 0.01639, 0.01613])
    """
    rankings = [(np.asarray(rows, dtype=np.int64), float(weight)) for rows, weight in rankings]
    rankings = [(rows, weight) for rows, weight in rankings if len(rows)]
    if not rankings:
        return np.zeros(0, dtype=int), np.zeros(0)
    every = np.concatenate([rows for rows, _ in rankings])
    terms = np.concatenate([weight / (k + np.arange(1, len(rows) + 1)) for rows, weight in rankings])
    size = int(every.max()) + 1
    fused = np.bincount(every, weights=terms, minlength=size)
    candidates = np.flatnonzero(fused > 0)  # every term is positive: exactly the rows of some ranking
    order = top_order(fused[candidates], candidates, top)
    return order, fused[order]


def fusion_depth(weights: list[float], top: int, *, k: int = RRF_K) -> int:
    """How deep each ranking must be read so the best ``top`` fused rows are all found.

    A row below depth ``D`` in every ranking scores at most ``sum(w) / (k + D + 1)``; each of the
    first ``top`` rows of the heaviest ranking scores at least ``max(w) / (k + top)``.
    """
    return max(top, int(np.ceil(sum(weights) / max(weights) * (k + top))) - k + 1)


def ranks_of(scores: np.ndarray, valid: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The 1-based rank of each of ``rows`` in ``ranked`` order of the ``valid`` rows (0 where not valid).

    Equal to ``list(ranked(...)).index(row) + 1`` without sorting the ranking: every valid score
    is placed among the candidates' own distinct scores (a binary search into a short array), which
    counts the scores above each candidate; equal scores keep row order, so the equal rows before a
    candidate are counted too.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if not len(rows):
        return np.zeros(0, dtype=np.int64)
    where = np.flatnonzero(valid)
    values = scores[where]
    own = scores[rows]
    levels = np.unique(own)  # ascending, at most len(rows)
    slot = np.searchsorted(levels, values, side="left")  # levels below each valid score
    above = np.cumsum(np.bincount(slot, minlength=len(levels) + 1)[::-1])[::-1]  # above[j + 1]: scores > levels[j]
    level = np.searchsorted(levels, own)
    out = above[level + 1] + 1
    equal = levels[np.minimum(slot, len(levels) - 1)] == values  # valid scores equal to some candidate's
    if equal.any():  # count the equal rows before each candidate (ties keep row order)
        n = len(scores)
        keys = np.sort(slot[equal].astype(np.int64) * n + where[equal])
        out += np.searchsorted(keys, level * n + rows) - np.searchsorted(keys, level * n)
    out[~valid[rows]] = 0
    return out
