"""The relevance ranking's candidate pool: graph candidates and the retrieve step's next candidates, ranked
together, so an expansion at a budget of k hits does not trade a better retrieve hit for a worse graph one.

A hit step sees only the hits the producer returned, but ``retrieve`` leaves the query's relevance for
every chunk (``CHUNK_RELEVANCE``: its own score, scaled so the best visible chunk is 1). Every candidate is
scored in those units:

* a chunk reached through an entity (its recorded route ends on a semantic edge: ``mentions``,
  ``related``, ...) scores ``relevance + graph_weight x sqrt(graph)`` (by default 1.0 in a corpus of
  one-chunk passages, 0.25 in one of multi-chunk documents: :func:`default_graph_weight`), ``graph`` being the mass its paths
  carry (the seed's weight times the specificity of each waypoint, HippoRAG's node specificity). The mass
  is a product of two shares (the seed's rank share and the waypoint's), so its square root is on the
  scale of one share, the scale of a relevance;
* a chunk reached first as a *structural* neighbour (its route ends on a ``sequence`` or ``hierarchy``
  edge: the chunk before or after a hit, a chunk of its section) scores its relevance alone: adjacency is
  no evidence that the query is about it, and one with no relevance at all is left out;
* with ``compete=True`` (the default) the retrieve step's next candidates that the graph did not reach
  join the pool with their relevance: what ``retrieve`` itself would have returned with a larger limit.

This is the personalised-PageRank idea of HippoRAG and LinearRAG (a walk that restarts on the query's
relevant nodes) reduced to one step: relevance is what every chunk keeps, graph support is what the walk
from the hits and the query's entities adds. Chosen on the sample questions, the Python reference
questions and two multi-hop samples (bench/techdocs.py, bench/multihop.py; bench/HISTORY.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ...graph.frontier_index import STRUCTURAL_TYPES

__all__ = ["PASSAGE_GRAPH_WEIGHT", "DOCUMENT_GRAPH_WEIGHT", "default_graph_weight", "Pool", "graph_scores",
           "joint_pool", "graph_pool", "upstream_pool", "shortfall"]

#: the weight of graph support (``sqrt(mass)``) against query relevance (0..1, the best chunk 1) in a corpus of
#: one-chunk passages, where entity links are the only structure between texts and carry the multi-hop answers
PASSAGE_GRAPH_WEIGHT = 1.0
#: ... and in a corpus of multi-chunk documents, where most of the mass comes from a document's own structure and
#: the identifiers it repeats, which relevance already reflects (bench/HISTORY.md: at 1.0 the technical docs lost
#: up to 2.4 points to plain retrieve; at 0.25 the multi-hop samples gained far less)
DOCUMENT_GRAPH_WEIGHT = 0.25


def default_graph_weight(n_chunks: int, n_sources: int) -> float:
    """The graph weight ``expand_relations(graph_weight=None)`` uses for a knowledge base of ``n_chunks`` chunks
    in ``n_sources`` sources: :data:`PASSAGE_GRAPH_WEIGHT` when its sources average fewer than two chunks
    (passages), :data:`DOCUMENT_GRAPH_WEIGHT` otherwise (documents).

    >>> default_graph_weight(6119, 6119), default_graph_weight(472, 79)
    (1.0, 0.25)
    """
    return PASSAGE_GRAPH_WEIGHT if n_sources and n_chunks < 2 * n_sources else DOCUMENT_GRAPH_WEIGHT


_FAR = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Pool:
    """Candidates in rank order: ``order`` indexes the traversal's candidates (``< n_graph``) and then the
    retrieve tail (``tail_rows[i - n_graph]``); ``score``, ``relevance`` and ``graph`` per pool index
    (``score`` is None under the upstream ranking, whose score depends on the position)."""

    order: np.ndarray
    score: np.ndarray | None
    relevance: np.ndarray | None
    graph: np.ndarray
    n_graph: int
    tail_rows: np.ndarray  # chunk rows of the retrieve tail, in pool order past n_graph
    tail_ranks: np.ndarray  # their 1-based rank in the retrieve step's ordering
    gated: int  # structural neighbours left out for having no relevance to the query
    competed: bool = False  # the retrieve step's next candidates were in the pool
    title: np.ndarray | None = None  # per pool index: the source-name term of its score (None: not applied)


#: per chunk row, the source-name term of a candidate's score (``titles``: weight x match), or None
Named = Callable[[np.ndarray], np.ndarray] | None


def graph_scores(index, found, chunk_scores: np.ndarray | None, weight: float,
                 named: Named = None) -> tuple[np.ndarray, ...]:
    """(score, relevance, keep, title) of the traversal's candidates: ``keep`` is False for a non-chunk candidate
    (entity, section, document: never a hit) and for a structural neighbour without relevance; ``title`` is the
    source-name term added to a kept chunk's score (zeros without ``named``). Without a relevance from the run (a
    producer other than ``retrieve``) every candidate scores its graph support."""
    rows = index.row_of_code[found.codes]
    support = weight * np.sqrt(found.mass)
    if chunk_scores is None:
        return support, np.zeros(len(rows)), rows >= 0, np.zeros(len(rows))
    relevance = np.where(rows >= 0, chunk_scores[np.maximum(rows, 0)], 0.0)
    is_structural = np.array([t in STRUCTURAL_TYPES for t in index.type_names] + [False])  # [-1]: no edge
    structural = is_structural[found.last_edge]
    keep = (rows >= 0) & ~(structural & (relevance <= 0))
    title = np.zeros(len(rows))
    if named is not None and keep.any():
        title[keep] = named(rows[keep])
    score = np.where(structural, relevance, relevance + support) + title
    return score, relevance, keep, title


def graph_pool(index, found, chunk_scores: np.ndarray | None, *, weight: float, named: Named = None) -> Pool:
    """The traversal's candidates alone (``compete=False``, or no relevance from a retrieve step)."""
    empty = np.zeros(0, dtype=np.int64)
    score, relevance, keep, title = graph_scores(index, found, chunk_scores, weight, named)
    pool = _ranked_pool(index, found, score, relevance, keep, empty, empty, np.zeros(0))
    return replace(pool, title=title if named is not None else None)


