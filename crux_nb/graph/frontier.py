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

The relevance ranking also *prunes*: past the first hop, a node whose read would pass each
neighbour less than ``floor`` times its seed's weight is not read (``floor=None`` reads every node).
Such a node was reached through a hub (an entity adjacent to more chunks than a read returns), and
its read would spread a vanishing share over an arbitrary cut of neighbours; the first hop is read
whole, since a seed's own entities, however common, are what it is about. Pruned reads are counted.
An entry whose hop lands past distance 1 carries ``damping`` times its read node's share, so a path
of d counted hops keeps ``damping ** (d - 1)`` of its mass.

Two shortcuts keep the results and cut the work. A *terminal* generation (every read node at
``depth - 1`` and none with a free hop) discovers nothing that is read, so its frontier is never
built; and once the candidate ceiling was hit, such a generation only adds mass and support to the
fixed candidates, settled after the last seed for all seeds at once: through the candidates' incoming
entries (the transposed view, one read with a bit per seed) when they are fewer than the generations'
own entries, in read order, so every sum adds in the same order as a full read.
Warnings are kept as node codes and written once per node (``collapsed_warnings``).

:mod:`.frontier_kernel` runs the same traversal as one compiled loop (numba, the ``fast`` extra), bit
for bit; :func:`traverse` takes it when numba is installed.
"""

from __future__ import annotations

import numpy as np

from . import compiled, frontier_kernel
from .frontier_index import KIND_CHUNK, KIND_ENTITY, TraversalIndex, View
from .traversal import CAP, Traversal

__all__ = ["TraversalIndex", "Traversal", "traverse", "traversal_engine", "ENGINES", "KIND_CHUNK", "KIND_ENTITY"]

#: a read is pruned below the floor by more than this relative margin (sums in other orders agree within it)
FLOOR_MARGIN = 1e-9
def _slices(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the CSR slices of ``rows``, concatenated in row order; entries per row)."""
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum())), lengths


