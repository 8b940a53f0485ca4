"""``expand_relations``' vectorised traversal as it was before the latency work on branch explat (main at
63508c9, ``crux_nb/graph/frontier.py``), for ``bench/expand_latency.py`` to time against in the same run and
to check the new one against (same hits, order, scores, paths, reasons, warnings), and the trace's warning
collapse as it was. :func:`previous` swaps both in for the duration of a block (single-threaded benchmark
only)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from crux_nb.graph.frontier_index import KIND_CHUNK, KIND_ENTITY, TraversalIndex, View

__all__ = ["TraversalIndex", "Traversal", "traverse", "KIND_CHUNK", "KIND_ENTITY"]

CAP = -1  # the candidate-ceiling warning in the warning stream (other tokens are codes of truncated reads)


@dataclass
class Traversal:
    """Candidates in discovery order with their best (distance, seed rank) route, support and mass."""

    codes: np.ndarray
    distance: np.ndarray
    seed_rank: np.ndarray
    support: np.ndarray  # number of distinct seeds reaching each candidate
    mass: np.ndarray
    _tokens: np.ndarray = field(repr=False, default=None)
    _refs: np.ndarray = field(repr=False, default=None)
    _view: View = field(repr=False, default=None)
    _max_candidates: int = 0
    _via: np.ndarray = field(repr=False, default=None)
    _via_type: np.ndarray = field(repr=False, default=None)
    _trees: list = field(repr=False, default_factory=list)
    _touched: list = field(repr=False, default_factory=list)
    _seeds: list = field(repr=False, default_factory=list)

    def _texts(self, tokens: np.ndarray) -> list[str]:
        texts = self._view.warning_texts(self._refs, np.where(tokens == CAP, 0, tokens))
        cap = f"expand_relations truncated graph candidates at {self._max_candidates}."
        for i in np.flatnonzero(tokens == CAP).tolist():
            texts[i] = cap
        return texts

    @property
    def warnings(self) -> list[str]:
        """Every warning in order: a fan-out cut per truncated read, the candidate ceiling once."""
        return self._texts(self._tokens) if len(self._tokens) else []

    def collapsed_warnings(self) -> list[str]:
        """``collapse_warnings(self.warnings)`` without writing the repeats: each once, with its count."""
        if not len(self._tokens):
            return []
        distinct, first, counts = np.unique(self._tokens, return_index=True, return_counts=True)
        order = np.argsort(first)
        texts = self._texts(distinct[order])
        return [w if n == 1 else f"{w} ({n} times)" for w, n in zip(texts, counts[order].tolist())]

    def path(self, i: int) -> tuple[list[int], list[int]]:
        """(node codes from the seed, edge type codes) of candidate ``i``'s recorded route."""
        rank = int(self.seed_rank[i])
        found_by = self._trees[rank]  # per node of the seed's search, the entry that discovered it
        nodes, types = [int(self.codes[i])], [int(self._via_type[i])]
        node = int(self._via[i])
        while node != self._seeds[rank]:
            nodes.append(node)
            entry = int(found_by[node])
            types.append(int(self._view.etype[entry]))
            node = int(self._view.owner[entry])
        nodes.append(node)
        return nodes[::-1], types[::-1]

    def supports(self, i: int) -> list[int]:
        """Codes of the distinct seeds whose traversal reached candidate ``i``, sorted."""
        code = int(self.codes[i])
        return sorted({self._seeds[r] for r, touched in enumerate(self._touched)
                       if touched is not None and touched[code]})


