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
from .lexical_index import _SHARED_LOCK, SharedTokens, _source_spans, build_index, corpus_code_like, global_rows

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
    leg = BM25Leg()
    settings = leg.settings(state)
    build_index(state, k1=leg.k1, b=leg.b, settings=settings)
    corpus_code_like(state)
    shared: SharedTokens = state.shared[("bm25-tokens", settings)]
    counts = state.shared.get("lexical-identifier-counts", {})
    spans = _source_spans(state)
    with shared.lock:
        arrays = [shared.sources[key] for key, _, _ in spans]
        vocab = list(shared.vocab)
    sources = [key[0] for key, _, _ in spans]
    n_postings = [len(a[0]) for a in arrays]
    # one int64 per row naming its source (a hash of the id): a part boundary never splits a source, and it
    # costs a fraction of a repeated string column on millions of postings
    keys = pd.util.hash_array(np.asarray(sources, dtype=object)).view(np.int64)
    chunk_keys = np.repeat(keys, [b - a for _, a, b in spans])
    postings = pd.DataFrame({
        "source_key": np.repeat(keys, n_postings),
        "row": np.concatenate([a[1] for a in arrays]).astype(np.int32),
        "term": np.concatenate([a[0] for a in arrays]).astype(np.int32),
        "tf": np.concatenate([a[2] for a in arrays]).astype(np.float32)}, copy=False)  # fresh arrays: not stacked
    lengths = pd.DataFrame({"source_key": chunk_keys,
                            "length": np.concatenate([a[3] for a in arrays]).astype(np.int64)}, copy=False)
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