class _Run:
    """The state of one traversal across seeds: candidates, their best routes, warnings."""

    #: a terminal generation reads the candidates' incoming entries when fewer than ratio x its own entries
    BACKWARD_RATIO = 1.0

    def __init__(self, index: TraversalIndex, view: View, *, depth: int, entity_hops: str, max_candidates: int,
                 floor: float | None = None, damping: float = 1.0):
        n = len(index.refs)
        self.index, self.view, self.depth, self.max_candidates = index, view, depth, max_candidates
        self.floor, self.pruned, self.damping = floor, 0, damping
        self.cost, self.zero = view.cost[entity_hops], view.zero_cost[entity_hops]
        self.slot = np.full(n, -1, dtype=np.int32)
        self.codes: list[np.ndarray] = []
        self.count = 0
        # a candidate's best route, per candidate slot (only candidates have one)
        big = np.iinfo(np.int64).max
        self.best_dist = np.full(max_candidates, big, dtype=np.int64)
        self.best_rank = np.full(max_candidates, big, dtype=np.int64)
        self.via = np.full(max_candidates, -1, dtype=np.int64)
        self.via_type = np.full(max_candidates, -1, dtype=np.int64)
        self.mass = np.zeros(max_candidates)  # per candidate slot
        self.tokens: list[np.ndarray] = []
        self.capped = False
        self.scratch = np.full(n, -1, dtype=np.int64)
        self.stamps, self.stamp = np.full(n, -1, dtype=np.int64), 0
        self.slot_scratch = np.full(max_candidates, -1, dtype=np.int64)
        self.position = np.full(n, -1, dtype=np.int32)
        self.parts: list[np.ndarray | None] = []  # mass per candidate slot, one part per generation, in order
        self.deferred: list[tuple] = []  # terminal generations past the ceiling, settled in finish()

    def first(self, values: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
        """Positions of each value's first occurrence, in position order (no sort: a scatter, then a gather)."""
        if not len(values):
            return np.zeros(0, dtype=np.int64)
        scratch = self.scratch if scratch is None else scratch
        idx = np.arange(len(values))
        scratch[values[::-1]] = idx[::-1]  # later writes win: the earliest position stays
        firsts = idx[scratch[values] == idx]
        scratch[values] = -1
        return firsts

    def candidates(self, rank, seed, peer, nxt, ent, ends, carried, touched) -> int | None:
        """Create, support and improve candidates from one generation's entries (``ends``: the cumulative
        entries per read node; ``carried``: the mass of each entry); the read position that hit the candidate
        ceiling, if one did."""
        cap_at = None
        if not self.capped:
            at = np.flatnonzero(peer != seed)
            cp = peer[at]
            if not len(cp):
                return None
            new = self.first(cp)
            new = new[self.slot[cp[new]] < 0]
            room = self.max_candidates - self.count
            if len(new) > room:
                cap_at = int(np.searchsorted(ends, at[new[room]], side="right"))
                self.capped = True
                new = new[:room]
            self.slot[cp[new]] = self.count + np.arange(len(new))
            self.codes.append(cp[new])
            self.count += len(new)
            slots = self.slot[cp]
            ok = np.flatnonzero(slots >= 0)
            at, slots = at[ok], slots[ok]
        else:  # the candidates are fixed: only entries reaching one are looked at
            slots = self.slot[peer]
            at = np.flatnonzero(slots >= 0)
            slots = slots[at]
            if len(at) and (self.slot[seed] >= 0):
                keep = np.flatnonzero(peer[at] != seed)
                at, slots = at[keep], slots[keep]
        if not len(at):
            return cap_at
        if carried is not None:
            self.parts.append(np.bincount(slots, weights=carried[at], minlength=len(self.mass)))
        touched[slots] = True
        # per candidate, the first entry with the smallest distance improves a strictly worse best; entries that
        # do not beat the best before this generation never do (the best only improves), so only those are looked at.
        # Seeds run in rank order, so every best so far has a rank <= this one: only a shorter distance is better.
        cn = nxt[at]
        better = np.flatnonzero(cn < self.best_dist[slots])
        at, slots, cn = at[better], slots[better], cn[better]
        for d in np.flatnonzero(np.bincount(cn)).tolist() if len(cn) else ():
            same = np.flatnonzero(cn == d)
            head = same[self.first(slots[same], self.slot_scratch)]
            hs = slots[head]
            improve = d < self.best_dist[hs]
            hs, head = hs[improve], at[head[improve]]
            self.best_dist[hs], self.best_rank[hs] = d, rank
            self.via[hs], self.via_type[hs] = self.view.owner[ent[head]], self.view.etype[ent[head]]
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
        if deferred:  # the direction with fewer entries, counted before either is read
            transposed_indptr, by_peer = view.transposed()
            codes = np.concatenate(self.codes)
            forward = sum(int(view.degree[exp].sum()) for _, _, exp, _, _ in deferred)
            backward = int((transposed_indptr[codes + 1] - transposed_indptr[codes]).sum()) < forward * self.BACKWARD_RATIO
            if backward:
                ent = by_peer[_slices(transposed_indptr, codes)[0]]
                owner = view.owner[ent].astype(np.int32)
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
                    e = len(view.peer)  # unique keys (read position, entry): sorted values give both, in order
                    keys = np.sort(pos.astype(np.int64) * e + fent[mine])
                    src, peer = keys // e, view.peer[keys % e]
                else:
                    entries, lengths = _slices(view.indptr, exp)
                    peer = view.peer[entries]
                    keep = np.flatnonzero(self.slot[peer] >= 0)
                    src, peer = np.repeat(np.arange(len(exp)), lengths)[keep], peer[keep]
                keep = peer != seed
                src, peer = src[keep], peer[keep]
                slots = self.slot[peer]
                if passed is not None and len(peer):
                    self.parts[part] = np.bincount(slots, weights=passed[src], minlength=len(self.mass))
                touched[slots] = True
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

    def carry(self, passed: np.ndarray, lengths: np.ndarray, cost: np.ndarray, nxt: np.ndarray) -> np.ndarray:
        """The mass each entry carries: its read node's share, times ``damping`` for a hop past the first."""
        carried = np.repeat(passed, lengths)
        if self.damping != 1.0:
            np.multiply(carried, self.damping, out=carried, where=(nxt >= 2) & (cost == 1))
        return carried

    def seed(self, rank: int, seed: int, weight: float | None):
        """One seed's breadth-first search, a generation at a time; its (parent, type) tree and touched mask."""
        n, view = len(self.index.refs), self.view
        # per generation, the frontier (the nodes read next) and the entry that discovered each: paths walk
        # back from a read node to the seed through these (a node-sized array per seed costs page faults)
        found_by: list[tuple[np.ndarray, np.ndarray]] = []
        seen = np.zeros(n, dtype=bool)
        touched = np.zeros(self.max_candidates, dtype=bool)  # per candidate slot
        seen[seed] = True
        frontier, fdist = np.array([seed], dtype=np.int64), np.zeros(1, dtype=np.int64)
        # the mass each frontier node received: all of it came in the generation that discovered it
        fmass = None if weight is None else np.array([weight])
        while len(frontier):
            live = fdist < self.depth
            if self.floor and fmass is not None:  # past the first hop, a read passing too little is pruned
                thin = live & (fdist >= 1) & (fmass * view.spec[frontier] < weight * self.floor * (1 - FLOOR_MARGIN))
                self.pruned += int(thin.sum())
                live &= ~thin
            exp, edist = frontier[live], fdist[live]
            if not len(exp):
                break
            passed = None if fmass is None else fmass[live] * view.spec[exp]
            # every entry lands at depth: nothing found here is read, so no frontier is built
            terminal = bool(((edist == self.depth - 1) & ~self.zero[exp]).all())
            if terminal and self.capped:  # every entry is one hop landing at depth
                self.terminal(seed, exp, passed if self.depth < 2 or passed is None else passed * self.damping, touched)
                self.warn(exp, None)
                break
            ent, lengths = _slices(view.indptr, exp)
            ends = np.cumsum(lengths)
            peer = view.peer[ent]
            cost = self.cost[ent]
            nxt = np.repeat(edist, lengths) + cost  # a read node is below depth: nxt <= depth
            carried = None if passed is None else self.carry(passed, lengths, cost, nxt)
            cap_at = self.candidates(rank, seed, peer, nxt, ent, ends, carried, touched)
            self.warn(exp, cap_at)
            if terminal:
                break
            fresh = np.flatnonzero(~seen[peer])
            fp = peer[fresh]
            # the next frontier: first discoveries below depth (one found at depth is never read: it is only seen)
            below = np.flatnonzero(nxt[fresh] < self.depth)
            # later writes win: each peer's first entry stays; stamped above every earlier write (no reset)
            stamp, self.stamp = self.stamp, self.stamp + len(fresh)
            self.stamps[fp[::-1]] = np.arange(stamp + len(fresh) - 1, stamp - 1, -1)
            first = fresh[below[self.stamps[fp[below]] == below + stamp]]
            seen[fp] = True
            frontier, fdist = peer[first], nxt[first]
            found_by.append((frontier, ent[first]))
            if passed is not None:  # mass reaching a node in this generation is what it passes on when read
                position = self.position
                position[frontier] = np.arange(len(frontier), dtype=np.int32)
                to = position[fp]  # an entry reaching a frontier node reached it unseen
                position[frontier] = -1
                hit = np.flatnonzero(to >= 0)
                fmass = np.bincount(to[hit], weights=carried[fresh[hit]], minlength=len(frontier))
        return found_by, touched


ENGINES = ("kernel", "numpy")


def traversal_engine() -> str:
    """The engine ``expand_relations`` traverses with: ``"kernel"`` (compiled by numba, a core dependency)
    unless ``CRUX_NB_TRAVERSAL=numpy`` asks for the vectorised numpy one; ``"numpy"`` without numba. Both give
    the same results, bit for bit. The kernel compiles in the background at the first traversal, which
    with the calls until it is ready runs on numpy (:mod:`crux_nb.graph.compiled`).

    >>> import os
    >>> from crux_nb.graph import traversal_engine
    >>> traversal_engine() in ("kernel", "numpy")
    True
    >>> os.environ["CRUX_NB_TRAVERSAL"] = "numpy"
    >>> traversal_engine()
    'numpy'
    >>> del os.environ["CRUX_NB_TRAVERSAL"]
    """
    return "kernel" if frontier_kernel.available() else "numpy"


def traverse(index: TraversalIndex, view: View, seeds: list[int | None], *, depth: int, entity_hops: str,
             max_candidates: int, weights: np.ndarray | None = None, floor: float | None = None,
             damping: float = 1.0, engine: str | None = None) -> Traversal:
    """Upstream's per-seed breadth-first traversal, one generation per step (see the module docstring).

    ``seeds`` are node codes (``None`` for a seed not in the index); ``weights`` (one per seed) turn on
    the relevance ranking's mass, ``floor`` its pruning (a share of the seed's weight) and ``damping`` the
    share kept per hop past the first. ``engine`` picks the compiled loop (``"kernel"``, needs numba: the
    ``fast`` extra) or the vectorised generations here (``"numpy"``); ``None`` takes the kernel when it is
    available (:func:`.frontier_kernel.available`). Both give the same result, bit for bit. Examples: see
    ``tests/test_frontier.py`` (checked against the per-node traversal) and
    :meth:`crux_nb.graph.GraphReader.traversal_index`.
    """
    if engine is None:
        engine = traversal_engine()
        if engine == "kernel" and compiled.mode() == "auto" and not compiled.ready("traversal"):
            # compile in the background (one run on this call's arrays); this call and the ones until it is
            # done take the numpy generations, which give the same result
            compiled.warm("traversal", lambda: _from_kernel(
                index, view, seeds, depth=depth, entity_hops=entity_hops, max_candidates=max_candidates,
                weights=weights, floor=floor, damping=damping))
            engine = "numpy"
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES} or None, got {engine!r}")
    if engine == "kernel":
        if not frontier_kernel.installed():
            raise ImportError("the compiled traversal needs numba: pip install 'crux_nb[fast]'")
        return _from_kernel(index, view, seeds, depth=depth, entity_hops=entity_hops, max_candidates=max_candidates,
                            weights=weights, floor=floor, damping=damping)
    run = _Run(index, view, depth=depth, entity_hops=entity_hops, max_candidates=max_candidates, floor=floor,
               damping=damping)
    trees, touched_masks = [None] * len(seeds), [None] * len(seeds)
    seed_codes = [-1 if seed is None else seed for seed in seeds]
    for rank, seed in enumerate(seeds):
        if seed is not None:
            trees[rank], touched_masks[rank] = run.seed(rank, seed, None if weights is None else float(weights[rank]))
    run.finish()
    codes = np.concatenate(run.codes).astype(np.int64) if run.codes else np.zeros(0, dtype=np.int64)
    support = _support(seeds, touched_masks, len(codes))
    tokens = np.concatenate(run.tokens).astype(np.int64) if run.tokens else np.zeros(0, dtype=np.int64)
    count = len(codes)
    return Traversal(codes=codes, distance=run.best_dist[:count].copy(), seed_rank=run.best_rank[:count].copy(),
                     support=support, mass=run.mass[:len(codes)].copy(), pruned=run.pruned, _tokens=tokens,
                     _refs=index.refs, _view=view,
                     _max_candidates=max_candidates, _via=run.via[:count].copy(), _via_type=run.via_type[:count].copy(),
                     _trees=trees, _touched=touched_masks, _seeds=seed_codes)


