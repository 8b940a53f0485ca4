"""Hydration: turning a chunk row of a knowledge-base state into an :class:`EvidenceHit`."""

from __future__ import annotations

from typing import Any

from ..hits import EvidenceHit, HitParent, Provenance, Source


def chunk_hit(state: Any, row: int, *, namespace: str, score: float = 0.0,
              provenance: Provenance | None = None) -> EvidenceHit:
    """An evidence hit for row ``row`` of ``state.chunks`` (built whole: a ``replace`` afterwards costs as much)."""
    lookup = state.lookup
    col = lookup.columns
    source_id, parent_id = col["source_id"][row], col["parent_id"][row]
    parent = None
    if isinstance(parent_id, str):
        parent = HitParent(parent_id=parent_id, title=lookup.parent_title.get((source_id, parent_id)))
    return EvidenceHit(namespace=namespace, source=Source(id=source_id, path=lookup.document_path.get(source_id)),
                       chunk_id=col["chunk_id"][row], content=col["content"][row], metadata=col["metadata"][row],
                       score=score, parent=parent, provenance=provenance)
