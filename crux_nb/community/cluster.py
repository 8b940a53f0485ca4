"""Hierarchical Leiden under a report budget (DESIGN 4.1 and 4.11).

1. Leaves: seeded Leiden (igraph's C ``community_leiden``) over the whole
   community graph; groups without chunks join the neighbour they are most
   linked to; a group whose estimated report input exceeds the leaf budget is
   split again by Leiden on its own subgraph (rising resolution; bisected in
   document order as a last resort) and the parts are packed back together up
   to the budget, until every leaf fits (``leaves.py``).
2. Tree: built top-down over the leaves, every parent with 2..``max_children``
   children and no child holding more than half of its parent's chunks unless
   it is a single leaf (``tree.py``). One root on top.
3. Incremental (``previous`` given): the nodes of every previous leaf that lost
   at most half of its members keep their community (leidenalg's
   ``optimise_partition`` with ``is_membership_fixed``); only new nodes (a new
   source's chunks as one unit) and the rest of dissolved leaves are placed. A leaf whose members did not change keeps its id (so its
   report is reused); changed leaves go under the parent their members came
   from (or are most linked to), and only parents whose children changed, and
   their ancestors, get new ids. A parent pushed over ``max_children`` or out
   of balance has its subtree rebuilt.

Levels count up from the leaves (leaf 0; parent = 1 + max child level). Ids
hash the sorted member refs and the level, so the same input and seed give the
same communities whatever the input row order.
"""

from __future__ import annotations

from collections import Counter
from operator import itemgetter
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from .._hashing import json_hash, json_strings
from .graph_input import CommunityGraph
from .leaves import Arrays, Splitter, attach_chunkless, bare_graph, canonical, group_links, igraph_of, leiden, seeded, to_arrays
from .tree import Node, TreeBuilder

#: Estimated report input characters per leaf community (upstream's 24,000): a leaf over it is split again.
LEAF_BUDGET = 24_000
MAX_CHILDREN = 8
REPAIR_SHARE = 2 / 3
Engine = Literal["leidenalg", "igraph"]


@dataclass(frozen=True)
class Community:
    """One community of the tree: its id, level (leaves 0), kind, parent and children, members and size.

    Leaves hold their members (``chunk_refs``, ``entity_refs``). A parent made by
    :func:`~crux_nb.community.cluster_graph` holds every member of its leaves; one read back with
    ``kb.communities.records()`` lists its children only (the store keeps the members of leaves).
    ``estimated_chars`` is the report input estimate the leaf budget is measured in.

    Examples
    --------
    >>> c = Community("c1", 0, "leaf", "c0", (), ("chunk:a.md:c0000",), ("entity:ada",), 120)
    >>> c.kind, c.parent_id, len(c.chunk_refs)
    ('leaf', 'c0', 1)
    """

    community_id: str
    level: int
    kind: str  # "leaf" | "parent" | "root"
    parent_id: str | None
    child_ids: tuple[str, ...]
    chunk_refs: tuple[str, ...]
    entity_refs: tuple[str, ...]
    estimated_chars: int


def cluster(graph: CommunityGraph, *, resolution: float = 1.0, seed: int = 0, budget: int = LEAF_BUDGET,
            max_children: int = MAX_CHILDREN, previous: Sequence[Community] | None = None,
            engine: Engine = "leidenalg") -> list[Community]:
    """Communities of ``graph`` as a tree (parents before children).

    ``previous``: the communities of the previous generation; when given, the partition starts from
    them and keeps what did not change (``engine="leidenalg"`` fixes the untouched nodes;
    ``engine="igraph"`` only starts igraph's Leiden from the previous membership, for comparison).

    Examples
    --------
    >>> g = CommunityGraph(nodes=("chunk:a:1", "chunk:a:2", "entity:x"), links=((0, 2, 1.0), (1, 2, 1.0)),
    ...                    sizes=(10, 10, 3), chunk_count=2)
    >>> [c.kind for c in cluster(g)]
    ['root']
    """
    if graph.chunk_count == 0:
        return []
    with seeded(seed):  # one generator for every Leiden call below, re-seeded per call
        return _cluster(graph, resolution=resolution, seed=seed, budget=budget, max_children=max_children,
                        previous=previous, engine=engine)