def _support(seeds: list[int | None], touched_masks: list[np.ndarray | None], count: int) -> np.ndarray:
    """Per candidate, the number of distinct seeds whose search touched it (a repeated seed adds nothing)."""
    support, counted = np.zeros(count, dtype=np.int64), set()
    for seed, touched in zip(seeds, touched_masks):
        if seed is not None and seed not in counted:
            counted.add(seed)
            support += touched[:count]
    return support


def _from_kernel(index: TraversalIndex, view: View, seeds: list[int | None], *, depth: int, entity_hops: str,
                 max_candidates: int, weights: np.ndarray | None, floor: float | None, damping: float) -> Traversal:
    seed_codes = [-1 if seed is None else seed for seed in seeds]
    (codes, distance, seed_rank, via, via_type, mass, touched, tokens, pruned, tree_node, tree_entry,
     tree_ptr) = frontier_kernel.run(view, entity_hops, seed_codes, weights, depth=depth,
                                     max_candidates=max_candidates, floor=floor, damping=damping, margin=FLOOR_MARGIN)
    compiled.mark_ready("traversal")
    touched_masks = [None if seed is None else touched[rank] for rank, seed in enumerate(seeds)]
    trees = [None if seed is None else [(tree_node[tree_ptr[rank]:tree_ptr[rank + 1]],
                                          tree_entry[tree_ptr[rank]:tree_ptr[rank + 1]])]
             for rank, seed in enumerate(seeds)]
    support = _support(seeds, touched_masks, len(codes))
    return Traversal(codes=codes, distance=distance, seed_rank=seed_rank, support=support, mass=mass,
                     pruned=int(pruned), _tokens=tokens, _refs=index.refs, _view=view, _max_candidates=max_candidates,
                     _via=via, _via_type=via_type, _trees=trees, _touched=touched_masks, _seeds=seed_codes)
