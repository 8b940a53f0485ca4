"""The result of one ``expand_relations`` traversal (:func:`crux_nb.graph.frontier.traverse`): candidates in
discovery order with their best routes, supports, mass and warnings; routes and supports are read on demand.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .frontier_index import View

__all__ = ["Traversal", "CAP"]

CAP = -1  # the candidate-ceiling warning in the warning stream (other tokens are codes of truncated reads)


@dataclass
class Traversal:
    """Candidates in discovery order with their best (distance, seed rank) route, support and mass."""

    codes: np.ndarray
    distance: np.ndarray
    seed_rank: np.ndarray
    support: np.ndarray  # number of distinct seeds reaching each candidate
    mass: np.ndarray
    pruned: int = 0  # reads the relevance floor skipped (see the module docstring)
    _tokens: np.ndarray = field(repr=False, default=None)
    _refs: np.ndarray = field(repr=False, default=None)
    _view: View = field(repr=False, default=None)
    _max_candidates: int = 0
    _via: np.ndarray = field(repr=False, default=None)
    _via_type: np.ndarray = field(repr=False, default=None)
    _trees: list = field(repr=False, default_factory=list)
    _touched: list = field(repr=False, default_factory=list)
    _seeds: list = field(repr=False, default_factory=list)
    _reached: np.ndarray | None = field(repr=False, default=None)

    @property
    def last_edge(self) -> np.ndarray:
        """The edge type code (``TraversalIndex.type_names``) of the last step of each candidate's recorded route."""
        return self._via_type

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
        counts = Counter(self._tokens.tolist())  # first-seen order: one pass, no sort
        texts = self._texts(np.fromiter(counts, dtype=np.int64, count=len(counts)))
        return [w if n == 1 else f"{w} ({n} times)" for w, n in zip(texts, counts.values())]

    #: a tree at least this large is sorted once for its lookups; a smaller one is scanned per step (a route has a
    #: few steps, and sorting a seed's tree cost more than the rest of hydrating a hit)
    SORT_TREE = 4096

    def _tree(self, rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(every node the seed's search read, and for the numpy traversal every other one it found below depth;
        the entry that discovered each; their sort order for a large tree)."""
        tree = self._trees[rank]
        if isinstance(tree, list):  # (frontier nodes, their entries) per generation
            nodes = np.concatenate([f for f, _ in tree]) if tree else np.zeros(0, dtype=np.int64)
            entries = np.concatenate([e for _, e in tree]) if tree else np.zeros(0, dtype=np.int64)
            order = np.argsort(nodes) if len(nodes) >= self.SORT_TREE else None  # distinct nodes: no ties
            tree = self._trees[rank] = (nodes, entries, order)
        return tree

    def path(self, i: int) -> tuple[list[int], list[int]]:
        """(node codes from the seed, edge type codes) of candidate ``i``'s recorded route."""
        rank = int(self.seed_rank[i])
        found, by, order = self._tree(rank)
        nodes, types = [int(self.codes[i])], [int(self._via_type[i])]
        node = int(self._via[i])
        while node != self._seeds[rank]:
            nodes.append(node)
            # a node is discovered once per search
            at = (found == node).argmax() if order is None else order[np.searchsorted(found, node, sorter=order)]
            entry = int(by[at])
            types.append(int(self._view.etype[entry]))
            node = int(self._view.owner[entry])
        nodes.append(node)
        return nodes[::-1], types[::-1]

    def supports(self, i: int) -> list[int]:
        """Codes of the distinct seeds whose traversal reached candidate ``i``, sorted."""
        if self._reached is None:  # (candidate, seed rank), built once: a contiguous row per call
            rows = [np.zeros(len(self.codes), dtype=bool) if t is None else t[:len(self.codes)] for t in self._touched]
            self._reached = np.array(rows, dtype=bool).reshape(len(rows), len(self.codes)).T.copy()
        return sorted({self._seeds[r] for r, hit in enumerate(self._reached[i].tolist()) if hit})