def joint_pool(index, found, chunk_scores: np.ndarray, taken_rows: np.ndarray, head: Callable[[int], np.ndarray], *,
               room: int, weight: float, named: Named = None, depth: int = 0) -> Pool:
    """Graph candidates and the retrieve tail ranked together (see the module docstring).

    ``taken_rows``: chunk rows already among the hits (never in the tail); ``head(n)``: the first ``n`` rows of
    the retrieve step's ranking (``CHUNK_RANKING``); ``room``: how many hits the step adds. The first ``room``
    rows of the ranking past the hits are enough when relevance alone orders the tail: a row the graph reached is
    in the pool already, and any row below them scores less than each of them. ``named`` (the source-name term
    per chunk row) can lift a deeper row: the tail is then ``depth`` rows deeper.
    """
    tail_rows, tail_ranks = _tail(head, taken_rows, room + (depth if named is not None else 0))
    graph_rows = set(index.row_of_code[found.codes].tolist())  # a tail row the graph reached is scored there
    kept = np.array([r not in graph_rows for r in tail_rows.tolist()], dtype=bool)
    tail_rows, tail_ranks = tail_rows[kept], tail_ranks[kept]
    score, relevance, keep, title = graph_scores(index, found, chunk_scores, weight, named)
    tail_title = named(tail_rows) if named is not None and len(tail_rows) else np.zeros(len(tail_rows))
    pool = _ranked_pool(index, found, score, relevance, keep, tail_rows, tail_ranks, chunk_scores[tail_rows],
                        tail_title)
    return replace(pool, competed=True, title=np.concatenate([title, tail_title]) if named is not None else None)


