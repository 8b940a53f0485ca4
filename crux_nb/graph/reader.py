"""The graph reader: ``neighbors()`` over structural and persisted edges, and ``hydrate()``.

A reader is pinned to one state of its knowledge base: later changes to the
knowledge base do not change what an existing reader returns (take a fresh
``kb.reader`` to see them).
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any, Literal, NamedTuple

from ..errors import ParameterError
from ..refs import ChunkRef, KnowledgeRef, as_ref, decode_ref, encode_ref
from ..retrieval.hits import EvidenceHit
from ..retrieval.hydrate import chunk_hit
from .adjacency import DIRECTION_NAMES, IN, OUT, AdjacencyIndex
from .structure import StructureIndex

__all__ = ["GraphReader", "Neighbor", "Support"]


class Support(NamedTuple):
    """One chunk supporting a persisted edge."""

    source_id: str
    chunk_ref: ChunkRef
    provenance: Literal["exact", "derived"]


class Neighbor(NamedTuple):
    """One neighbour of a ref. ``evidence`` is ``None`` unless asked for. (Immutable; a named tuple for speed.)"""

    ref: KnowledgeRef
    type: str
    direction: Literal["out", "in"]
    evidence: tuple[Support, ...] | None = None

    def __repr__(self) -> str:
        extra = "" if self.evidence is None else f", evidence={len(self.evidence)}"
        return f"Neighbor({encode_ref(self.ref)!r}, type={self.type!r}, direction={self.direction!r}{extra})"


def check_limit(owner: str, limit: Any) -> int | None:
    """Upstream: floor, clamp at 0, ``None`` = unlimited. NaN and non-numbers are errors."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or (isinstance(limit, float) and not math.isfinite(limit)):
        raise ParameterError(owner, "limit", "a finite number or None", limit)
    return max(0, math.floor(limit))


def check_types(owner: str, types: Any) -> frozenset[str] | None:
    if types is None:
        return None
    if isinstance(types, str) or not hasattr(types, "__iter__"):
        raise ParameterError(owner, "types", "a list of relation type names or None", types)
    types = list(types)
    if not all(isinstance(t, str) for t in types):
        raise ParameterError(owner, "types", "a list of strings", types)
    return frozenset(types)


class GraphReader:
    """Reads neighbours in O(degree) from indexes built once per pinned state."""

    def __init__(self, state: Any, *, namespace: str):
        self._state = state
        self.namespace = namespace
        self._decoded: dict[str, KnowledgeRef] = {}

    @cached_property
    def _structure(self) -> StructureIndex:
        return StructureIndex(self._state.parents, self._state.chunks)

    @cached_property
    def _adjacency(self) -> AdjacencyIndex:
        return AdjacencyIndex(self._state.edges, self._state.edge_evidence)

    def _decode(self, encoded: str) -> KnowledgeRef:
        ref = self._decoded.get(encoded)
        if ref is None:
            ref = self._decoded[encoded] = decode_ref(encoded)
        return ref

    def neighbors(self, ref: KnowledgeRef | str, *, types: Any = None, direction: Literal["out", "in"] | None = None,
                  limit: int | None = None, include_evidence: bool = False) -> list[Neighbor]:
        """Neighbours of ``ref``: structural ones first, then persisted ones, cut to ``limit``.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="guide")
        >>> kb.add_text("guide", "The first part is about planning.\\n\\nThe second part is about launching.",
        ...             format="text", chunk_size=50)
        >>> kb.reader.neighbors("chunk:guide:c0000", types=["sequence"])
        [Neighbor('chunk:guide:c0001', type='sequence', direction='out')]
        """
        owner = "neighbors()"
        ref = as_ref(ref)
        if direction not in (None, "out", "in"):
            raise ParameterError(owner, "direction", "'out', 'in' or None (both)", direction)
        wanted = check_types(owner, types)
        cap = check_limit(owner, limit)
        encoded = encode_ref(ref)
        structural = [p for p in self._structure.project(ref.kind, ref.segments(), encoded)
                      if (wanted is None or p[2] in wanted) and (direction is None or p[3] == direction)]
        structural.sort()
        if cap is not None:
            structural = structural[:cap]
            if cap == 0:
                return []
        out = [Neighbor(self._decode(r), t, d, () if include_evidence else None) for _, r, t, d in structural]
        adj = self._adjacency
        codes = None if wanted is None else {adj.type_code[t] for t in wanted if t in adj.type_code}
        if codes is not None and not codes:
            return out[:cap] if cap is not None else out
        dir_code = None if direction is None else (OUT if direction == "out" else IN)
        names = adj.type_names
        for peer, t, d, row in adj.entries(encoded, type_codes=codes, direction=dir_code):
            if cap is not None and len(out) >= cap:
                break
            evidence = None
            if include_evidence:
                evidence = tuple(Support(s, self._decode(c), p) for s, c, p in adj.evidence(row))
            out.append(Neighbor(self._decode(peer), names[t], DIRECTION_NAMES[d], evidence))
        return out

    def hydrate(self, ref: KnowledgeRef | str) -> EvidenceHit | None:
        """An :class:`EvidenceHit` with score 0 for a chunk of this state; ``None`` otherwise."""
        ref = ref if not isinstance(ref, str) else decode_ref(ref)
        if not isinstance(ref, ChunkRef):
            return None
        row = self._state.lookup.chunk_row.get(encode_ref(ref))
        if row is None:
            return None
        return chunk_hit(self._state, row, namespace=self.namespace)
