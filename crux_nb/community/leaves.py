"""The leaf partition: seeded Leiden (igraph's C implementation) and budget splits, on numpy arrays.

Every step works on integer arrays over the sorted node indices of a
``CommunityGraph``, so the same input gives the same partition whatever the
row order of its links, and no per-node Python structure is built.
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import operator
import random
from itertools import chain, islice
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..errors import InputError

_MAX_DOUBLINGS = 8


@dataclass(frozen=True)
class Arrays:
    """A community graph as arrays: sorted distinct links ``src < dst``, node sizes and chunk flags."""

    n: int
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    sizes: np.ndarray
    is_chunk: np.ndarray
    names: tuple[str, ...]


def to_arrays(graph) -> Arrays:
    """``graph``'s links as sorted, de-duplicated arrays (weights of repeated pairs summed, self-loops dropped)."""
    n = len(graph.nodes)
    links = np.fromiter(chain.from_iterable(graph.links), dtype=np.float64, count=3 * len(graph.links)).reshape(-1, 3)
    i, j = links[:, 0].astype(np.int64), links[:, 1].astype(np.int64)
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    keys = lo * n + hi
    if len(keys) > 1 and bool((keys[1:] > keys[:-1]).all()):  # already sorted and distinct (the usual input)
        weight = np.ascontiguousarray(links[:, 2])
    else:
        keys, inverse = np.unique(keys, return_inverse=True)  # sorted: row order never matters
        weight = np.bincount(inverse, weights=links[:, 2], minlength=len(keys))
    src, dst = keys // n, keys % n
    keep = src != dst
    if not keep.all():
        src, dst, weight = src[keep], dst[keep], weight[keep]
    return Arrays(n, src, dst, weight, np.asarray(graph.sizes, dtype=np.int64), chunk_flags(graph.nodes), graph.nodes)


def chunk_flags(names: tuple[str, ...]) -> np.ndarray:
    """Whether each node is a chunk: in sorted names (the usual input) the ``chunk:`` names are one run,
    found by bisection; otherwise name by name."""
    if all(map(operator.le, names, islice(names, 1, None))):
        flags = np.zeros(len(names), dtype=bool)
        flags[bisect.bisect_left(names, "chunk:"):bisect.bisect_left(names, "chunk;")] = True  # ';' follows ':'
        return flags
    return np.fromiter((name.startswith("chunk:") for name in names), dtype=bool, count=len(names))


def igraph_of(a: Arrays):
    """The whole community graph in igraph, edge attribute ``weight``."""
    return graph_of(a.n, a.src, a.dst, a.weight)


def graph_of(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray):
    """An igraph graph with weighted edges (``add_edges`` of a list of pairs and a weight list: faster
    than the constructor or a numpy array)."""
    import igraph as ig

    g = ig.Graph(n=n)
    g.add_edges(list(zip(src.tolist(), dst.tolist())))
    g.es["weight"] = weight.tolist()
    return g


def bare_graph(n: int, src: np.ndarray, dst: np.ndarray):
    """An igraph graph without attributes (for one Leiden call given its weights as a list): no
    ``Graph`` wrapper or attribute table to set up, which dominates on the small graphs of the tree."""
    import igraph as ig

    return ig.GraphBase(n, list(zip(src.tolist(), dst.tolist())))


_ACTIVE: list[random.Random] = []  # the generator installed by the innermost ``seeded``


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run igraph with its own seeded RNG and put the caller's global RNG state back afterwards
    (igraph's Leiden draws from Python's ``random`` unless told otherwise). Inside it, every
    ``leiden`` call re-seeds the installed generator instead of installing a new one."""
    import igraph as ig

    state = random.getstate()
    rng = random.Random(seed)
    ig.set_random_number_generator(rng)
    _ACTIVE.append(rng)
    try:
        yield
    finally:
        _ACTIVE.pop()
        ig.set_random_number_generator(_ACTIVE[-1] if _ACTIVE else random)
        random.setstate(state)


def leiden(g, resolution: float, seed: int, *, initial: np.ndarray | None = None, iterations: int = 2,
           weights: list[float] | None = None) -> np.ndarray:
    """Leiden (modularity, seeded, ``iterations`` iterations) membership of igraph graph ``g`` (edge
    weights: ``weights``, else its ``weight`` attribute), labels renumbered by first occurrence so
    equal partitions compare equal."""
    if not _ACTIVE:
        with seeded(seed):
            return leiden(g, resolution, seed, initial=initial, iterations=iterations, weights=weights)
    import igraph as ig

    _ACTIVE[-1].seed(seed)  # the same stream as a fresh ``random.Random(seed)``
    if weights is None and g.ecount():
        weights = "weight"
    membership, _ = ig.GraphBase.community_leiden(
        g, edge_weights=weights if g.ecount() else None, resolution=resolution, normalize_resolution=True,
        beta=0.01, n_iterations=iterations, initial_membership=None if initial is None else initial.tolist())
    return canonical(np.asarray(membership, dtype=np.int64))


def canonical(labels: np.ndarray) -> np.ndarray:
    """Labels (non-negative integers) renumbered 0.. in order of first occurrence (no sort of the labels:
    each label's first position, then the order of those)."""
    n = len(labels)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    k = int(labels.max()) + 1
    first = np.full(k, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n))
    order = np.argsort(first, kind="stable")[: int(np.count_nonzero(first < n))]
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[labels]


