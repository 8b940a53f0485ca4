"""The community tree over the leaves: top-down, balanced, at most ``max_children`` children.

A parent's leaves are grouped by seeded Leiden on the graph of its leaves
(contracted again and again, at falling resolution, until at most
``max_children`` groups remain), and the last groups are merged pairwise,
most linked per chunk first. No group may hold more than half of its parent's
chunks unless it is a single leaf (guaranteed for ``max_children`` >= 3; with 2, fan-out wins),
so no child holds most of its parent; each
group with more than one leaf becomes a parent in turn. A parent has between
2 and ``max_children`` children, and every level holds at least twice fewer
communities than the one below it on average.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .leaves import bare_graph, canonical, group_links, leiden, runs

_MAX_ROUNDS = 12


@dataclass(frozen=True)
class Node:
    """A community while the tree is built: its leaves (indices into the leaf list) and children."""

    leaves: tuple[int, ...]
    children: tuple["Node", ...] = ()

    @property
    def level(self) -> int:
        return 0 if not self.children else 1 + max(c.level for c in self.children)


class TreeBuilder:
    """Builds parents over leaves ``0..k-1`` given their chunk counts and the links between them."""

    def __init__(self, chunks: np.ndarray, src: np.ndarray, dst: np.ndarray, weight: np.ndarray, *,
                 resolution: float, seed: int, max_children: int):
        self.chunks = np.asarray(chunks, dtype=np.float64)
        self.src, self.dst, self.weight = src, dst, weight
        self.resolution, self.seed, self.max_children = resolution, seed, max_children

    def build(self, leaves: tuple[int, ...]) -> Node:
        if len(leaves) == 1:
            return Node(leaves)
        if len(leaves) <= self.max_children:
            return Node(leaves, tuple(Node((k,)) for k in leaves))
        groups = self.groups(np.asarray(leaves, dtype=np.int64))
        if len(groups) < 2:  # only leaves without chunks (nothing to balance): halves in leaf order
            half = len(leaves) // 2
            groups = [np.asarray(leaves[:half]), np.asarray(leaves[half:])]
        return Node(leaves, tuple(self.build(tuple(int(x) for x in g)) for g in groups))

    def local(self, leaves: np.ndarray):
        """The links among ``leaves`` in local indices."""
        pos = np.full(len(self.chunks), -1, dtype=np.int64)
        pos[leaves] = np.arange(len(leaves))
        a, b = pos[self.src], pos[self.dst]
        keep = (a >= 0) & (b >= 0)
        return a[keep], b[keep], self.weight[keep]

    def groups(self, leaves: np.ndarray) -> list[np.ndarray]:
        """2..max_children groups of ``leaves`` (sorted arrays), none holding more than half the chunks
        unless it is one leaf."""
        src, dst, weight = self.local(leaves)
        sizes = self.chunks[leaves]
        cap = sizes.sum() / 2
        labels = np.arange(len(leaves))
        resolution = self.resolution
        for _ in range(_MAX_ROUNDS):
            k = int(labels.max()) + 1
            if k <= self.max_children:
                break
            a, b, w = group_links(labels, src, dst, weight, k)
            merged = leiden(bare_graph(k, a, b), resolution, self.seed, iterations=1, weights=w.tolist())
            group_chunks = np.bincount(merged, weights=np.bincount(labels, weights=sizes, minlength=k))
            group_count = np.bincount(merged)
            too_big = (group_chunks > cap) & (group_count > 1)
            if too_big.any():  # keep an over-half group's parts apart, and merge less eagerly
                merged = np.where(too_big[merged], merged.max() + 1 + np.arange(k), merged)
                resolution *= 1.5
            new = canonical(merged[labels])
            if new.max() + 1 == k:
                resolution /= 2  # nothing merged: a coarser resolution
            labels = new
        return [leaves[g] for g in self.merge(labels, sizes, src, dst, weight, cap)]

    def merge(self, labels: np.ndarray, sizes: np.ndarray, src, dst, weight, cap: float) -> list[np.ndarray]:
        """Merge groups pairwise until at most ``max_children`` remain: the pair with the most link weight
        per (chunks + 1) squared whose merge stays within ``cap``; unlinked pairs (smallest first) last."""
        k = int(labels.max()) + 1
        size = np.bincount(labels, weights=sizes, minlength=k)
        w = np.zeros((k, k))
        a, b, v = group_links(labels, src, dst, weight, k)
        w[a, b] = v
        w[b, a] = v
        owner = np.arange(k)
        alive = np.ones(k, dtype=bool)
        while alive.sum() > self.max_children:
            idx = np.flatnonzero(alive)
            s = size[idx]
            score = w[np.ix_(idx, idx)] / np.outer(s + 1, s + 1)
            fits = (s[:, None] + s[None, :] <= cap) & ~np.eye(len(idx), dtype=bool)
            linked = fits & (score > 0)
            if linked.any():
                flat = np.where(linked, score, -1.0)
                x, y = np.unravel_index(int(np.argmax(flat)), flat.shape)  # first maximum: lowest indices
            else:
                # no pair fits the cap only with 3 groups and max_children 2: fan-out wins over balance
                pair = np.where(fits if fits.any() else ~np.eye(len(idx), dtype=bool), s[:, None] + s[None, :], np.inf)
                x, y = np.unravel_index(int(np.argmin(pair)), pair.shape)
            x, y = sorted((int(idx[x]), int(idx[y])))
            alive[y] = False
            owner[owner == y] = x
            size[x] += size[y]
            w[x, :] += w[y, :]
            w[:, x] += w[:, y]
            w[x, x] = 0.0
            w[y, :] = 0.0
            w[:, y] = 0.0
        final = canonical(owner[labels])
        order = np.argsort(final, kind="stable")
        return [np.sort(leaves_part) for leaves_part in runs(order, final[order])]