def upstream_pool(found) -> Pool:
    """The traversal's candidates in upstream's order: (distance, seed rank, support size desc, ref, discovery)."""
    # codes follow sorted ref order, so the code stands in for the ref; discovery order is index order
    order = np.lexsort((np.arange(len(found.codes)), found.codes, -found.support, found.seed_rank, found.distance))
    empty = np.zeros(0, dtype=np.int64)
    return Pool(order=order, score=None, relevance=None, graph=found.mass, n_graph=len(found.codes),
                tail_rows=empty, tail_ranks=empty, gated=0)


def _ranked_pool(index, found, score: np.ndarray, relevance: np.ndarray, keep: np.ndarray, tail_rows: np.ndarray,
                 tail_ranks: np.ndarray, tail_scores: np.ndarray, tail_title: np.ndarray | None = None) -> Pool:
    """The kept graph candidates and the tail in one order: (score desc, distance, seed rank, ref); the tail has no
    route, so it sorts after a graph candidate of equal score. ``tail_scores`` is the tail's relevance;
    ``tail_title`` the source-name term added to it."""
    n = len(found.codes)
    scores = np.concatenate([score, tail_scores + (0.0 if tail_title is None else tail_title)])
    codes = np.concatenate([found.codes, index.chunk_code[tail_rows]])
    distance = np.concatenate([found.distance, np.full(len(tail_rows), _FAR)])
    seed_rank = np.concatenate([found.seed_rank, np.full(len(tail_rows), _FAR)])
    pool = np.concatenate([np.flatnonzero(keep), n + np.arange(len(tail_rows))])
    order = pool[np.lexsort((codes[pool], seed_rank[pool], distance[pool], -scores[pool]))]
    gated = int(((index.row_of_code[found.codes] >= 0) & ~keep).sum())
    return Pool(order=order, score=scores, relevance=np.concatenate([relevance, tail_scores]),
                graph=np.concatenate([found.mass, np.zeros(len(tail_rows))]), n_graph=n, tail_rows=tail_rows,
                tail_ranks=tail_ranks, gated=gated)


def _tail(head: Callable[[int], np.ndarray], blocked: np.ndarray, room: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``room`` rows of the retrieve step's ranking that are not ``blocked``, with their 1-based rank in
    it: read from the head the step ranked anyway (no pass over all chunks), deeper only if the hits were not
    the ranking's own head (a custom producer)."""
    if room <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    depth, blocked = room + len(blocked), set(blocked.tolist())
    while True:
        ranking = np.asarray(head(depth), dtype=np.int64)
        free = np.array([i for i, r in enumerate(ranking.tolist()) if r not in blocked], dtype=np.int64)
        if len(free) >= room or len(ranking) < depth:  # enough, or the ranking has no more rows
            free = free[:room]
            return ranking[free], free + 1
        depth *= 2


def shortfall(limit: int, added: int, skipped: dict[str, int], pool: Pool, *, can_compete: bool) -> str | None:
    """The trace's word when fewer hits than ``limit`` were added: how many candidates there were and where the
    others went (None when the budget was filled). ``can_compete``: ``compete=True`` is open to the step (the
    relevance ranking after a retrieve step), so the word may suggest it."""
    if added >= limit:
        return None
    parts = [f"{skipped[name]} {label}" for name, label in
             (("already", "already among the hits"), ("hidden", "hidden by the filter or view"),
              ("gated", "structural neighbours with no relevance to the query"))
             if skipped.get(name)]
    where = f" ({', '.join(parts)})" if parts else ""
    if pool.competed:
        more = "; the retrieve step ranked no further chunk" if not len(pool.tail_rows) else ""
    else:
        more = "; compete=True would let the retrieve step's next candidates fill the budget" if can_compete else ""
    found = skipped.get("candidates", 0) + skipped.get("gated", 0)
    return (f"expand_relations added {added} of {limit} hit{'s' if limit != 1 else ''}: {found} "
            f"candidate{'s' if found != 1 else ''} in all{where}{more}.")