def _cluster(graph: CommunityGraph, *, resolution: float, seed: int, budget: int, max_children: int,
             previous: Sequence[Community] | None, engine: Engine) -> list[Community]:
    a = to_arrays(graph)
    splitter = Splitter(a, resolution=resolution, seed=seed, budget=budget)
    prev_leaves = [c for c in previous or () if not c.child_ids]
    if prev_leaves:
        init, fixed = _previous_membership(a, prev_leaves)
        labels = _replace(igraph_of(a), a, init, fixed, resolution=resolution, seed=seed, engine=engine)
        labels = attach_chunkless(labels, a.is_chunk, a.src, a.dst, a.weight)
        labels = _keep_old_apart(labels, init, fixed, a, budget)
        keep = _unchanged_groups(labels, init, prev_leaves, a)
        leaves = splitter.leaves(labels, only=set(range(int(labels.max()) + 1)) - keep)
    else:
        labels = attach_chunkless(leiden(bare_graph(a.n, a.src, a.dst), resolution, seed, weights=a.weight.tolist()),
                                  a.is_chunk, a.src, a.dst, a.weight)
        leaves = splitter.leaves(labels)
    builder = _builder(a, leaves, resolution=resolution, seed=seed, max_children=max_children)
    if prev_leaves and any(c.child_ids for c in previous):
        root = _place(builder, a, leaves, list(previous), init)
    else:
        root = builder.build(tuple(range(len(leaves))))
    return _flatten(a, leaves, root)


def _previous_membership(a: Arrays, prev_leaves: list[Community]) -> tuple[np.ndarray, np.ndarray]:
    """Each node's previous leaf (or -1 if new) and whether it stays fixed: yes, unless its leaf lost
    more than half of its members (then what is left of it is placed again)."""
    index = {name: i for i, name in enumerate(a.names)}
    init = np.full(a.n, -1, dtype=np.int64)
    lost = np.zeros(len(prev_leaves), dtype=bool)
    for k, c in enumerate(prev_leaves):
        names = c.chunk_refs + c.entity_refs
        present = [index[name] for name in names if name in index]
        init[present] = k
        lost[k] = 2 * len(present) < len(names)
    fixed = init >= 0
    fixed[fixed] = ~lost[init[fixed]]
    return init, fixed


def _replace(g, a: Arrays, init: np.ndarray, fixed: np.ndarray, *, resolution: float, seed: int,
             engine: Engine) -> np.ndarray:
    """Leiden started from the previous membership. The new chunks of one source move as one unit (a
    document is placed where it belongs as a whole, not scattered chunk by chunk); new entities alone."""
    unit = _units(a, init)
    k = int(unit.max()) + 1
    start = np.full(k, -1, dtype=np.int64)
    start[unit] = init
    new = start < 0
    start[new] = int(init.max()) + 1 + np.arange(int(new.sum()))
    unit_fixed = np.zeros(k, dtype=bool)
    unit_fixed[unit] = fixed
    contracted = g.copy()
    contracted.contract_vertices(unit.tolist())
    contracted.simplify(multiple=True, loops=True, combine_edges={"weight": "sum"})
    if engine == "igraph":
        labels = leiden(contracted, resolution, seed, initial=canonical(start))
    else:
        import leidenalg as la

        part = la.RBConfigurationVertexPartition(contracted, initial_membership=canonical(start).tolist(),
                                                 weights="weight", resolution_parameter=resolution)
        optimiser = la.Optimiser()
        optimiser.set_rng_seed(seed)
        optimiser.optimise_partition(part, n_iterations=2, is_membership_fixed=unit_fixed.tolist())
        labels = np.asarray(part.membership, dtype=np.int64)
    return canonical(labels[unit])


