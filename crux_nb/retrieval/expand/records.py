"""What ``expand_relations`` records per added hit (the expansion view, the workbench and exports read them), and
the hits it builds with them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...graph.frontier import KIND_CHUNK
from ...hits import GraphProvenance, Provenance
from ...refs import ChunkRef, encode_ref
from ..retriever.lexical import RRF_K

__all__ = ["Expansion", "ExpansionReason", "graph_hit", "tail_hit"]


@dataclass(frozen=True)
class ExpansionReason:
    """Why the relevance ranking placed a hit: the waypoints on its path with their specificity
    (``1/|chunks adjacent|``) and the parts of its score: its mass ``graph``, its ``relevance``, and ``title``, the
    source-name term (``title_weight`` x how fully the query names its source; :mod:`.titles`), so that
    ``score = relevance + graph_weight x sqrt(graph) + title`` (a structural neighbour: without the graph term)."""

    entities: tuple[tuple[str, float], ...]
    graph: float
    relevance: float
    score: float
    title: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = {"entities": [[r, w] for r, w in self.entities], "graph": self.graph, "relevance": self.relevance,
               "score": self.score}
        return {**out, "title": self.title} if self.title else out  # exports from before the term stay as they were


@dataclass(frozen=True)
class Expansion:
    """One added hit and how it was reached (what the expansion view shows)."""

    key: str
    ref: str
    seed: str
    path: tuple[str, ...]
    edges: tuple[str, ...]
    distance: int
    score: float
    position: int
    supports: tuple[str, ...]
    reason: ExpansionReason | None = None  # the relevance ranking's reason; None under "upstream"
    via: str = "graph"  # "retrieve": the retrieve step's next candidate, which outranked the graph's (no route)


def _title(pool: Any, i: int) -> float:
    return 0.0 if pool.title is None else float(pool.title[i])


def graph_hit(binding: Any, index, view, found, pool: Any, i: int, row: int, key: str, position: int):
    """The hit and record of pool candidate ``i``, reached through the graph (its route from ``found``)."""
    nodes, etypes = found.path(i)
    path = tuple(index.refs[n] for n in nodes)
    edges = tuple(index.type_names[t] for t in etypes)
    reason = None
    if pool.score is None:
        score = 1 / (RRF_K + position + 1) + 1 / (RRF_K + int(found.seed_rank[i]) + 1)
    else:
        score = float(pool.score[i])
        waypoints = tuple((index.refs[n], float(view.spec[n])) for n in nodes[1:-1] if index.kind[n] != KIND_CHUNK)
        reason = ExpansionReason(entities=waypoints, graph=float(pool.graph[i]), relevance=float(pool.relevance[i]),
                                 score=score, title=_title(pool, i))
    distance = int(found.distance[i])
    graph = GraphProvenance(seed=path[0], path=path, edges=edges, distance=distance)
    # built whole, by the reader: the binding admitted the row above (a hydrated chunk's raw score is 0)
    hit = binding.reader.hydrate_row(row, score=score,
                                     provenance=Provenance(raw_score=0.0, fused_score=score, graph=graph))
    return hit, Expansion(key=key, ref=path[-1], seed=path[0], path=path, edges=edges, distance=distance,
                          score=score, position=position, supports=tuple(index.refs[s] for s in found.supports(i)),
                          reason=reason)


def tail_hit(binding: Any, pool: Any, i: int, row: int, key: str, position: int):
    """A retrieve candidate the graph did not reach that outranked the remaining graph candidates: its
    provenance is the retrieve step's ranking (no graph route), and its record says so (``via``)."""
    score = float(pool.score[i])
    rank = int(pool.tail_ranks[i - pool.n_graph])
    hit = binding.reader.hydrate_row(row, score=score,
                                     provenance=Provenance(raw_score=0.0, fused_score=score, ranks={"retrieve": rank}))
    ref = encode_ref(ChunkRef(hit.source.id, hit.chunk_id))
    reason = ExpansionReason(entities=(), graph=0.0, relevance=float(pool.relevance[i]), score=score,
                             title=_title(pool, i))
    return hit, Expansion(key=key, ref=ref, seed="", path=(ref,), edges=(), distance=0, score=score,
                          position=position, supports=(), reason=reason, via="retrieve")
