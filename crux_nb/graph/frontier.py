"""Vectorised graph traversal for ``expand_relations``: breadth-first frontiers over one CSR of every
neighbour (structural first, then persisted, in ``neighbors()`` order), no per-node Python reads.

The traversal is upstream's, generation by generation: per seed a FIFO breadth-first search where a
node keeps the distance of its first discovery, a node at ``distance >= depth`` is not read, at most
``fan_out`` neighbours per read, and candidates are kept in global discovery order up to a ceiling.
A generation is processed at once: its reads are concatenated CSR slices in frontier order, which is
the order the FIFO queue would read them in, so candidates, distances, paths and warnings are the
ones the per-node traversal gives.

The relevance ranking adds *mass*: a seed starts with its weight; every read passes a node's mass to
each neighbour, scaled by the node's specificity when the node is a waypoint (an entity, section or
document: ``1 / |chunks adjacent to it|``, HippoRAG's node specificity; a chunk passes its mass on
whole). A candidate's graph score is the mass it receives. A node passes on the mass that reached it
from earlier generations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..refs import DocumentRef, ParentRef, decode_ref, encode_ref

__all__ = ["TraversalIndex", "Traversal", "traverse", "KIND_CHUNK", "KIND_ENTITY"]

KIND_CHUNK, KIND_ENTITY, KIND_OTHER = 0, 1, 2
STRUCTURAL_TYPES = ("hierarchy", "sequence")


class TraversalIndex:
    """Every node's neighbour list (structural, then persisted) as one CSR, built once per reader."""

    def __init__(self, state, adjacency):
        chunks, parents, docs = state.chunks, state.parents, state.documents
        chunk_refs = chunks["ref"].tolist()
        parent_refs = [encode_ref(ParentRef(s, p)) for s, p in zip(parents["source_id"], parents["parent_id"])]
        doc_refs = [encode_ref(DocumentRef(s)) for s in docs["source_id"]]
        refs = np.unique(np.asarray(list(adjacency.refs) + chunk_refs + parent_refs + doc_refs, dtype=object))
        self.refs = refs
        self.code = {r: i for i, r in enumerate(refs.tolist())}
        n = len(refs)
        prefix = pd.Series(refs, dtype=object).str.split(":", n=1).str[0].to_numpy()
        self.kind = np.where(prefix == "chunk", KIND_CHUNK, np.where(prefix == "entity", KIND_ENTITY, KIND_OTHER))
        self.kind = self.kind.astype(np.int8)
        self.type_names = list(dict.fromkeys(list(adjacency.type_names) + list(STRUCTURAL_TYPES)))
        tcode = {t: i for i, t in enumerate(self.type_names)}
        self.chunk_code = np.array([self.code[r] for r in chunk_refs], dtype=np.int64)  # per chunk row
        self.row_of_code = np.full(n, -1, dtype=np.int64)
        self.row_of_code[self.chunk_code] = np.arange(len(chunk_refs))
        # structural entries, each node's list in neighbors() order (sorted projection)
        s_node, s_peer, s_type, s_dir, s_pos = [], [], [], [], []
        structure = _structure(state)
        for ref in chunk_refs + parent_refs + doc_refs:
            decoded = decode_ref(ref)
            projected = sorted(structure.project(decoded.kind, decoded.segments(), ref))
            node = self.code[ref]
            for pos, (_, peer, t, d) in enumerate(projected):
                s_node.append(node)
                s_peer.append(self.code[peer])
                s_type.append(tcode[t])
                s_dir.append(0 if d == "out" else 1)
                s_pos.append(pos)
        remap = np.array([self.code[r] for r in adjacency.refs], dtype=np.int64)
        p_node = remap[np.repeat(np.arange(len(adjacency.refs)), np.diff(adjacency.indptr))] if len(remap) else \
            np.zeros(0, dtype=np.int64)
        p_peer = remap[adjacency.peer] if len(remap) else np.zeros(0, dtype=np.int64)
        ptype_map = np.array([tcode[t] for t in adjacency.type_names], dtype=np.int32)
        p_type = ptype_map[adjacency.etype] if len(ptype_map) else np.zeros(0, dtype=np.int32)
        node = np.concatenate([np.asarray(s_node, dtype=np.int64), p_node])
        section = np.concatenate([np.zeros(len(s_node), dtype=np.int8), np.ones(len(p_node), dtype=np.int8)])
        pos = np.concatenate([np.asarray(s_pos, dtype=np.int64), np.arange(len(p_node), dtype=np.int64)])
        order = np.lexsort((pos, section, node))
        self.node = node[order]
        self.peer = np.concatenate([np.asarray(s_peer, dtype=np.int64), p_peer])[order]
        self.etype = np.concatenate([np.asarray(s_type, dtype=np.int32), p_type])[order]
        self.direction = np.concatenate([np.asarray(s_dir, dtype=np.int8),
                                         np.asarray(adjacency.direction, dtype=np.int8)])[order]
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(self.node, minlength=n))]).astype(np.int64)
        self._views: dict[tuple, View] = {}

    def view(self, types: frozenset[str] | None, direction: int | None, fan_out: int) -> View:
        """The neighbour lists cut by type, direction and the fan-out ceiling (cached per key)."""
        key = (types, direction, fan_out)
        cached = self._views.get(key)
        if cached is None:
            mask = np.ones(len(self.peer), dtype=bool)
            if types is not None:
                codes = [i for i, t in enumerate(self.type_names) if t in types]
                mask &= np.isin(self.etype, np.asarray(codes, dtype=np.int32))
            if direction is not None:
                mask &= self.direction == direction
            idx = np.flatnonzero(mask)
            owner = self.node[idx]
            counts = np.bincount(owner, minlength=len(self.refs))
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            rank = np.arange(len(idx)) - starts[owner]
            keep = idx[rank < fan_out]
            kept = np.minimum(counts, fan_out)
            # specificity of a waypoint: 1 / distinct chunk neighbours (all of them, not only the first 64)
            chunk_peer = self.kind[self.peer[idx]] == KIND_CHUNK
            pairs = np.unique(owner[chunk_peer] * len(self.refs) + self.peer[idx][chunk_peer])
            df = np.bincount(pairs // max(len(self.refs), 1), minlength=len(self.refs)).astype(float)
            spec = np.where(self.kind == KIND_CHUNK, 1.0, 1.0 / np.maximum(df, 1.0))
            cached = self._views[key] = View(
                indptr=np.concatenate([[0], np.cumsum(kept)]).astype(np.int64), peer=self.peer[keep],
                etype=self.etype[keep], truncated=counts >= fan_out, spec=spec, df=df, fan_out=fan_out)
        return cached


@dataclass(frozen=True)
class View:
    indptr: np.ndarray
    peer: np.ndarray
    etype: np.ndarray
    truncated: np.ndarray  # a read of this node returns fan_out neighbours (the warning's condition)
    spec: np.ndarray
    df: np.ndarray
    fan_out: int


def _structure(state):
    from .structure import StructureIndex

    return StructureIndex(state.parents, state.chunks)


@dataclass
class Traversal:
    """Candidates in discovery order with their best (distance, seed rank) route, support and mass."""

    codes: np.ndarray
    distance: np.ndarray
    seed_rank: np.ndarray
    support: np.ndarray  # number of distinct seeds reaching each candidate
    mass: np.ndarray
    warnings: list[str]
    _via: np.ndarray = field(repr=False, default=None)
    _via_type: np.ndarray = field(repr=False, default=None)
    _trees: list = field(repr=False, default_factory=list)
    _touched: list = field(repr=False, default_factory=list)
    _seeds: list = field(repr=False, default_factory=list)

    def path(self, i: int) -> tuple[list[int], list[int]]:
        """(node codes from the seed, edge type codes) of candidate ``i``'s recorded route."""
        rank = int(self.seed_rank[i])
        parent, ptype = self._trees[rank]
        nodes, types = [int(self.codes[i])], [int(self._via_type[i])]
        node = int(self._via[i])
        while node != self._seeds[rank]:
            nodes.append(node)
            types.append(int(ptype[node]))
            node = int(parent[node])
        nodes.append(node)
        return nodes[::-1], types[::-1]

    def supports(self, i: int) -> list[int]:
        """Codes of the distinct seeds whose traversal reached candidate ``i``, sorted."""
        code = int(self.codes[i])
        return sorted({self._seeds[r] for r, touched in enumerate(self._touched)
                       if touched is not None and touched[code]})


class _Run:
    """The state of one traversal across seeds: candidates, their best routes, warnings."""

    def __init__(self, index: TraversalIndex, view: View, *, depth: int, entity_hops: str, max_candidates: int):
        n = len(index.refs)
        self.index, self.view, self.depth, self.max_candidates = index, view, depth, max_candidates
        self.free = entity_hops == "free"
        self.entity = index.kind == KIND_ENTITY
        self.slot = np.full(n, -1, dtype=np.int64)
        self.codes: list[np.ndarray] = []
        self.count = 0
        big = np.iinfo(np.int64).max
        self.best_dist = np.full(n, big, dtype=np.int64)
        self.best_rank = np.full(n, big, dtype=np.int64)
        self.via = np.full(n, -1, dtype=np.int64)
        self.via_type = np.full(n, -1, dtype=np.int64)
        self.mass = np.zeros(n)
        self.support = np.zeros(n, dtype=np.int64)
        self.warnings: list[str] = []
        self.capped = False
        self.scratch = np.full(n, -1, dtype=np.int64)

    def first(self, values: np.ndarray) -> np.ndarray:
        """Positions of each value's first occurrence, in position order (no sort: a scatter, then a gather)."""
        if not len(values):
            return np.zeros(0, dtype=np.int64)
        idx = np.arange(len(values))
        self.scratch[values[::-1]] = idx[::-1]  # later writes win: the earliest position stays
        firsts = idx[self.scratch[values] == idx]
        self.scratch[values] = -1
        return firsts

    def reads(self, exp: np.ndarray, edist: np.ndarray):
        """Every kept entry of one generation's reads, in read order: (source position, peer, type, distance)."""
        view = self.view
        starts, stops = view.indptr[exp], view.indptr[exp + 1]
        lengths = stops - starts
        src = np.repeat(np.arange(len(exp)), lengths)
        entries = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(len(src))
        peer, etype = view.peer[entries], view.etype[entries]
        here = exp[src]
        if self.free:
            cost = ~(self.entity[here] | self.entity[peer])
        else:
            cost = ~(self.entity[peer] & ~self.entity[here])
        nxt = edist[src] + cost
        keep = nxt <= self.depth
        return src[keep], peer[keep], etype[keep], here[keep], nxt[keep]

    def candidates(self, rank: int, seed: int, src, peer, etype, here, nxt, contrib, touched) -> int | None:
        """Create, support and improve candidates from one generation's entries; the read position that hit
        the candidate ceiling, if one did."""
        is_c = peer != seed
        cp, cn, cs, ch, ct = peer[is_c], nxt[is_c], src[is_c], here[is_c], etype[is_c]
        if not len(cp):
            return None
        cap_at = None
        new = self.first(cp)
        new = new[self.slot[cp[new]] < 0]
        room = self.max_candidates - self.count
        if len(new) > room:
            if not self.capped:
                cap_at, self.capped = int(cs[new[room]]), True
            new = new[:room]
        self.slot[cp[new]] = self.count + np.arange(len(new))
        self.codes.append(cp[new])
        self.count += len(new)
        ok = self.slot[cp] >= 0
        cp, cn, ch, ct = cp[ok], cn[ok], ch[ok], ct[ok]
        if contrib is not None:
            self.mass += np.bincount(cp, weights=contrib[is_c][ok], minlength=len(self.mass))
        touched[cp] = True
        # per peer, the first entry with the smallest distance improves a strictly worse best
        for d in np.unique(cn).tolist():
            at = np.flatnonzero(cn == d)
            head = at[self.first(cp[at])]
            hp = cp[head]
            better = (d < self.best_dist[hp]) | ((d == self.best_dist[hp]) & (rank < self.best_rank[hp]))
            hp, head = hp[better], head[better]
            self.best_dist[hp], self.best_rank[hp] = d, rank
            self.via[hp], self.via_type[hp] = ch[head], ct[head]
        return cap_at

    def warn(self, exp: np.ndarray, cap_at: int | None) -> None:
        """Fan-out warnings in read order; the candidate warning right after the read that hit the ceiling."""
        truncated = np.flatnonzero(self.view.truncated[exp])
        refs, fan_out = self.index.refs, self.view.fan_out
        events = [(pos, 0, f"expand_relations truncated neighbors for {refs[exp[pos]]} at {fan_out}.")
                  for pos in truncated.tolist()]
        if cap_at is not None:
            events.append((cap_at, 1, f"expand_relations truncated graph candidates at {self.max_candidates}."))
        self.warnings += [message for _, _, message in sorted(events)]

    def seed(self, rank: int, seed: int, weight: float | None):
        """One seed's breadth-first search, a generation at a time; its (parent, type) tree and touched mask."""
        n = len(self.index.refs)
        parent = np.full(n, -1, dtype=np.int64)
        ptype = np.full(n, -1, dtype=np.int64)
        seen = np.zeros(n, dtype=bool)
        touched = np.zeros(n, dtype=bool)
        seen[seed] = True
        mass = None
        if weight is not None:
            mass = np.zeros(n)
            mass[seed] = weight
        frontier, fdist = np.array([seed], dtype=np.int64), np.zeros(1, dtype=np.int64)
        while len(frontier):
            live = fdist < self.depth
            exp, edist = frontier[live], fdist[live]
            if not len(exp):
                break
            src, peer, etype, here, nxt = self.reads(exp, edist)
            contrib = None if mass is None else mass[here] * self.view.spec[here]
            cap_at = self.candidates(rank, seed, src, peer, etype, here, nxt, contrib, touched)
            self.warn(exp, cap_at)
            if mass is not None:  # mass reaching a node in this generation is what it passes on when read
                mass += np.bincount(peer, weights=contrib, minlength=n)
            fresh = np.flatnonzero(~seen[peer])
            first = fresh[self.first(peer[fresh])]
            frontier, fdist = peer[first], nxt[first]
            seen[frontier] = True
            parent[frontier], ptype[frontier] = here[first], etype[first]
        return (parent, ptype), touched


def traverse(index: TraversalIndex, view: View, seeds: list[int | None], *, depth: int, entity_hops: str,
             max_candidates: int, weights: np.ndarray | None = None) -> Traversal:
    """Upstream's per-seed breadth-first traversal, one generation per step (see the module docstring).

    ``seeds`` are node codes (``None`` for a seed not in the index); ``weights`` (one per seed) turn on
    the relevance ranking's mass. Examples: see ``tests/test_frontier.py`` (checked against the per-node
    traversal) and :meth:`crux_nb.graph.GraphReader.traversal_index`.
    """
    run = _Run(index, view, depth=depth, entity_hops=entity_hops, max_candidates=max_candidates)
    trees, touched_masks, seed_codes, counted = [], [], [], set()
    for rank, seed in enumerate(seeds):
        seed_codes.append(-1 if seed is None else seed)
        if seed is None:
            trees.append((None, None))
            touched_masks.append(None)
            continue
        tree, touched = run.seed(rank, seed, None if weights is None else float(weights[rank]))
        trees.append(tree)
        touched_masks.append(touched)
        if seed not in counted:  # support counts distinct seed refs: a repeated seed adds nothing
            counted.add(seed)
            run.support += touched
    codes = np.concatenate(run.codes).astype(np.int64) if run.codes else np.zeros(0, dtype=np.int64)
    return Traversal(codes=codes, distance=run.best_dist[codes], seed_rank=run.best_rank[codes],
                     support=run.support[codes], mass=run.mass[codes], warnings=run.warnings,
                     _via=run.via[codes], _via_type=run.via_type[codes], _trees=trees, _touched=touched_masks,
                     _seeds=seed_codes)