def _units(a: Arrays, init: np.ndarray) -> np.ndarray:
    """Unit per node: the new chunks of each source share one, and a new entity joins the unit of the
    new chunks it is most linked to (a new source brings its new entities along); other nodes alone."""
    unit = np.arange(a.n)
    first: dict[str, int] = {}
    for i in np.flatnonzero((init < 0) & a.is_chunk).tolist():
        unit[i] = first.setdefault(a.names[i].split(":")[1], i)
    new_entity = (init < 0) & ~a.is_chunk
    new_chunk = (init < 0) & a.is_chunk
    ends = [(x, y) for x, y in ((a.src, a.dst), (a.dst, a.src))]
    x = np.concatenate([e[0] for e in ends])
    y = np.concatenate([e[1] for e in ends])
    w = np.concatenate([a.weight, a.weight])
    pick = new_entity[x] & new_chunk[y]
    if pick.any():
        ent, target, weight = x[pick], unit[y[pick]], w[pick]
        keys, inverse = np.unique(ent * a.n + target, return_inverse=True)
        total = np.bincount(inverse, weights=weight)
        ent, target = keys // a.n, keys % a.n
        order = np.lexsort((target, -total, ent))  # per entity: most weight, then the lower unit
        ent, target = ent[order], target[order]
        head = np.unique(ent, return_index=True)[1]
        unit[ent[head]] = target[head]
    return canonical(unit)


def _keep_old_apart(labels: np.ndarray, init: np.ndarray, fixed: np.ndarray, a: Arrays, budget: int) -> np.ndarray:
    """A group that newcomers pushed over the budget gives its previous leaves back as they were and
    keeps the newcomers apart (split further if needed), instead of reshuffling the old members."""
    k = int(labels.max()) + 1
    size = np.bincount(labels, weights=a.sizes, minlength=k)
    over = size[labels] > budget
    has_new = np.bincount(labels, weights=(~fixed).astype(np.float64), minlength=k) > 0
    pick = over & has_new[labels]
    if not pick.any():
        return labels
    out = labels.copy()
    old = pick & fixed
    out[old] = k + init[old]  # each previous leaf alone again
    return canonical(out)


def _unchanged_groups(labels: np.ndarray, init: np.ndarray, prev_leaves: list[Community], a: Arrays) -> set[int]:
    """Labels whose members are exactly one previous leaf's (those are kept as they are)."""
    order = np.argsort(labels, kind="stable")
    starts = np.concatenate([[0], np.flatnonzero(np.diff(labels[order])) + 1])
    values = init[order]
    low, high = np.minimum.reduceat(values, starts), np.maximum.reduceat(values, starts)
    counts = np.diff(np.concatenate([starts, [len(order)]]))
    prev_sizes = np.asarray([len(c.chunk_refs) + len(c.entity_refs) for c in prev_leaves])
    same = (low == high) & (low >= 0)
    same[same] = prev_sizes[low[same]] == counts[same]
    return set(labels[order][starts][same].tolist())


def _builder(a: Arrays, leaves: list[np.ndarray], *, resolution: float, seed: int, max_children: int) -> TreeBuilder:
    leaf_of = np.empty(a.n, dtype=np.int64)
    for k, members in enumerate(leaves):
        leaf_of[members] = k
    chunks = np.asarray([int(a.is_chunk[m].sum()) for m in leaves])
    src, dst, weight = group_links(leaf_of, a.src, a.dst, a.weight, len(leaves))
    return TreeBuilder(chunks, src, dst, weight, resolution=resolution, seed=seed, max_children=max_children)