def runs(order: np.ndarray, keys: np.ndarray) -> list[np.ndarray]:
    """``order`` cut where the (sorted) ``keys`` change: ``np.split`` without its per-piece overhead."""
    cuts = [0, *(np.flatnonzero(keys[1:] != keys[:-1]) + 1).tolist(), len(order)]
    return [order[lo:hi] for lo, hi in zip(cuts, cuts[1:])] if len(order) else [order]


_DENSE_PAIRS = 1 << 16  # group pairs counted in a dense table below this many, sorted otherwise


def group_links(labels: np.ndarray, src: np.ndarray, dst: np.ndarray, weight: np.ndarray, k: int):
    """Summed link weights between distinct groups: (a, b, w) arrays with a < b, sorted."""
    a, b = labels[src], labels[dst]
    cross = a != b
    lo, hi = np.minimum(a[cross], b[cross]), np.maximum(a[cross], b[cross])
    if k * k <= _DENSE_PAIRS:  # a table of every pair: sorted keys without sorting, weights summed in input order
        key = lo * k + hi
        present = np.flatnonzero(np.bincount(key, minlength=k * k))
        total = np.bincount(key, weights=weight[cross], minlength=k * k)[present]
        return present // k, present % k, total
    keys, inverse = np.unique(lo * k + hi, return_inverse=True)
    return keys // k, keys % k, np.bincount(inverse, weights=weight[cross], minlength=len(keys))


def attach_chunkless(labels: np.ndarray, is_chunk: np.ndarray, src, dst, weight) -> np.ndarray:
    """Groups without a chunk join the chunked group they are most linked to (ties: the lower label)."""
    k = int(labels.max()) + 1 if len(labels) else 0
    has_chunk = np.bincount(labels, weights=is_chunk.astype(np.float64), minlength=k) > 0
    if has_chunk.all():
        return labels
    a, b, w = group_links(labels, src, dst, weight, k)
    a, b, w = np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([w, w])
    pick = ~has_chunk[a] & has_chunk[b]
    a, b, w = a[pick], b[pick], w[pick]
    order = np.lexsort((b, -w, a))  # per chunkless group: heaviest link first, then the lower target
    a, b = a[order], b[order]
    first = np.unique(a, return_index=True)[1]
    target = np.arange(k)
    target[a[first]] = b[first]
    return canonical(target[labels])


