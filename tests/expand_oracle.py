"""The per-node Python traversal of ``expand_relations`` (upstream's breadth-first search over
``reader.neighbors()``), kept as the oracle for the vectorised traversal in ``crux_nb.graph.frontier``.

It is the implementation ``expand_relations`` shipped before the vectorised one, plus the relevance
ranking's mass (a node passes on the mass that reached it from earlier generations, scaled by its
specificity when it is not a chunk).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from crux_nb.refs import encode_ref


@dataclass
class Candidate:
    distance: int
    seed_rank: int
    support: set
    path: tuple
    edges: tuple
    discovery: int
    mass: float = 0.0


def cost(entity_hops: str, here: str, there: str) -> int:
    if entity_hops == "free":
        return 0 if here == "entity" or there == "entity" else 1
    return 0 if there == "entity" and here != "entity" else 1


def traverse(reader, seeds, *, types, direction, depth, entity_hops, fan_out, max_candidates, weights=None,
             spec=None, floor=None, pruned=None, damping=1.0):
    """(candidates in discovery order, warnings). ``spec(encoded ref) -> float`` enables mass; with it,
    ``floor`` prunes a read past the first hop that passes less than ``floor`` x the seed's weight
    (each pruned ref is appended to the ``pruned`` list when one is given), and a hop landing past distance 1
    carries ``damping`` x the mass."""
    candidates: dict[str, Candidate] = {}
    warnings: list[str] = []
    capped = False
    discovery = 0
    for rank, seed in enumerate(seeds):
        seed_ref = encode_ref(seed)
        seen = {seed_ref}
        weight = 1.0 if weights is None else weights[rank]
        incoming: dict[str, list[tuple[int, float]]] = {seed_ref: [(-1, weight)]}  # (generation of source, mass)
        queue = deque([(seed, seed_ref, 0, (seed_ref,), (), 0)])
        while queue:
            ref, encoded, distance, path, edges, gen = queue.popleft()
            if distance >= depth:
                continue
            mass = sum(m for g, m in incoming.get(encoded, ()) if g < gen)
            passed = mass * (spec(encoded) if spec is not None and ref.kind != "chunk" else 1.0)
            if spec is not None and floor and distance >= 1 and passed < weight * floor * (1 - 1e-9):
                if pruned is not None:
                    pruned.append(encoded)
                continue
            neighbors = reader.neighbors(ref, types=types, direction=direction, limit=fan_out)
            if len(neighbors) >= fan_out:
                warnings.append(f"expand_relations truncated neighbors for {encoded} at {fan_out}.")
            for n in neighbors:
                peer = encode_ref(n.ref)
                nxt = distance + cost(entity_hops, ref.kind, n.ref.kind)
                if nxt > depth:
                    continue
                route = (path + (peer,), edges + (n.type,))
                carried = passed * damping if nxt >= 2 and nxt > distance else passed
                incoming.setdefault(peer, []).append((gen, carried))
                if peer != seed_ref:
                    current = candidates.get(peer)
                    if current is not None:
                        current.support.add(seed_ref)
                        current.mass += carried
                        if (nxt, rank) < (current.distance, current.seed_rank):
                            current.distance, current.seed_rank = nxt, rank
                            current.path, current.edges = route
                    elif len(candidates) < max_candidates:
                        discovery += 1
                        candidates[peer] = Candidate(nxt, rank, {seed_ref}, route[0], route[1], discovery, carried)
                    elif not capped:
                        capped = True
                        warnings.append(f"expand_relations truncated graph candidates at {max_candidates}.")
                if peer not in seen:
                    seen.add(peer)
                    queue.append((n.ref, peer, nxt, *route, gen + 1))
    return candidates, warnings