def _slices(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the CSR slices of ``rows``, concatenated in row order; entries per row)."""
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum())), lengths


class _Run:
    """The state of one traversal across seeds: candidates, their best routes, warnings."""

    #: a terminal generation reads the candidates' incoming entries when fewer than ratio x its own entries
    BACKWARD_RATIO = 1.0

    def __init__(self, index: TraversalIndex, view: View, *, depth: int, entity_hops: str, max_candidates: int):
        n = len(index.refs)
        self.index, self.view, self.depth, self.max_candidates = index, view, depth, max_candidates
        self.cost, self.zero = view.cost[entity_hops], view.zero_cost[entity_hops]
        self.slot = np.full(n, -1, dtype=np.int32)
        self.codes: list[np.ndarray] = []
        self.count = 0
        big = np.iinfo(np.int64).max
        self.best_dist = np.full(n, big, dtype=np.int64)
        self.best_rank = np.full(n, big, dtype=np.int64)
        self.via = np.full(n, -1, dtype=np.int64)
        self.via_type = np.full(n, -1, dtype=np.int64)
        self.mass = np.zeros(max_candidates)  # per candidate slot
        self.tokens: list[np.ndarray] = []
        self.capped = False
        self.scratch = np.full(n, -1, dtype=np.int64)
        self.position = np.full(n, -1, dtype=np.int32)
        self.parts: list[np.ndarray | None] = []  # mass per candidate slot, one part per generation, in order
        self.deferred: list[tuple] = []  # terminal generations past the ceiling, settled in finish()

    def first(self, values: np.ndarray) -> np.ndarray:
        """Positions of each value's first occurrence, in position order (no sort: a scatter, then a gather)."""
        if not len(values):
            return np.zeros(0, dtype=np.int64)
        idx = np.arange(len(values))
        self.scratch[values[::-1]] = idx[::-1]  # later writes win: the earliest position stays
        firsts = idx[self.scratch[values] == idx]
        self.scratch[values] = -1
        return firsts

    def candidates(self, rank, seed, peer, nxt, ent, lengths, contrib, touched) -> int | None:
        """Create, support and improve candidates from one generation's entries; the read position that hit
        the candidate ceiling, if one did."""
        at = np.flatnonzero(peer != seed)
        cp = peer[at]
        if not len(cp):
            return None
        cap_at = None
        if not self.capped:
            new = self.first(cp)
            new = new[self.slot[cp[new]] < 0]
            room = self.max_candidates - self.count
            if len(new) > room:
                cap_at = int(np.searchsorted(np.cumsum(lengths), at[new[room]], side="right"))
                self.capped = True
                new = new[:room]
            self.slot[cp[new]] = self.count + np.arange(len(new))
            self.codes.append(cp[new])
            self.count += len(new)
        slots = self.slot[cp]
        ok = np.flatnonzero(slots >= 0)
        at, cp = at[ok], cp[ok]
        if contrib is not None:
            self.parts.append(np.bincount(slots[ok], weights=contrib[at], minlength=len(self.mass)))
        touched[cp] = True
        # per peer, the first entry with the smallest distance improves a strictly worse best; entries that do
        # not beat the best before this generation never do (the best only improves), so only those are looked at
        cn, bd = nxt[at], self.best_dist[cp]
        better = np.flatnonzero((cn < bd) | ((cn == bd) & (rank < self.best_rank[cp])))
        at, cp, cn = at[better], cp[better], cn[better]
        for d in np.flatnonzero(np.bincount(cn)).tolist() if len(cn) else ():
            same = np.flatnonzero(cn == d)
            head = same[self.first(cp[same])]
            hp = cp[head]
            improve = (d < self.best_dist[hp]) | ((d == self.best_dist[hp]) & (rank < self.best_rank[hp]))
            hp, head = hp[improve], at[head[improve]]
            self.best_dist[hp], self.best_rank[hp] = d, rank
            self.via[hp], self.via_type[hp] = self.view.owner[ent[head]], self.view.etype[ent[head]]
        return cap_at

    def terminal(self, seed: int, exp: np.ndarray, passed: np.ndarray | None, touched: np.ndarray) -> None:
        """A terminal generation after the ceiling: mass and support of the fixed candidates only, settled for
        every seed at once in :meth:`finish` (its mass keeps its place in the sum). No best route changes
        (every entry lands at ``depth``, and each best is at most ``depth`` from a seed of this rank or an
        earlier one)."""
        self.deferred.append((len(self.parts), seed, exp, passed, touched))
        self.parts.append(None)

    def finish(self) -> None:
        """Settle the deferred terminal generations: through the candidates' incoming entries (one read for
        up to 63 seeds, a bit per seed) when they are fewer than the generations' own entries, else by reading
        those; then add up the mass parts in traversal order."""
        view, deferred = self.view, self.deferred
        if deferred:
            transposed_indptr, by_peer = view.transposed()
            ent = by_peer[_slices(transposed_indptr, np.concatenate(self.codes))[0]]
            owner = view.owner[ent].astype(np.int32)
            forward = sum(int(view.degree[exp].sum()) for _, _, exp, _, _ in deferred)
            backward = len(ent) < forward * self.BACKWARD_RATIO
        for start in range(0, len(deferred), 63):
            group = deferred[start:start + 63]
            if backward:
                bits = np.zeros(len(self.slot), dtype=np.uint64)
                for j, (_, _, exp, _, _) in enumerate(group):
                    bits[exp] |= np.uint64(1 << j)
                found = np.flatnonzero(bits[owner])
                fbits, fowner, fent = bits[owner[found]], owner[found], ent[found]
            for j, (part, seed, exp, passed, touched) in enumerate(group):
                if backward:  # this seed's share of the incoming entries, in read order
                    mine = np.flatnonzero(fbits & np.uint64(1 << j))
                    position = self.position
                    position[exp] = np.arange(len(exp), dtype=np.int32)
                    pos = position[fowner[mine]]
                    position[exp] = -1
                    order = np.argsort(pos.astype(np.int64) * len(view.peer) + fent[mine])
                    src, peer = pos[order], view.peer[fent[mine][order]]
                else:
                    entries, lengths = _slices(view.indptr, exp)
                    peer = view.peer[entries]
                    keep = np.flatnonzero(self.slot[peer] >= 0)
                    src, peer = np.repeat(np.arange(len(exp)), lengths)[keep], peer[keep]
                keep = peer != seed
                src, peer = src[keep], peer[keep]
                if passed is not None and len(peer):
                    self.parts[part] = np.bincount(self.slot[peer], weights=passed[src], minlength=len(self.mass))
                touched[peer] = True
        for part in self.parts:  # in traversal order, as one running sum would add them
            if part is not None:
                self.mass += part

    def warn(self, exp: np.ndarray, cap_at: int | None) -> None:
        """Fan-out warnings in read order; the candidate warning right after the read that hit the ceiling."""
        truncated = np.flatnonzero(self.view.truncated[exp])
        if cap_at is None:
            if len(truncated):
                self.tokens.append(exp[truncated])
            return
        split = int(np.searchsorted(truncated, cap_at, side="right"))
        self.tokens += [exp[truncated[:split]], np.array([CAP]), exp[truncated[split:]]]

    def seed(self, rank: int, seed: int, weight: float | None):
        """One seed's breadth-first search, a generation at a time; its (parent, type) tree and touched mask."""
        n, view = len(self.index.refs), self.view
        # written for every node this search discovers, and only those are ever read (paths walk back from
        # a read node to the seed): no initialisation needed
        found_by = np.empty(n, dtype=np.int64)
        seen = np.zeros(n, dtype=bool)
        touched = np.zeros(n, dtype=bool)
        seen[seed] = True
        frontier, fdist = np.array([seed], dtype=np.int64), np.zeros(1, dtype=np.int64)
        # the mass each frontier node received: all of it came in the generation that discovered it
        fmass = None if weight is None else np.array([weight])
        while len(frontier):
            live = fdist < self.depth
            exp, edist = frontier[live], fdist[live]
            if not len(exp):
                break
            passed = None if fmass is None else fmass[live] * view.spec[exp]
            # every entry lands at depth: nothing found here is read, so no frontier is built
            terminal = bool(((edist == self.depth - 1) & ~self.zero[exp]).all())
            if terminal and self.capped:
                self.terminal(seed, exp, passed, touched)
                self.warn(exp, None)
                break
            ent, lengths = _slices(view.indptr, exp)
            peer = view.peer[ent]
            nxt = np.repeat(edist, lengths) + self.cost[ent]  # a read node is below depth: nxt <= depth
            contrib = None if passed is None else np.repeat(passed, lengths)
            cap_at = self.candidates(rank, seed, peer, nxt, ent, lengths, contrib, touched)
            self.warn(exp, cap_at)
            if terminal:
                break
            fresh = np.flatnonzero(~seen[peer])
            first = fresh[self.first(peer[fresh])]
            frontier, fdist = peer[first], nxt[first]
            seen[frontier] = True
            found_by[frontier] = ent[first]
            if contrib is not None:  # mass reaching a node in this generation is what it passes on when read
                position = self.position
                position[frontier] = np.arange(len(frontier), dtype=np.int32)
                to = position[peer]
                position[frontier] = -1
                hit = np.flatnonzero(to >= 0)
                fmass = np.bincount(to[hit], weights=contrib[hit], minlength=len(frontier))
        return found_by, touched


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
            trees.append(None)
            touched_masks.append(None)
            continue
        tree, touched = run.seed(rank, seed, None if weights is None else float(weights[rank]))
        trees.append(tree)
        touched_masks.append(touched)
    run.finish()
    codes = np.concatenate(run.codes).astype(np.int64) if run.codes else np.zeros(0, dtype=np.int64)
    support = np.zeros(len(codes), dtype=np.int64)
    for seed, touched in zip(seeds, touched_masks):
        if seed is not None and seed not in counted:  # support counts distinct seed refs: a repeat adds nothing
            counted.add(seed)
            support += touched[codes]
    tokens = np.concatenate(run.tokens).astype(np.int64) if run.tokens else np.zeros(0, dtype=np.int64)
    return Traversal(codes=codes, distance=run.best_dist[codes], seed_rank=run.best_rank[codes],
                     support=support, mass=run.mass[:len(codes)].copy(), _tokens=tokens, _refs=index.refs, _view=view,
                     _max_candidates=max_candidates, _via=run.via[codes], _via_type=run.via_type[codes],
                     _trees=trees, _touched=touched_masks, _seeds=seed_codes)


def collapse_warnings(warnings):
    """The trace's warning collapse as it was (a count per warning, no shortcut when none repeats)."""
    counts: dict[str, int] = {}
    for warning in warnings:
        counts[warning] = counts.get(warning, 0) + 1
    return tuple(w if n == 1 else f"{w} ({n} times)" for w, n in counts.items())
