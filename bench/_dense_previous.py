"""The dense query path as it was before the latency work (commit 06a77bc), for ``bench/dense.py`` to time
against in the same run: the leg's ``einsum`` product widened to float64, the row-by-row request filter,
and ``ranks_of`` with a whole sort of each leg's scores. :func:`previous` swaps the last two into the
retrieve step for one call (single-threaded benchmark only)."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from crux_nb.embeddings import chunk_matrix
from crux_nb.retrieval import DenseLeg
from crux_nb.retrieval.filters import hit_record, record_matches
from crux_nb.retrieval.retriever import step as step_module
from crux_nb.retrieval.retriever.lexical import ranked


class PreviousDenseLeg(DenseLeg):
    def scores(self, state, query):
        matrix = chunk_matrix(state, self.embedder)
        if not len(matrix):
            return np.zeros(0)
        vector = np.asarray(self.embedder.embed([query]), dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            return np.zeros(len(matrix))
        cosine = np.einsum("ij,j->i", matrix, (vector / norm).astype(np.float32))
        return np.maximum(cosine, 0.0).astype(np.float64)


def filter_mask(state, namespace, filter):
    cols = state.lookup.columns
    n = len(cols["source_id"])
    if not filter:
        return np.ones(n, dtype=bool)
    return np.fromiter((record_matches(hit_record(namespace, s, c, m), filter)
                        for s, c, m in zip(cols["source_id"], cols["chunk_id"], cols["metadata"])),
                       dtype=bool, count=n)


def ranks_of(scores, valid, rows):
    values = np.sort(scores[valid])  # ascending
    own = scores[rows]
    above = len(values) - np.searchsorted(values, own, side="right")
    out = above + 1
    ties = np.flatnonzero(np.searchsorted(values, own, side="right") - np.searchsorted(values, own, side="left") > 1)
    if len(ties) > 8:
        order = ranked(scores, valid)
        position = np.zeros(len(scores), dtype=np.int64)
        position[order] = np.arange(1, len(order) + 1)
        return position[rows]
    for i in ties.tolist():
        out[i] += int(np.count_nonzero(valid[: rows[i]] & (scores[: rows[i]] == own[i])))
    out[~valid[rows]] = 0
    return out


@contextmanager
def _swapped():
    saved = step_module.filter_mask, step_module.ranks_of
    step_module.filter_mask, step_module.ranks_of = filter_mask, ranks_of
    try:
        yield
    finally:
        step_module.filter_mask, step_module.ranks_of = saved


def previous(fn):
    """``fn`` run with the previous filter and rank code in the retrieve step."""
    def run(*args, **kwargs):
        with _swapped():
            return fn(*args, **kwargs)

    return run
