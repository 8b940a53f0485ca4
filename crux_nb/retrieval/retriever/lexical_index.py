"""An incremental BM25 index: chunks are tokenized once per source, so one small change costs time in
proportion to it.

Scores equal ``bm25s``' (its Lucene BM25 variant, float32 like it; its tokenizer too under the ``"bm25s"`` token
rule, see :mod:`crux_nb.store.lexical` for the others), but the expensive part,
tokenizing every chunk, is cached per source in a dict that every state derived from one knowledge base
shares (``KBState.shared``). A new state reuses the token arrays of every source it has in common with earlier
states (same id, content hash and chunk lengths) and tokenizes only the new or changed ones; the corpus-wide
statistics (document frequencies, average length) are then summed with NumPy, and a query term's postings are
gathered on first use. Token arrays are kept per lexical settings: a leg that overrides the knowledge base's
stop words or stemmer has its own vocabulary and arrays.
"""

from __future__ import annotations

import math
import threading
from itertools import chain
from typing import Any

import numpy as np

from ...store.lexical import BM25S_SETTINGS, LexicalSettings, analyzer, code_like, identifier_counts

_EMPTY = (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32))
# what bm25s gets for float32 term frequencies plus a float64 scalar on this NumPy
_TFC_DTYPE = (np.zeros(1, np.float32) + np.float64(1.0)).dtype


_SHARED_LOCK = threading.Lock()


