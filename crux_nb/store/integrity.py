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

import pandas as pd

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
    documents, chunks = state.documents["source_id"], state.chunks["ref"]
    problems = []  # Arrow membership tests: opening a large knowledge base stays a matter of milliseconds
    for table in ("parents", "chunks"):
        if not _within(state.frame(table)["source_id"], documents):
            problems.append(f"{table} of sources with no document row")
    evidence, edges = state.edge_evidence, state.edges
    if not _within(evidence["chunk_ref"], chunks):
        problems.append("edge evidence pointing at chunks that do not exist")
    if not _within(evidence["edge_id"], edges["edge_id"]):
        problems.append("edge evidence for edges that do not exist")
    if len(edges):
        ends = pd.concat([edges["from_ref"], edges["to_ref"]], ignore_index=True)
        ends = ends[~ends.str.startswith("entity:").to_numpy(dtype=bool) & ~_member(ends, chunks)].unique()
        if len(ends):  # few: documents and sections named as edge ends
            existing = ({encode_ref(DocumentRef(s)) for s in documents.tolist()}
                        | {encode_ref(ParentRef(s, p)) for s, p in zip(state.parents["source_id"].tolist(),
                                                                        state.parents["parent_id"].tolist())})
            if any(ref not in existing for ref in ends):
                problems.append("edges between refs that do not exist")
        if not _within(edges["edge_id"], evidence["edge_id"]):
            problems.append("edges without evidence")
    if problems:
        raise StorageError(f"{where} is inconsistent: {'; '.join(problems)}.", code="inconsistent_generation",
                           hint=RESTORE)


def _member(values: pd.Series, universe: pd.Series) -> Any:
    """A boolean array: which of ``values`` are among ``universe`` (Arrow's hash set; pandas' ``isin`` on Arrow
    strings loops in Python)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array(values.to_numpy(dtype=object), type=pa.string())
    found = pc.is_in(arr, value_set=pa.array(universe.to_numpy(dtype=object), type=pa.string()))
    return pc.fill_null(found, False).to_numpy(zero_copy_only=False)


def _within(values: pd.Series, universe: pd.Series) -> bool:
    return bool(_member(values, universe).all()) if len(values) else True
