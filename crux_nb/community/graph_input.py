"""The graph that communities are found in (upstream section 5.2, visible-only).

Nodes are visible chunks and the entities they mention. Links: chunk–entity
(one per supporting mention), entity–entity (distinct supporting chunks of
their relations plus the chunks that mention both), and, so that chunks that
mention nothing still cluster near their context, residual chunks linked to
their neighbours in the same source with a small weight.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pandas as pd

RESIDUAL_WEIGHT = 0.1


@dataclass(frozen=True)
class CommunityGraph:
    """Sorted node names, weighted links between node indices, and per-node report input sizes.

    ``nodes``: chunk refs, then entity refs, sorted; ``links``: ``(i, j, weight)`` with ``i < j``, sorted;
    ``sizes``: estimated report input characters per node; ``chunk_count``: how many nodes are chunks
    (the first ones). Built by :func:`crux_nb.community.community_graph`, or by hand.

    Examples
    --------
    >>> g = CommunityGraph(nodes=("chunk:a:1", "entity:x"), links=((0, 1, 2.0),), sizes=(40, 5), chunk_count=1)
    >>> g.is_chunk(0), g.is_chunk(1)
    (True, False)
    """

    nodes: tuple[str, ...]  # chunk refs and entity refs, sorted
    links: tuple[tuple[int, int, float], ...]  # (i, j, weight) with i < j, sorted
    sizes: tuple[int, ...]  # estimated report input characters per node
    chunk_count: int

    def is_chunk(self, i: int) -> bool:
        """Whether node ``i`` is a chunk (else an entity).

        Examples
        --------
        >>> import crux_nb
        >>> from crux_nb.community import community_graph
        >>> g = community_graph(crux_nb.datasets.load_tiny(entities=True))
        >>> [(g.nodes[i], g.is_chunk(i)) for i in (0, g.chunk_count)], g.chunk_count
        ([('chunk:ops.md:c0000', True), ('entity:atlas', False)], 3)
        """
        return self.nodes[i].startswith("chunk:")


def build_graph(state: Any, visible_sources: set[str] | None = None) -> CommunityGraph:
    chunks = state.chunks
    if visible_sources is not None:
        chunks = chunks[chunks["source_id"].isin(visible_sources)]
    chunk_refs = chunks["ref"].tolist()
    visible = set(chunk_refs)
    chars = dict(zip(chunk_refs, chunks["n_chars"].tolist()))
    edges, evidence = state.edges, state.edge_evidence
    supports: dict[str, list[str]] = defaultdict(list)
    for edge_id, chunk_ref in zip(evidence["edge_id"].tolist(), evidence["chunk_ref"].tolist()):
        supports[edge_id].append(chunk_ref)
    mention_w: dict[tuple[str, str], float] = defaultdict(float)
    mentioned_by: dict[str, set[str]] = defaultdict(set)  # chunk -> entities
    pair_chunks: dict[tuple[str, str], set[str]] = defaultdict(set)
    for edge_id, etype, a, b in zip(edges["edge_id"].tolist(), edges["type"].tolist(), edges["from_ref"].tolist(),
                                    edges["to_ref"].tolist()):
        a_ent, b_ent = a.startswith("entity:"), b.startswith("entity:")
        support = supports.get(edge_id, [])
        if etype == "mentions" and a_ent != b_ent:
            chunk, entity = (b, a) if a_ent else (a, b)
            for key in {chunk, *support}:
                if key in visible:
                    mention_w[(key, entity)] += 1.0
                    mentioned_by[key].add(entity)
        elif a_ent and b_ent and a != b:
            pair_chunks[tuple(sorted((a, b)))].update(c for c in support if c in visible)
    for chunk, ents in mentioned_by.items():
        ordered = sorted(ents)
        for i, x in enumerate(ordered):
            for y in ordered[i + 1:]:
                pair_chunks[(x, y)].add(f"co:{chunk}")
    entity_names = dict(zip(state.entities["ref"], state.entities["canonical_name"]))
    entity_desc = dict(zip(state.entities["ref"], state.entities["description"]))
    visible_entities = sorted({e for _, e in mention_w})
    nodes = tuple(sorted(chunk_refs) + visible_entities)
    index = {n: i for i, n in enumerate(nodes)}
    weights: dict[tuple[int, int], float] = defaultdict(float)
    for (chunk, entity), w in mention_w.items():
        weights[_pair(index[chunk], index[entity])] += w
    for (x, y), support in pair_chunks.items():
        if x in index and y in index and support:
            weights[_pair(index[x], index[y])] += float(len(support))
    residual = [r for r in chunk_refs if r not in mentioned_by]
    if residual:
        _link_residuals(chunks, set(residual), index, weights)
    sizes = tuple(chars[n] if n in chars else entity_size(entity_names.get(n, n), entity_desc.get(n)) for n in nodes)
    links = tuple(sorted((i, j, w) for (i, j), w in weights.items() if w > 0))
    return CommunityGraph(nodes=nodes, links=links, sizes=sizes, chunk_count=len(chunk_refs))


def _pair(i: int, j: int) -> tuple[int, int]:
    return (i, j) if i < j else (j, i)


def entity_size(name: Any, description: Any) -> int:
    return len(str(name)) + (len(description) if isinstance(description, str) else 0) + 2


def _link_residuals(chunks: pd.DataFrame, residual: set[str], index: dict[str, int], weights: dict) -> None:
    for _, part in chunks.groupby("source_id", sort=True):
        refs = part.sort_values(["ordinal", "chunk_id"])["ref"].tolist()
        for prev, cur in zip(refs, refs[1:]):
            if prev in residual or cur in residual:
                weights[_pair(index[prev], index[cur])] += RESIDUAL_WEIGHT
