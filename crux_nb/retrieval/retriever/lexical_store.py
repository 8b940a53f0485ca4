"""The lexical index as frames a generation saves (:mod:`crux_nb.store.indexes`), and back.

What is saved is what costs time to rebuild: each source's token arrays under the default leg's settings
(term ids, chunk rows, term frequencies, chunk lengths), the vocabulary in id order and each source's
identifier counts (which ``stopwords="auto"`` sums). Corpus statistics and postings are cheap sums over them
and are recomputed. Frames are in the state's source order, one row per posting / chunk / source, so the
saved parts of unchanged sources keep their bytes (and a save links them instead of writing them again).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...store.lexical import settings_from_record, settings_record
from .lexical_index import _SHARED_LOCK, SharedTokens, _source_spans, corpus_code_like, global_rows

__all__ = ["NAME", "SavedIndexes", "lexical_frames", "install_lexical"]

NAME = "lexical"
DEPENDS = ("documents", "chunks")


class SavedIndexes:
    """``kb.index_frames``, mixed into ``KnowledgeBase``: what ``kb.save`` stores beside the tables."""

    def index_frames(self, state: Any) -> dict:
        """The indexes ``kb.save`` stores with ``state`` so ``crux_nb.open`` need not rebuild them
        (``{name: {"params", "depends", "frames"}}``, see :mod:`crux_nb.store.indexes`): the lexical index."""
        found = lexical_frames(state)
        return {NAME: found} if found else {}


def lexical_frames(state: Any) -> dict | None:
    """The saved form of ``state``'s lexical index under the default leg's settings (tokenizing only the sources
    no earlier state of this knowledge base has tokenized); None for a knowledge base without chunks."""
    from .lexical import BM25Leg

    if not len(state.chunks):
        return None
    # the state's own index (the next query reads it too): its arrays are the postings in source order, so the
    # frames take them as they are instead of joining every source's arrays again (each a fresh 72 MB at 18M
    # postings, which is what costs most on a virtual machine)
    index = BM25Leg()._index(state)
    corpus_code_like(state)  # every source's identifier counts, saved below
    shared: SharedTokens = index.shared
    settings = shared.settings
    counts = state.shared.get("lexical-identifier-counts", {})
    spans = _source_spans(state)
    with shared.lock:
        vocab = list(shared.vocab)
    sources = [key[0] for key, _, _ in spans]
    starts = np.asarray([a for _, a, _ in spans], dtype=np.int64)
    # a source's postings are the index's rows in its chunk range (rows ascend: sources in chunk order, each
    # source's postings by row)
    bounds = np.searchsorted(index.rows, np.append(starts, len(state.chunks)).astype(index.rows.dtype))  # no cast
    n_postings = np.diff(bounds)
    if bounds[0] != 0 or bounds[-1] != len(index.rows):
        raise ValueError("lexical index rows outside the chunks")
    # one int64 per row naming its source (a hash of the id): a part boundary never splits a source, and it
    # costs a fraction of a repeated string column on millions of postings
    keys = pd.util.hash_array(np.asarray(sources, dtype=object)).view(np.int64)
    chunk_keys = np.repeat(keys, [b - a for _, a, b in spans])
    postings = pd.DataFrame({
        "source_key": np.repeat(keys, n_postings),
        "row": index.rows - np.repeat(starts.astype(index.rows.dtype), n_postings),
        "term": index.terms.astype(np.int32, copy=False),
        "tf": index.tfs.astype(np.float32, copy=False)}, copy=False)  # the index's arrays, not copied
    lengths = pd.DataFrame({"source_key": chunk_keys, "length": index.lengths.astype(np.int64, copy=False)},
                           copy=False)
    per_source = pd.DataFrame({
        "source_id": pd.Series(sources, dtype="str"),
        "content_hash": pd.Series([key[1] for key, _, _ in spans], dtype="str"),
        "postings": np.asarray(n_postings, dtype=np.int64),
        "identifiers": np.asarray([counts.get(key, (-1, -1))[0] for key, _, _ in spans], dtype=np.int64),
        "words": np.asarray([counts.get(key, (-1, -1))[1] for key, _, _ in spans], dtype=np.int64)})
    return {"params": {"settings": settings_record(settings), "vocab": len(vocab)}, "depends": list(DEPENDS),
            "frames": {"vocab": pd.DataFrame({"term": pd.Series(vocab, dtype="str")}), "sources": per_source,
                       "postings": postings, "lengths": lengths}}


def install_lexical(state: Any, params: dict, frames: dict) -> bool:
    """Put a saved lexical index into ``state``'s shared caches (its first query then builds no token array);
    False, and nothing changed, when the frames do not fit the state."""
    settings = settings_from_record(params["settings"])
    spans = _source_spans(state)
    sources = frames["sources"]
    ids = sources.column("source_id").to_pylist()
    hashes = sources.column("content_hash").to_pylist()
    if ids != [key[0] for key, _, _ in spans] or hashes != [key[1] for key, _, _ in spans]:
        return False
    vocab = frames["vocab"].column("term").to_pylist()
    postings = frames["postings"].arrays(["term", "row", "tf"])  # not the partition key: 8 bytes a posting
    terms, rows, tfs = postings["term"], postings["row"], postings["tf"]
    lengths = frames["lengths"].arrays(["length"])["length"]
    counts = sources.column("postings").to_numpy()
    if (len(lengths) != len(state.chunks) or int(counts.sum()) != len(terms) or len(vocab) != params.get("vocab")
            or (len(terms) and int(terms.max()) >= len(vocab))):
        return False
    shared = SharedTokens(settings)
    shared.vocab = {term: i for i, term in enumerate(vocab)}
    shared.defer_sources(spans, terms, rows, tfs, lengths, counts)
    identifiers = sources.column("identifiers").to_numpy()
    words = sources.column("words").to_numpy()
    keys = [key for key, _, _ in spans]
    known = {key: (n, w) for key, n, w in zip(keys, identifiers.tolist(), words.tolist()) if n >= 0}
    shared.whole = (tuple(keys), terms, global_rows(rows, [a for _, a, _ in spans], counts),
                    tfs, lengths)
    with _SHARED_LOCK:
        state.shared[("bm25-tokens", settings)] = shared
        if len(known) == len(spans):
            state.shared["lexical-identifier-counts"] = known
    return True
