"""Hierarchical Leiden under a report budget (DESIGN 4.1).

1. Leiden (igraph, modularity, seeded) over the whole community graph.
2. Communities without chunks join the neighbour they are most linked to.
3. Any community whose estimated report input exceeds the leaf budget is split
   again by Leiden on its own subgraph (at rising resolution; bisected in
   document order as a last resort) until every leaf fits. Split communities
   become parents. Leiden on a dense subgraph returns many small groups, so the
   groups of a split are packed back together (upstream's greedy agglomeration:
   the most strongly linked pair whose merged input still fits goes first, then
   neighbours in node order) before recursing; without it a corpus of
   near-duplicate passages got about one leaf per chunk.
4. While there are more than ``max_children`` top communities, Leiden over the
   graph of communities groups them into coarser parents. One root on top.

Levels count up from the leaves (leaf 0; parent = 1 + max child level). Ids
hash the sorted member refs and the level, so the same input and seed give the
same communities whatever the input row order.
"""

from __future__ import annotations

import heapq
import random
from collections import defaultdict
from dataclasses import dataclass

from .._hashing import stable_hash
from ..errors import InputError
from .graph_input import CommunityGraph

LEAF_BUDGET = 24_000
MAX_CHILDREN = 8
_MAX_DOUBLINGS = 8


@dataclass(frozen=True)
class Node:
    """A community while the tree is built: member node indices and children."""

    members: tuple[int, ...]
    children: tuple[Node, ...] = ()

    @property
    def level(self) -> int:
        return 0 if not self.children else 1 + max(c.level for c in self.children)


@dataclass(frozen=True)
class Community:
    community_id: str
    level: int
    kind: str  # "leaf" | "parent" | "root"
    parent_id: str | None
    child_ids: tuple[str, ...]
    chunk_refs: tuple[str, ...]
    entity_refs: tuple[str, ...]
    estimated_chars: int


