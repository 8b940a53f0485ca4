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
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CruxError, StorageError
from ..refs import DocumentRef, ParentRef, encode_ref
from .array_cache import code_digest, read_arrays, write_arrays
from .generations import RESTORE
from .indexes import fingerprint
from .splice import ascending

__all__ = ["check_manifest_kb", "check_tables", "checks_key", "remember_agreement", "MissingTableWarning", "CHECKED_TABLES"]

#: The tables :func:`check_tables` reads (their part checksums name what it found)
CHECKED_TABLES = ["documents", "parents", "chunks", "edges", "edge_evidence"]
CHECKS = "checks"  # the array cache's kind for checks passed


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


def checks_key(manifest_tables: Any) -> str | None:
    """The key under which :func:`check_tables` remembers (:mod:`crux_nb.store.array_cache`) that the tables with
    these part checksums (a generation's manifest ``tables``, checked against their files) agree, by this code;
    None for a manifest without part checksums."""
    code = code_digest("store")
    return None if code is None or not isinstance(manifest_tables, dict) else \
        fingerprint(manifest_tables, CHECKED_TABLES, {"checks": code})


def check_tables(root: Path, generation: str, manifest: dict, state: Any, *, key: str | None = None) -> None:
    """Refuse a generation whose tables contradict each other; warn about a manifest without embeddings. With
    ``key`` (:func:`checks_key` of tables whose checksums were verified) tables found to agree before, by this
    code, are not checked again (0.3 s at 200k chunks / 1M edges), and tables found to agree now are remembered."""
    where = f"generation {generation} of {str(root)!r}"
    tables = manifest.get("tables")
    if isinstance(tables, dict) and "embeddings" not in tables:
        warnings.warn(f"{where} lists no embeddings table (saved before vectors were saved, or edited): it opens "
                      "with no stored vectors; embed_chunks() computes them again.", MissingTableWarning, stacklevel=3)
    if key is not None and read_arrays(CHECKS, key) is not None:
        return
    _check_agreement(where, state)
    if key is not None:
        write_arrays(CHECKS, key, {})


def remember_agreement(state: Any, key: str | None) -> bool:
    """Check that ``state``'s tables agree and remember it under ``key`` (:func:`checks_key` of the parts they
    were just saved as), so the first open of that generation skips the check; whether it was remembered (never
    when they disagree: that open then checks and refuses them)."""
    if key is None:
        return False
    try:
        _check_agreement("the saved tables", state)
    except StorageError:
        return False
    return write_arrays(CHECKS, key, {})


def _check_agreement(where: str, state: Any) -> None:
    documents, chunks = _arrow(state.documents["source_id"]), _arrow(state.chunks["ref"])
    problems = []  # Arrow membership tests on the columns' own Arrow arrays (no Python object per value)
    for table in ("parents", "chunks"):
        if not _within(_arrow(state.frame(table)["source_id"]), documents):
            problems.append(f"{table} of sources with no document row")
    evidence, edges = state.edge_evidence, state.edges
    if not _within(_arrow(evidence["chunk_ref"]), chunks):
        problems.append("edge evidence pointing at chunks that do not exist")
    edge_ids, evidence_ids = _arrow(edges["edge_id"]), _arrow(evidence["edge_id"])
    same = _same_sorted_set(evidence_ids, edge_ids)  # both rules at once, without hashing, when it holds
    if not same and not _within(evidence_ids, edge_ids):
        problems.append("edge evidence for edges that do not exist")
    if len(edges):
        ends = pa.chunked_array(_arrow(edges["from_ref"]).chunks + _arrow(edges["to_ref"]).chunks,
                                type=pa.large_string())
        entity = pc.fill_null(pc.starts_with(ends, "entity:"), False)  # a missing end is checked, and fails
        ends = pc.filter(ends, pc.invert(entity))  # hashed against the chunks: only the ends not named entities
        ends = pc.unique(pc.filter(ends, pc.invert(_member(ends, chunks)))).to_pylist()
        if ends:  # few: documents and sections named as edge ends
            existing = ({encode_ref(DocumentRef(s)) for s in state.documents["source_id"].tolist()}
                        | {encode_ref(ParentRef(s, p)) for s, p in zip(state.parents["source_id"].tolist(),
                                                                        state.parents["parent_id"].tolist())})
            if any(ref not in existing for ref in ends):
                problems.append("edges between refs that do not exist")
        if not same and not _within(edge_ids, evidence_ids):
            problems.append("edges without evidence")
    if problems:
        raise StorageError(f"{where} is inconsistent: {'; '.join(problems)}.", code="inconsistent_generation",
                           hint=RESTORE)


def _arrow(values: pd.Series) -> pa.ChunkedArray:
    """A text column as Arrow large strings: the column's own buffers when it is Arrow-backed (pandas' ``str``),
    else converted (pandas' ``isin`` on Arrow strings loops in Python)."""
    try:
        found = pa.array(values)
    except (pa.ArrowException, TypeError, ValueError):
        found = pa.array(values.to_numpy(dtype=object), type=pa.string())
    found = found if isinstance(found, pa.ChunkedArray) else pa.chunked_array([found])
    if found.type != pa.large_string():
        found = found.cast(pa.large_string())
    return found


def _same_sorted_set(a: pa.ChunkedArray, b: pa.ChunkedArray) -> bool:
    """Whether ``a`` and ``b`` are both sorted (the tables keep their keys in order) and hold the same distinct
    values: a few vectorised comparisons instead of two hash sets of every value. False also when either is
    unsorted or has a missing value (the caller then tests membership by hashing: the rule that fails is named).

    >>> _same_sorted_set(pa.chunked_array([["a", "a", "b"]]), pa.chunked_array([["a", "b"]]))
    True
    >>> _same_sorted_set(pa.chunked_array([["b", "a"]]), pa.chunked_array([["a", "b"]]))
    False
    """
    # compared chunk by chunk (Arrow aligns them): joining a million ids into one array first costs ~50 MB of fresh
    # memory, which on a virtual machine costs more than the comparisons
    if a.null_count or b.null_count or not (ascending([a]) and ascending([b])):
        return False
    a, b = _distinct_sorted(a), _distinct_sorted(b)
    return len(a) == len(b) and (not len(a) or bool(pc.all(pc.equal(a, b)).as_py()))


def _distinct_sorted(values: pa.ChunkedArray) -> pa.ChunkedArray:
    if len(values) < 2:
        return values
    first = pc.not_equal(values[1:], values[:-1])
    return pc.filter(values, pa.chunked_array([pa.array([True])] + first.chunks, type=pa.bool_()))


def _member(values: pa.ChunkedArray, universe: pa.ChunkedArray) -> pa.ChunkedArray:
    """Which of ``values`` are among ``universe`` (Arrow's hash set; a missing value is not a member)."""
    return pc.fill_null(pc.is_in(values, value_set=universe.combine_chunks()), False)


def _within(values: pa.ChunkedArray, universe: pa.ChunkedArray) -> bool:
    return bool(pc.all(_member(values, universe)).as_py()) if len(values) else True