class Splitter:
    """Splits over-budget groups on their own subgraphs (built from the group's links) until every
    leaf fits; the groups of a split are packed back together up to the budget."""

    def __init__(self, a: Arrays, *, resolution: float, seed: int, budget: int):
        self.a = a
        self.resolution, self.seed, self.budget = resolution, seed, budget

    def fits(self, members: np.ndarray) -> bool:
        chunks = members[self.a.is_chunk[members]]
        if len(chunks) == 1 and self.a.sizes[chunks[0]] > self.budget:
            raise InputError(f"chunk {self.a.names[chunks[0]]!r} has {self.a.sizes[chunks[0]]} characters "
                             f"and exceeds the input budget ({self.budget}).",
                             hint="re-add the source with a smaller chunk_size.")
        return int(self.a.sizes[members].sum()) <= self.budget or len(chunks) <= 1

    def leaves(self, labels: np.ndarray, only: set[int] | None = None) -> list[np.ndarray]:
        """Leaf member arrays (sorted) for every group of ``labels`` (``only``: split just these groups)."""
        order = np.argsort(labels, kind="stable")
        groups = runs(order, labels[order])
        out: list[np.ndarray] = []
        todo = [k for k, group in enumerate(groups) if only is None or int(labels[group[0]]) in only]
        for k in set(range(len(groups))) - set(todo):
            out.append(groups[k])
        for members, links in zip((groups[k] for k in todo), _links_within(labels, groups, todo, self.a)):
            self._split(members, links, out)
        return sorted(out, key=lambda m: int(m[0]))

    def _split(self, members: np.ndarray, links: tuple[np.ndarray, np.ndarray, np.ndarray],
               out: list[np.ndarray]) -> None:
        """``links``: the links inside ``members`` as (src, dst, weight), ends numbered by position."""
        if self.fits(members):
            out.append(members)
            return
        src, dst, weight = links
        # the subgraph igraph's ``induced_subgraph`` would give (vertices ascending, edges by (dst, src)),
        # built from the links at hand instead of from the whole graph
        order = np.lexsort((src, dst))
        sub, sub_weights = bare_graph(len(members), src[order], dst[order]), weight[order].tolist()
        is_chunk = self.a.is_chunk[members]
        resolution = self.resolution
        for _ in range(_MAX_DOUBLINGS):
            local = attach_chunkless(leiden(sub, resolution, self.seed, weights=sub_weights), is_chunk, src, dst,
                                     weight)
            if local.max() > 0:
                break
            resolution *= 2
        else:
            local = self._bisect(members, src, dst, weight)
        parts = self._pack(local, self.a.sizes[members], src, dst, weight)
        part = np.empty(len(members), dtype=np.int64)
        for k, group in enumerate(parts):
            part[group] = k
        for group, child in zip(parts, _split_links(part, parts, src, dst, weight)):
            self._split(members[group], child, out)

    def _pack(self, local: np.ndarray, sizes: np.ndarray, src, dst, weight) -> list[np.ndarray]:
        """Merge linked groups while the merged input fits, heaviest link first (ties: lower groups); then
        fill unlinked groups in node order (a split hub's spokes share no link)."""
        k = int(local.max()) + 1
        gsize = np.bincount(local, weights=sizes, minlength=k).astype(np.int64).tolist()
        a, b, w = group_links(local, src, dst, weight, k)
        links: list[dict[int, float]] = [{} for _ in range(k)]
        xs, ys, ws = a.tolist(), b.tolist(), w.tolist()
        for x, y, v in zip(xs, ys, ws):
            links[x][y] = v
            links[y][x] = v
        owner = list(range(k))
        alive = [True] * k
        budget = self.budget
        heap = [(-v, x, y) for x, y, v in zip(xs, ys, ws)]
        heapq.heapify(heap)
        pop, push = heapq.heappop, heapq.heappush
        while heap:
            neg, x, y = pop(heap)
            if not (alive[x] and alive[y]) or gsize[x] + gsize[y] > budget or links[x].get(y) != -neg:
                continue  # merged away, too big (sizes only grow: it never will fit), or an outdated weight
            alive[y] = False
            gsize[x] += gsize[y]
            owner[y] = x
            lx = links[x]
            for z, v in links[y].items():
                if z == x:
                    continue
                lz = links[z]
                total = lx.get(z, 0.0) + v
                lx[z] = total
                lz[x] = total
                del lz[y]
                push(heap, (-total, x, z) if x < z else (-total, z, x))
            lx.pop(y, None)
            links[y] = {}
        root = np.asarray([_find(owner, x) for x in range(k)], dtype=np.int64)
        merged = canonical(root[local])
        return self._fill(merged, sizes)

    def _fill(self, labels: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
        """Groups (canonical labels: in order of their first node) filled into bins up to the budget."""
        totals = np.bincount(labels, weights=sizes).astype(np.int64).tolist()
        bin_of, total, current = [], 0, -1
        for size in totals:
            if current >= 0 and total + size <= self.budget:
                total += size
            else:
                current, total = current + 1, size
            bin_of.append(current)
        bins = np.asarray(bin_of, dtype=np.int64)[labels]
        order = np.argsort(bins, kind="stable")  # ascending nodes within each bin
        return runs(order, bins[order])

    def _bisect(self, members: np.ndarray, src, dst, weight) -> np.ndarray:
        """Chunks halved in name order; every other node joins the half it links to most."""
        is_chunk = self.a.is_chunk[members]
        chunks = np.flatnonzero(is_chunk)  # names are sorted, so index order is name order
        side = np.full(len(members), -1, dtype=np.int64)
        side[chunks[: len(chunks) // 2]] = 0
        side[chunks[len(chunks) // 2:]] = 1
        pull = np.zeros((len(members), 2))
        for x, y in ((src, dst), (dst, src)):
            known = side[y] >= 0
            np.add.at(pull, (x[known], side[y][known]), weight[known])
        rest = side < 0
        side[rest] = (pull[rest, 1] > pull[rest, 0]).astype(np.int64)
        return canonical(side)


def _links_within(labels: np.ndarray, groups: list[np.ndarray], todo: list[int], a: Arrays):
    """For each group of ``todo``: its inner links, ends numbered by position in the group."""
    part = np.full(a.n, -1, dtype=np.int64)
    rank = np.empty(a.n, dtype=np.int64)
    for k in todo:
        part[groups[k]] = k
        rank[groups[k]] = np.arange(len(groups[k]))
    inner = (part[a.src] >= 0) & (part[a.src] == part[a.dst])
    src, dst, weight, owner = a.src[inner], a.dst[inner], a.weight[inner], part[a.src[inner]]
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], todo, side="left"), np.searchsorted(owner[order], todo, side="right")
    for lo, hi in zip(*bounds):
        pick = order[lo:hi]
        yield rank[src[pick]], rank[dst[pick]], weight[pick]


def _split_links(part: np.ndarray, parts: list[np.ndarray], src, dst, weight):
    """For each part: the links inside it, ends renumbered by position in the part."""
    rank = np.empty(len(part), dtype=np.int64)
    for group in parts:
        rank[group] = np.arange(len(group))
    inner = part[src] == part[dst]
    s, d, w, owner = src[inner], dst[inner], weight[inner], part[src[inner]]
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(len(parts) + 1))
    for k in range(len(parts)):
        pick = order[bounds[k]:bounds[k + 1]]
        yield rank[s[pick]], rank[d[pick]], w[pick]


def _find(owner: list[int], x: int) -> int:
    while owner[x] != x:
        owner[x] = owner[owner[x]]
        x = owner[x]
    return x
