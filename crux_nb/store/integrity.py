"""What ``crux_nb.open`` checks beyond checksums: the manifest's knowledge-base fields, and that the tables of one
generation agree with each other (issue 36).

Checksums prove that files are the ones the manifest lists, not that the manifest and tables make sense: a
crafted (or hand-edited) generation whose checksums match can still hold ``"chunk_size": 0`` (the next
``add_text`` looped forever in ``chunking.pack``) or evidence pointing at chunks that do not exist (it queried
"fine"). Both are refused with :class:`~crux_nb.errors.StorageError`: ``manifest_invalid`` and
``inconsistent_generation``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from ..errors import CruxError, StorageError
from ..refs import DocumentRef, ParentRef, encode_ref
from .generations import RESTORE

__all__ = ["check_manifest_kb", "check_tables", "MissingTableWarning"]


class MissingTableWarning(UserWarning):
    """A manifest lists no table for a kind of data this crux_nb saves (opened empty)."""


def check_manifest_kb(root: Path, generation: str, meta: Any) -> dict:
    """The manifest's ``kb`` record validated as ``crux_nb.knowledge_base()`` validates its arguments:
    ``{"id", "namespace", "chunk_size", "lexical"}`` (a ``LexicalSettings``)."""
    from ..validation import check_name
    from .chunking import check_chunk_size
    from .lexical import settings_from_record

    where = f"the manifest of generation {generation} of {str(root)!r}"
    try:
        if not isinstance(meta, dict):
            raise TypeError("the 'kb' entry is not an object")
        return {"id": check_name("crux_nb.open()", "id", meta["id"]),
                "namespace": check_name("crux_nb.open()", "namespace", meta["namespace"]),
                "chunk_size": check_chunk_size(meta["chunk_size"]),
                "lexical": settings_from_record(meta.get("lexical"))}
    except (CruxError, KeyError, TypeError, ValueError) as exc:
        detail = exc.message if isinstance(exc, CruxError) else f"{type(exc).__name__}: {exc}"
        raise StorageError(f"{where} holds invalid knowledge-base settings ({detail}).", code="manifest_invalid",
                           hint=RESTORE) from None


def check_tables(root: Path, generation: str, manifest: dict, state: Any) -> None:
    """Refuse a generation whose tables contradict each other; warn about a manifest without embeddings."""
    where = f"generation {generation} of {str(root)!r}"
    tables = manifest.get("tables")
    if isinstance(tables, dict) and "embeddings" not in tables:
        warnings.warn(f"{where} lists no embeddings table (saved before vectors were saved, or edited): it opens "
                      "with no stored vectors; embed_chunks() computes them again.", MissingTableWarning, stacklevel=3)
    documents = set(state.documents["source_id"].tolist())
    chunk_refs = set(state.chunks["ref"].tolist())
    problems = []
    for table in ("parents", "chunks"):
        stray = set(state.frame(table)["source_id"].tolist()) - documents
        if stray:
            problems.append(f"{table} of {len(stray)} source(s) with no document row")
    evidence = state.edge_evidence
    if len(evidence):
        if not set(evidence["chunk_ref"].tolist()) <= chunk_refs:
            problems.append("edge evidence pointing at chunks that do not exist")
        if not set(evidence["edge_id"].tolist()) <= set(state.edges["edge_id"].tolist()):
            problems.append("edge evidence for edges that do not exist")
    edges = state.edges
    if len(edges):
        existing = (chunk_refs | {encode_ref(DocumentRef(s)) for s in documents}
                    | {encode_ref(ParentRef(s, p)) for s, p in zip(state.parents["source_id"].tolist(),
                                                                    state.parents["parent_id"].tolist())})
        ends = set(edges["from_ref"].tolist()) | set(edges["to_ref"].tolist())
        if any(not ref.startswith("entity:") and ref not in existing for ref in ends):
            problems.append("edges between refs that do not exist")
        if not set(edges["edge_id"].tolist()) <= set(evidence["edge_id"].tolist()):
            problems.append("edges without evidence")
    if problems:
        raise StorageError(f"{where} is inconsistent: {'; '.join(problems)}.", code="inconsistent_generation",
                           hint=RESTORE)