def _place(builder: TreeBuilder, a: Arrays, leaves: list[np.ndarray], previous: list[Community],
           init: np.ndarray) -> Node:
    """Put the new leaves where their members were in the previous tree, then repair fan-out and balance."""
    by_id = {c.community_id: c for c in previous}
    prev_leaves = [c for c in previous if not c.child_ids]
    homes: dict[str | None, list[int]] = {}
    for k, members in enumerate(leaves):
        old = Counter(int(x) for x in init[members] if x >= 0)
        if old:
            source = min(old, key=lambda x: (-old[x], x))
        else:  # only new nodes: the previous leaf its links weigh most towards
            source = _most_linked(a, members, init)
        parent = prev_leaves[source].parent_id if source is not None else None
        homes.setdefault(parent, []).append(k)
    root_id = next(c.community_id for c in previous if c.parent_id is None)
    homes[root_id] = homes.get(root_id, []) + homes.pop(None, [])

    def assemble(cid: str, is_root: bool) -> Node | None:
        kids = [n for child in by_id[cid].child_ids if by_id[child].child_ids
                for n in [assemble(child, False)] if n is not None]
        kids += [Node((k,)) for k in homes.get(cid, [])]
        if not kids:
            return None
        if len(kids) == 1 and (not is_root or kids[0].children):
            return kids[0]
        members = tuple(sorted(k for n in kids for k in n.leaves))
        if len(kids) > builder.max_children or _unbalanced(builder, kids):
            return builder.build(members)
        return Node(members, tuple(sorted(kids, key=lambda n: n.leaves[0])))

    root = assemble(root_id, True)
    return root if root is not None else builder.build(tuple(range(len(leaves))))


def _most_linked(a: Arrays, members: np.ndarray, init: np.ndarray) -> int | None:
    inside = np.zeros(a.n, dtype=bool)
    inside[members] = True
    weights: Counter = Counter()
    for x, y in ((a.src, a.dst), (a.dst, a.src)):
        pick = inside[x] & (init[y] >= 0)
        for label, w in zip(init[y[pick]].tolist(), a.weight[pick].tolist()):
            weights[label] += w
    return min(weights, key=lambda x: (-weights[x], x)) if weights else None


def _unbalanced(builder: TreeBuilder, kids: list[Node]) -> bool:
    """A parent child holding more than REPAIR_SHARE of the chunks (full builds keep it at most half: the
    slack keeps a small addition from rebuilding a whole subtree)."""
    chunks = [float(builder.chunks[list(n.leaves)].sum()) for n in kids]
    return any(n.children and c > sum(chunks) * REPAIR_SHARE for n, c in zip(kids, chunks))


def _flatten(a: Arrays, leaves: list[np.ndarray], root: Node) -> list[Community]:
    out: list[Community | None] = []
    encoded = json_strings(list(a.names))
    first_entity = int(np.argmin(a.is_chunk)) if not a.is_chunk.all() else a.n
    ordered = not a.is_chunk[first_entity:].any()  # sorted names: every chunk before every entity

    def walk(node: Node, parent_id: str | None) -> str:
        members = np.sort(np.concatenate([leaves[k] for k in node.leaves]), kind="stable")  # merges sorted runs
        idx = members.tolist()
        pick = itemgetter(*idx) if len(idx) > 1 else (lambda seq: (seq[idx[0]],))  # a tuple either way
        names = pick(a.names)  # node names are sorted, so these are too
        level = node.level  # the id is stable_hash({"members": names, "level": level}), assembled faster
        body = '","'.join(pick(encoded))
        cid = "c-" + json_hash('{"level":%d,"members":["%s"]}' % (level, body), length=12)
        kind = "root" if parent_id is None else ("parent" if node.children else "leaf")
        index = len(out)
        out.append(None)  # placeholder keeps parents before children
        child_ids = tuple(walk(child, cid) for child in node.children)
        if ordered:
            cut = int(np.searchsorted(members, first_entity))
            chunks, entities = names[:cut], names[cut:]
        else:
            flags = a.is_chunk[members].tolist()
            chunks = tuple(n for n, c in zip(names, flags) if c)
            entities = tuple(n for n, c in zip(names, flags) if not c)
        out[index] = Community(community_id=cid, level=level, kind=kind, parent_id=parent_id,
                               child_ids=tuple(sorted(child_ids)), chunk_refs=chunks, entity_refs=entities,
                               estimated_chars=int(a.sizes[members].sum()))
        return cid

    walk(root, None)
    return out
