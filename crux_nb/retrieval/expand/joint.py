"""The relevance ranking's candidate pool: graph candidates and the retrieve step's next candidates, ranked
together, so an expansion at a budget of k hits never trades a better retrieve hit for a worse graph one.

A hit step sees only the hits the producer returned, but ``retrieve`` leaves the query's relevance for
every chunk (``CHUNK_RELEVANCE``: its own score, scaled so the best visible chunk is 1). The pool holds

* every chunk the traversal reached, scored ``relevance + GRAPH_WEIGHT x graph`` (``graph``: the mass its
  paths carry, HippoRAG's seed weight times node specificity); a chunk reached only as a *structural*
  neighbour (its route ends on a ``sequence`` or ``hierarchy`` edge: the chunk before or after a hit, a
  chunk of the same section) with no relevance to the query at all is left out: adjacency alone is no
  reason to show it;
* with ``compete=True`` (the default), the retrieve step's next candidates the graph did not reach, scored
  by their relevance alone: what ``retrieve`` itself would have returned with a larger limit.

This is the personalised-PageRank idea of HippoRAG and LinearRAG (a walk that restarts on the query's
relevant nodes) reduced to one step: relevance is the restart mass every chunk keeps, graph support is
what the walk from the hits adds on top.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...graph.frontier_index import STRUCTURAL_TYPES
from ..retriever.lexical import ranks_of, top_order

__all__ = ["GRAPH_WEIGHT", "Pool", "joint_pool", "graph_pool", "shortfall"]

#: the weight of graph support against query relevance (both about 0..1 for a strong candidate)
GRAPH_WEIGHT = 1.0
STRUCTURAL_MODE = "add"
QUERY_SEED_WEIGHT = None
STRUCT_SCALE = 1.0
_FAR = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Pool:
    """Candidates in rank order: ``order`` indexes the traversal's candidates (``< n_graph``) and then the
    retrieve tail (``rows[i - n_graph]``); ``score``/``relevance``/``graph`` per pool index."""

    order: np.ndarray
    score: np.ndarray
    relevance: np.ndarray
    graph: np.ndarray
    n_graph: int
    tail_rows: np.ndarray  # chunk rows of the retrieve tail, in pool order past n_graph
    tail_ranks: np.ndarray  # their 1-based rank in the retrieve step's ordering
    gated: int  # structural neighbours left out for having no relevance to the query


def _structural(index, found) -> np.ndarray:
    codes = [i for i, name in enumerate(index.type_names) if name in STRUCTURAL_TYPES]
    return np.isin(found.last_edge, codes)


def _candidate_relevance(index, found, chunk_scores: np.ndarray | None) -> np.ndarray:
    rows = index.row_of_code[found.codes]
    if chunk_scores is None:
        return np.zeros(len(found.codes))
    return np.where(rows >= 0, chunk_scores[np.maximum(rows, 0)], 0.0)


def graph_pool(index, found, chunk_scores: np.ndarray | None, *, gate: bool = True) -> Pool:
    """The traversal's candidates alone, scored ``graph x (1 + relevance)`` (the ranking before pools were
    joint), structural neighbours without relevance gated out when ``gate``."""
    relevance = _candidate_relevance(index, found, chunk_scores)
    score = found.mass * (1.0 + relevance)
    keep = ~(_structural(index, found) & (relevance <= 0)) if gate and chunk_scores is not None else \
        np.ones(len(score), dtype=bool)
    idx = np.flatnonzero(keep)
    order = idx[np.lexsort((found.codes[idx], found.seed_rank[idx], found.distance[idx], -score[idx]))]
    empty = np.zeros(0, dtype=np.int64)
    return Pool(order=order, score=score, relevance=relevance, graph=found.mass, n_graph=len(score),
                tail_rows=empty, tail_ranks=empty, gated=int((~keep).sum()))


def joint_pool(index, found, chunk_scores: np.ndarray, taken_rows: np.ndarray, *, room: int,
               weight: float | None = None) -> Pool:
    """Graph candidates and the retrieve tail ranked together by ``relevance + weight x graph``.

    ``taken_rows``: chunk rows already among the hits (never in the tail); ``room``: how many tail rows can
    matter (the step's limit plus slack for rows a filter or view hides).
    """
    weight = GRAPH_WEIGHT if weight is None else weight
    relevance = _candidate_relevance(index, found, chunk_scores)
    structural = _structural(index, found)
    keep = ~(structural & (relevance <= 0))
    if STRUCTURAL_MODE == "mult":
        graph_score = np.where(structural, relevance * (1 + weight * found.mass), relevance + weight * found.mass)
    elif STRUCTURAL_MODE == "allmult":
        g = np.where(structural, STRUCT_SCALE * found.mass, found.mass)
        graph_score = relevance * (1 + weight * g) + 1e-6 * g
    elif STRUCTURAL_MODE == "half":
        graph_score = relevance + weight * np.where(structural, found.mass / 2, found.mass)
    else:
        graph_score = relevance + weight * found.mass
    rows = index.row_of_code[found.codes]
    blocked = np.zeros(len(chunk_scores), dtype=bool)
    blocked[taken_rows] = True
    blocked[rows[rows >= 0]] = True
    tail_rows, tail_ranks = _tail(chunk_scores, blocked, room)
    n = len(found.codes)
    idx = np.flatnonzero(keep)
    score = np.concatenate([graph_score, chunk_scores[tail_rows]])
    codes = np.concatenate([found.codes, index.chunk_code[tail_rows]])
    distance = np.concatenate([found.distance, np.full(len(tail_rows), _FAR)])
    seed_rank = np.concatenate([found.seed_rank, np.full(len(tail_rows), _FAR)])
    pool = np.concatenate([idx, n + np.arange(len(tail_rows))])
    order = pool[np.lexsort((codes[pool], seed_rank[pool], distance[pool], -score[pool]))]
    return Pool(order=order, score=score, relevance=np.concatenate([relevance, chunk_scores[tail_rows]]),
                graph=np.concatenate([found.mass, np.zeros(len(tail_rows))]), n_graph=n, tail_rows=tail_rows,
                tail_ranks=tail_ranks, gated=int((~keep).sum()))


def _tail(chunk_scores: np.ndarray, blocked: np.ndarray, room: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``room`` rows with relevance that are not ``blocked``, with their 1-based rank in the retrieve
    step's full ordering (ties in row order, as ``retrieve`` breaks them)."""
    scored = chunk_scores > 0
    rows = np.flatnonzero(scored & ~blocked)
    if not len(rows) or room <= 0:
        return rows[:0], rows[:0]
    top = top_order(chunk_scores[rows], rows, room)
    return top, ranks_of(chunk_scores, scored, top)


def shortfall(limit: int, added: int, skipped: dict[str, int], pool: Pool, *, competes: bool) -> str | None:
    """The trace's word when fewer hits than ``limit`` were added: how many candidates there were and where the
    others went (None when the budget was filled)."""
    if added >= limit:
        return None
    parts = [f"{skipped[name]} {label}" for name, label in
             (("already", "already among the hits"), ("hidden", "hidden by the filter or view"),
              ("gated", "structural neighbours with no relevance to the query"))
             if skipped.get(name)]
    where = f" ({', '.join(parts)})" if parts else ""
    if competes:
        more = "; the retrieve step ranked no further chunk" if not len(pool.tail_rows) else ""
    else:
        more = "; compete=True would let the retrieve step's next candidates fill the budget"
    found = skipped.get("candidates", 0) + skipped.get("gated", 0)
    return (f"expand_relations added {added} of {limit} hits: {found} candidate{'s' if found != 1 else ''} "
            f"in all{where}{more}.")