class SharedTokens:
    """Per-source token arrays and one vocabulary under one lexical setting, shared by the states of one
    knowledge base."""

    def __init__(self, settings: LexicalSettings = BM25S_SETTINGS) -> None:
        self.lock = threading.Lock()
        self.vocab: dict[str, int] = {}
        self._sources: dict[tuple, tuple[np.ndarray, ...]] = {}
        self._deferred: tuple | None = None
        # the index's arrays for one exact sequence of sources (source keys, terms, rows, tfs, lengths): a saved
        # index installed at open(), so the first build need not concatenate thousands of per-source slices
        self.whole: tuple | None = None
        self.settings = settings
        self.split = analyzer(settings)

    @property
    def sources(self) -> dict[tuple, tuple[np.ndarray, ...]]:
        """Source cache key -> that source's (term ids, local chunk rows, term frequencies, chunk lengths)."""
        if self._deferred is not None:
            spans, terms, rows, tfs, lengths, counts = self._deferred
            ends = np.cumsum(counts).tolist()
            for (key, a, b), end, n in zip(spans, ends, counts.tolist()):
                self._sources[key] = (terms[end - n:end], rows[end - n:end], tfs[end - n:end], lengths[a:b])
            self._deferred = None
        return self._sources

    @sources.setter
    def sources(self, value: dict) -> None:
        self._sources, self._deferred = value, None

    def defer_sources(self, spans: list, terms: np.ndarray, rows: np.ndarray, tfs: np.ndarray, lengths: np.ndarray,
                      counts: np.ndarray) -> None:
        """Set :attr:`sources` from whole arrays (``counts`` postings per span, in span order), sliced per source
        only when first read: a saved index installed at open is read whole (:attr:`whole`) until a change,
        and 20k sources' slices cost ~0.1 s."""
        self._sources, self._deferred = {}, (spans, terms, rows, tfs, lengths, counts)

    def query_tokens(self, query: str) -> list[str]:
        """A query's tokens, as its chunks' are split (under the ``"bm25s"`` rule: bm25s.tokenize's, without its
        progress-bar setup: ~0.2 ms a query)."""
        return self.split(query)

    def tokenize_sources(self, sources: list[list[str]], *, batch: int = 4096) -> list[tuple[np.ndarray, ...]]:
        """:meth:`tokenize` of each source's chunks (the same arrays, the same vocabulary numbering), up to ``batch``
        chunks at a time: one vocabulary pass and one sort per batch instead of per source, which cost ~80 us
        each, most of the time on thousands of one-chunk sources (a source's arrays are views of its batch's)."""
        out: list[tuple[np.ndarray, ...]] = []
        first = 0
        while first < len(sources):
            last, size = first + 1, len(sources[first])
            while last < len(sources) and size + len(sources[last]) <= batch:
                size, last = size + len(sources[last]), last + 1
            group = sources[first:last]
            terms, rows, tfs, lengths = self.tokenize([text for texts in group for text in texts])
            bounds = np.cumsum([0] + [len(texts) for texts in group]).tolist()
            cuts = np.searchsorted(rows, bounds).tolist()  # postings come in row order
            out += [(terms[a:b], rows[a:b] - rows.dtype.type(start), tfs[a:b], lengths[start:end])
                    for a, b, start, end in zip(cuts, cuts[1:], bounds, bounds[1:])]
            first = last
        return out

    def tokenize(self, texts: list[str]) -> tuple[np.ndarray, ...]:
        """(term ids, local chunk rows, term frequencies, chunk lengths) of one source's chunks."""
        vocab = self.vocab
        words = [self.split(text) for text in texts]
        lengths = np.fromiter(map(len, words), np.int64, len(words))
        tokens = list(chain.from_iterable(words))
        if not tokens:
            return (*_EMPTY, lengths)
        # new terms numbered in order of first appearance, as a setdefault per token would, and the tokens mapped
        # by C loops (map over the dict), not a Python call per token
        new = [term for term in dict.fromkeys(tokens) if term not in vocab]
        vocab.update(zip(new, range(len(vocab), len(vocab) + len(new))))
        ids = np.fromiter(map(vocab.__getitem__, tokens), np.int64, len(tokens))
        rows = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        # one (row, term) pair per posting, with its count: NumPy instead of a Counter per chunk
        pairs, counts = np.unique(rows * (len(vocab) + 1) + ids, return_counts=True)
        return ((pairs % (len(vocab) + 1)).astype(np.int32), (pairs // (len(vocab) + 1)).astype(np.int32),
                counts.astype(np.float32), lengths)


class LexicalIndex:
    """BM25 statistics and postings of one state (built by :func:`build_index`)."""

    def __init__(self, shared: SharedTokens, terms: np.ndarray, rows: np.ndarray, tfs: np.ndarray,
                 lengths: np.ndarray, *, k1: float, b: float):
        self.shared, self.terms, self.rows, self.tfs, self.lengths = shared, terms, rows, tfs, lengths
        self.k1, self.b = k1, b
        self.n_docs = len(lengths)
        self.avg_len = lengths.mean() if len(lengths) else np.float64(0)
        self.df = term_counts(terms, len(shared.vocab))
        self._postings: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def term_ids(self, tokens: list[str]) -> list[int]:
        """Ids of the query tokens the corpus has (repeats kept: bm25s counts a repeated term twice)."""
        vocab = self.shared.vocab
        return [vocab[t] for t in tokens if t in vocab and vocab[t] < len(self.df) and self.df[vocab[t]] > 0]

    def _posting(self, term: int) -> tuple[np.ndarray | None, np.ndarray]:
        """(chunk rows, BM25 contribution per row) of one term, or (None, contribution per chunk) for a term in
        more than 1/:attr:`DENSE` of the chunks; computed on first use and cached: a term's
        contribution depends on the state alone, and common terms (in every chunk) would cost a pass over
        all chunks on every query."""
        found = self._postings.get(term)
        if found is None:  # one vectorised pass per query term: no corpus-wide sort per state
            sel = np.flatnonzero(self.terms == term)
            rows, tf = self.rows[sel], self.tfs[sel]
            df = int(self.df[term])
            idf = np.float32(math.log(1 + (self.n_docs - df + 0.5) / (df + 0.5)))
            norm = self.k1 * ((1 - self.b) + self.b * self.lengths[rows] / self.avg_len)
            tfc = tf / (norm + tf).astype(_TFC_DTYPE, copy=False)
            contribution = (idf * tfc).astype(np.float32)
            if len(rows) * self.DENSE > self.n_docs:  # a common term: one dense add instead of an indexed one
                dense = np.zeros(self.n_docs, dtype=np.float32)
                dense[rows] = contribution
                rows, contribution = None, dense
            found = self._postings[term] = (rows, contribution)
        return found

    #: a term in more than 1/DENSE of the chunks keeps its contribution as a dense array: adding it costs a pass
    #: over all chunks (~5 us at 20k) where an indexed add of as many rows cost ~15x that
    DENSE = 8

    def scores(self, terms: list[int]) -> np.ndarray:
        """bm25s' Lucene BM25, float32: idf = ln(1 + (N - df + .5)/(df + .5)); tfc = tf/(k1(1 - b + b·dl/avgdl) + tf)."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        for term in terms:
            rows, contribution = self._posting(term)
            if rows is None:  # dense: x + 0.0 is x, so the rows it skips keep their sums exactly
                out += contribution
            else:
                # a term's rows are distinct (one posting per chunk and term): a plain indexed add, in float32 as
                # np.add.at adds, without its per-element cost
                out[rows] += contribution
        return out


def _source_spans(state: Any) -> list[tuple[tuple, int, int]]:
    """(cache key, first row, end row) of each source's chunks: the key changes when the source's text does.
    Computed once per state (~40 ms at 20k sources; opening, the first query and a save each ask)."""
    return state.cached("lexical-source-spans", lambda: _spans(state))


def _spans(state: Any) -> list[tuple[tuple, int, int]]:
    chunks = state.chunks
    sources = chunks["source_id"].to_numpy()
    n_chars = chunks["n_chars"].to_numpy()
    hashes = dict(zip(state.documents["source_id"], state.documents["content_hash"]))
    starts = np.flatnonzero(np.r_[True, sources[1:] != sources[:-1]]) if len(sources) else np.zeros(0, int)
    ends = np.r_[starts[1:], len(sources)].astype(int)
    return [((sources[a], hashes.get(sources[a]), tuple(n_chars[a:b].tolist())), a, b)
            for a, b in zip(starts.tolist(), ends.tolist())]


def corpus_code_like(state: Any) -> bool:
    """Whether ``state``'s chunks read as code (``stopwords="auto"``); counted once per source and kept, like the
    token arrays, for the states that follow (a change counts only the changed sources)."""
    def count() -> bool:
        with _SHARED_LOCK:
            known = state.shared.get("lexical-identifier-counts", {})
            spans = _source_spans(state)
            # the content list only when a source is missing (opening a saved index brings every count)
            contents = state.lookup.columns["content"] if any(key not in known for key, _, _ in spans) else None
            kept = {key: known.get(key) or identifier_counts(contents[a:b]) for key, a, b in spans}
            state.shared["lexical-identifier-counts"] = kept
        return code_like(sum(c[0] for c in kept.values()), sum(c[1] for c in kept.values()))

    return state.cached("lexical-code-like", count)


def build_index(state: Any, *, k1: float, b: float, settings: LexicalSettings) -> LexicalIndex:
    """The index of ``state`` under ``settings``, tokenizing only the sources no earlier state of its knowledge
    base had under the same settings."""
    with _SHARED_LOCK:  # one SharedTokens per settings, even when two threads build the first index at once
        shared = state.shared.setdefault(("bm25-tokens", settings), None) or SharedTokens(settings)
        state.shared[("bm25-tokens", settings)] = shared
    spans = _source_spans(state)
    with shared.lock:
        whole = shared.whole
        if whole is not None and whole[0] == tuple(key for key, _, _ in spans):  # its sources are these
            return LexicalIndex(shared, *whole[1:], k1=k1, b=b)
    contents = state.lookup.columns["content"]
    pieces, kept = [], {}
    with shared.lock:
        shared.whole = None  # other sources now: the per-source arrays below are the ones kept
        known = shared.sources
        missing = [(key, start, end) for key, start, end in spans if key not in known]
        made = dict(zip([key for key, _, _ in missing],
                        shared.tokenize_sources([contents[start:end] for _, start, end in missing])))
        for key, start, _ in spans:
            arrays = known[key] if key in known else made[key]
            kept[key] = arrays
            pieces.append((start, arrays))
        shared.sources = kept  # forget sources this state no longer has (an older state re-tokenizes them)
    if not pieces:
        return LexicalIndex(shared, *_EMPTY, np.zeros(0, np.int64), k1=k1, b=b)
    terms = np.concatenate([a[0] for _, a in pieces])
    rows = global_rows(np.concatenate([a[1] for _, a in pieces]), [start for start, _ in pieces],
                       [len(a[1]) for _, a in pieces])
    tfs = np.concatenate([a[2] for _, a in pieces])
    lengths = np.concatenate([a[3] for _, a in pieces])
    return LexicalIndex(shared, terms, rows, tfs, lengths, k1=k1, b=b)


def term_counts(terms: np.ndarray, n_terms: int, *, step: int = 1 << 20) -> np.ndarray:
    """Postings per term id (``np.bincount``), counted a slice at a time: bincount casts its input to int64, and
    casting 9M postings at once costs a fresh 72 MB buffer whose first touch takes ~0.15 s, 6x the count itself.

    >>> term_counts(np.array([0, 2, 2, 1, 2], dtype=np.int32), 4, step=2).tolist()
    [1, 1, 3, 0]
    """
    out = np.zeros(n_terms if len(terms) else 0, dtype=np.int64)
    for start in range(0, len(terms), step):
        out += np.bincount(terms[start:start + step], minlength=n_terms)
    return out


def global_rows(local: np.ndarray, starts: Any, counts: Any, *, step: int = 1 << 20) -> np.ndarray:
    """Postings' chunk rows in the state: ``local`` (each source's postings, rows counted from its first chunk)
    shifted by each source's first row ``starts``, ``counts`` postings per source, in the rows' own dtype (int64
    would cost ~10x on 9M postings) and a slice at a time (the shifts of all postings at once would be a second
    array as large as the result, and fresh memory is what costs most here).

    >>> global_rows(np.array([0, 1, 0], dtype=np.int32), [0, 5], [2, 1], step=2).tolist()
    [0, 1, 5]
    """
    starts = np.asarray(starts, dtype=local.dtype)
    ends = np.cumsum(np.asarray(counts, dtype=np.int64))
    begins = ends - np.asarray(counts, dtype=np.int64)
    out = np.empty_like(local)
    for a in range(0, len(local), step):
        b = min(a + step, len(local))
        first, last = np.searchsorted(ends, [a, b - 1], side="right")  # the sources the slice [a, b) holds
        sizes = np.minimum(ends[first:last + 1], b) - np.maximum(begins[first:last + 1], a)
        np.add(local[a:b], np.repeat(starts[first:last + 1], sizes), out=out[a:b])
    return out