class _Clusterer:
    def __init__(self, graph: CommunityGraph, *, resolution: float, seed: int, budget: int, max_children: int):
        import igraph as ig

        self.ig = ig
        self.graph = graph
        self.resolution, self.seed, self.budget, self.max_children = resolution, seed, budget, max_children
        self.adj: list[dict[int, float]] = [dict() for _ in graph.nodes]
        for i, j, w in graph.links:
            self.adj[i][j] = self.adj[i].get(j, 0.0) + w
            self.adj[j][i] = self.adj[j].get(i, 0.0) + w

    def size(self, members: tuple[int, ...]) -> int:
        return sum(self.graph.sizes[i] for i in members)

    def chunks(self, members: tuple[int, ...]) -> list[int]:
        return [i for i in members if self.graph.is_chunk(i)]

    def leiden(self, members: tuple[int, ...], links: list[tuple[int, int, float]], resolution: float) -> list[tuple[int, ...]]:
        """Groups of ``members`` (sorted) found by seeded Leiden on the given local links."""
        g = self.ig.Graph(n=len(members), edges=[(i, j) for i, j, _ in links])
        state = random.getstate()
        self.ig.set_random_number_generator(random.Random(self.seed))
        try:
            part = g.community_leiden(objective_function="modularity", weights=[w for *_, w in links] or None,
                                      resolution=resolution, n_iterations=2)
        finally:
            self.ig.set_random_number_generator(random)
            random.setstate(state)
        groups: dict[int, list[int]] = defaultdict(list)
        for local, label in enumerate(part.membership):
            groups[label].append(members[local])
        return sorted((tuple(sorted(g)) for g in groups.values()), key=lambda m: m[0])

    def local_links(self, members: tuple[int, ...]) -> list[tuple[int, int, float]]:
        pos = {m: k for k, m in enumerate(members)}
        return [(pos[i], pos[j], w) for i in members for j, w in sorted(self.adj[i].items()) if j in pos and i < j]

    def attach_chunkless(self, groups: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """Merge groups with no chunk into the chunked group they link to most."""
        owner = {m: k for k, g in enumerate(groups) for m in g}
        merged = {k: list(g) for k, g in enumerate(groups)}
        for k, g in enumerate(groups):
            if self.chunks(g):
                continue
            weight: dict[int, float] = defaultdict(float)
            for m in g:
                for n, w in self.adj[m].items():
                    if owner.get(n) is not None and owner[n] != k and self.chunks(groups[owner[n]]):
                        weight[owner[n]] += w
            if weight:
                target = sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
                merged[target].extend(merged.pop(k))
        return sorted((tuple(sorted(g)) for g in merged.values() if g), key=lambda m: m[0])

    def split(self, members: tuple[int, ...]) -> Node:
        chunks = self.chunks(members)
        if self.size(members) <= self.budget or len(chunks) <= 1:
            if len(chunks) == 1 and self.graph.sizes[chunks[0]] > self.budget:
                raise InputError(f"chunk {self.graph.nodes[chunks[0]]!r} has {self.graph.sizes[chunks[0]]} characters "
                                 f"and exceeds the input budget ({self.budget}).",
                                 hint="re-add the source with a smaller chunk_size.")
            return Node(members)
        links = self.local_links(members)
        resolution = self.resolution
        for _ in range(_MAX_DOUBLINGS):
            groups = self.attach_chunkless(self.leiden(members, links, resolution))
            if len(groups) > 1:
                break
            resolution *= 2
        else:
            groups = self.bisect(members)
        return Node(members, tuple(self.split(g) for g in self.pack(groups)))

    def pack(self, groups: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """Merge linked groups while the merged input fits the budget, heaviest link first
        (ties: lower group positions). Sizes only grow, so a pair that does not fit never will."""
        owner = {m: k for k, g in enumerate(groups) for m in g}
        links: list[dict[int, float]] = [defaultdict(float) for _ in groups]
        for k, g in enumerate(groups):
            for m in g:
                for n, w in self.adj[m].items():
                    other = owner.get(n)
                    if other is not None and other != k:
                        links[k][other] += w
        sizes = [self.size(g) for g in groups]
        members = [list(g) for g in groups]
        heap = [(-w, a, b) for a in range(len(groups)) for b, w in links[a].items() if a < b]
        heapq.heapify(heap)
        while heap:
            neg, a, b = heapq.heappop(heap)
            if members[a] is None or members[b] is None or links[a].get(b) != -neg:
                continue  # a merged-away group or an outdated weight
            if sizes[a] + sizes[b] > self.budget:
                continue
            members[a] += members[b]
            sizes[a] += sizes[b]
            members[b] = None
            for c, w in links[b].items():
                if c == a:
                    continue
                links[a][c] += w
                links[c][a] = links[c].get(a, 0.0) + w
                links[c].pop(b, None)
                heapq.heappush(heap, (-links[a][c], min(a, c), max(a, c)))
            links[a].pop(b, None)
            links[b] = {}
        return self.fill(sorted((tuple(sorted(m)) for m in members if m is not None), key=lambda m: m[0]))

    def fill(self, groups: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """Then pack groups that share no link in node order (chunk refs sort in document order):
        a split of a hub entity's star leaves its spokes unlinked to each other."""
        out: list[list[int]] = []
        size = 0
        for g in groups:
            g_size = self.size(g)
            if out and size + g_size <= self.budget:
                out[-1].extend(g)
                size += g_size
            else:
                out.append(list(g))
                size = g_size
        return [tuple(sorted(g)) for g in out]

    def bisect(self, members: tuple[int, ...]) -> list[tuple[int, ...]]:
        chunks = sorted(self.chunks(members), key=lambda i: self.graph.nodes[i])
        halves = [set(chunks[: len(chunks) // 2]), set(chunks[len(chunks) // 2:])]
        for m in members:
            if not self.graph.is_chunk(m):
                side = [sum(w for n, w in self.adj[m].items() if n in h) for h in halves]
                halves[0 if side[0] >= side[1] else 1].add(m)
        return sorted((tuple(sorted(h)) for h in halves), key=lambda g: g[0])

    def coarsen(self, tops: list[Node]) -> list[Node]:
        while len(tops) > self.max_children:
            owner = {m: k for k, t in enumerate(tops) for m in t.members}
            weights: dict[tuple[int, int], float] = defaultdict(float)
            for i, j, w in self.graph.links:
                a, b = owner.get(i), owner.get(j)
                if a is not None and b is not None and a != b:
                    weights[(min(a, b), max(a, b))] += w
            links = sorted((a, b, w) for (a, b), w in weights.items())
            groups = self.leiden(tuple(range(len(tops))), links, self.resolution)
            if len(groups) >= len(tops) or len(groups) <= 1:
                break
            tops = [tops[g[0]] if len(g) == 1 else Node(tuple(sorted(m for k in g for m in tops[k].members)),
                                                        tuple(tops[k] for k in g)) for g in groups]
        return tops


def cluster(graph: CommunityGraph, *, resolution: float = 1.0, seed: int = 0, budget: int = LEAF_BUDGET,
            max_children: int = MAX_CHILDREN) -> list[Community]:
    """Communities of ``graph`` as a tree (parents before children, then by level and id)."""
    if graph.chunk_count == 0:
        return []
    c = _Clusterer(graph, resolution=resolution, seed=seed, budget=budget, max_children=max_children)
    everything = tuple(range(len(graph.nodes)))
    base = c.attach_chunkless(c.leiden(everything, list(graph.links), resolution))
    tops = c.coarsen([c.split(g) for g in base])
    root = tops[0] if len(tops) == 1 else Node(everything, tuple(tops))
    return _flatten(c, root)


def _flatten(c: _Clusterer, root: Node) -> list[Community]:
    out: list[Community] = []

    def walk(node: Node, parent_id: str | None, is_root: bool) -> str:
        names = [c.graph.nodes[i] for i in node.members]
        cid = "c-" + stable_hash({"members": sorted(names), "level": node.level}, length=12)
        kind = "root" if is_root else ("parent" if node.children else "leaf")
        index = len(out)
        out.append(None)  # placeholder keeps parents before children
        child_ids = tuple(walk(child, cid, False) for child in node.children)
        out[index] = Community(community_id=cid, level=node.level, kind=kind, parent_id=parent_id,
                               child_ids=tuple(sorted(child_ids)),
                               chunk_refs=tuple(sorted(n for n in names if n.startswith("chunk:"))),
                               entity_refs=tuple(sorted(n for n in names if n.startswith("entity:"))),
                               estimated_chars=c.size(node.members))
        return cid

    walk(root, None, True)
    return out
