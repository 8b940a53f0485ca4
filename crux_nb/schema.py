"""Every frame schema and column name of crux_nb, in one place.

A schema is an ordered mapping ``column -> dtype kind``. Kinds:

``str``
    pandas' string dtype (``"str"``); missing values are NaN.
``int``
    ``int64``.
``float``
    ``float64``.
``bool``
    ``bool``.
``object``
    Python objects: read-only metadata mappings and tuples.

Frames are coerced to their schema at every public boundary with :func:`coerce`,
so a frame read back from Parquet equals the one that was saved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .errors import InputError

__all__ = ["SCHEMAS", "ENTITY_TYPES", "OPTIONAL_COLUMNS", "Metadata", "empty_frame", "coerce", "require_columns", "frozen_metadata", "check_unicode",
           "has_surrogate"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(value: str) -> bool:
    """Whether ``value`` holds a lone surrogate (valid in a Python str, but not Unicode: nothing can encode it)."""
    return _SURROGATE.search(value) is not None


def check_unicode(value: str, what: str) -> str:
    """Raise :class:`InputError` when ``value`` holds a lone surrogate (not valid Unicode: it cannot be saved)."""
    found = _SURROGATE.search(value)
    if found:
        raise InputError(f"{what} contains the lone surrogate {found.group()!r} at position {found.start()}; "
                         "it is not valid Unicode and cannot be saved.",
                         hint="remove it, or repair the text with text.encode('utf-8', 'replace').decode('utf-8').")
    return value

DOCUMENTS = {
    "source_id": "str",
    "title": "str",
    "path": "str",
    "media_type": "str",
    "content_hash": "str",
    "n_chunks": "int",
    "n_chars": "int",
    "metadata": "object",
}
PARENTS = {
    "source_id": "str",
    "parent_id": "str",
    "ordinal": "int",
    "title": "str",
    "heading_level": "int",
    "metadata": "object",
}
CHUNKS = {
    "ref": "str",
    "source_id": "str",
    "chunk_id": "str",
    "parent_id": "str",
    "ordinal": "int",
    "content": "str",
    "n_chars": "int",
    "metadata": "object",
}
#: The entity types of the graph: a model's other types become ``other`` (its own word kept in ``raw_type``).
ENTITY_TYPES = ("person", "organization", "place", "product", "event", "law", "group", "work", "concept", "code",
                "option", "other")
ENTITIES = {
    "entity_id": "str",
    "ref": "str",
    "canonical_name": "str",
    "type": "str",
    "aliases": "object",
    "description": "str",
    "raw_type": "str",  # the model's own type word when it is not one of ENTITY_TYPES (then type is "other")
}
#: Columns a frame may lack (frames built by callers, knowledge bases saved before the column existed):
#: :func:`coerce` fills them with missing values.
OPTIONAL_COLUMNS = {"entities": ("raw_type",)}
EDGES = {
    "edge_id": "str",
    "type": "str",
    "from_ref": "str",
    "to_ref": "str",
    "direction": "str",
    "description": "str",
    "weight": "float",
    "stage": "str",
}
EDGE_EVIDENCE = {
    "edge_id": "str",
    "source_id": "str",
    "chunk_ref": "str",
    "provenance": "str",
}

EXTRACTIONS = {
    "source_id": "str",
    "content_hash": "str",
    "model_fingerprint": "str",
    "output": "str",  # the model's validated extraction for the source, as canonical JSON
}

COMMUNITY_GENERATIONS = {  # the current-generation pointer of each community scope
    "scope": "str",
    "generation_id": "str",
    "input_fingerprint": "str",
    "strategy_fingerprint": "str",
    "view_id": "str",
    "view_revision": "str",
    "sequence": "int",
    "source_hashes": "str",  # JSON {source_id: content_hash} of the sources the generation was built from
}
COMMUNITIES = {
    "scope": "str",
    "generation_id": "str",
    "community_id": "str",
    "level": "int",
    "kind": "str",
    "parent_id": "str",
    "child_ids": "object",
    "n_chunks": "int",
    "n_entities": "int",
    "estimated_chars": "int",
    "member_hash": "str",
}
COMMUNITY_MEMBERS = {
    "scope": "str",
    "generation_id": "str",
    "community_id": "str",
    "member_ref": "str",
    "member_kind": "str",
}
REPORTS = {
    "scope": "str",
    "generation_id": "str",
    "community_id": "str",
    "level": "int",
    "parent_id": "str",
    "title": "str",
    "summary": "str",
    "view_revision": "str",
    "graph_generation": "str",
    "strategy_fingerprint": "str",
    "member_hash": "str",
    "n_entities": "int",
    "n_chunks": "int",
    "n_assertions": "int",
}
REPORT_FINDINGS = {
    "scope": "str",
    "generation_id": "str",
    "community_id": "str",
    "finding_id": "str",
    "ordinal": "int",
    "statement": "str",
    "evidence": "object",
    "assertion_refs": "object",
}
EMBEDDINGS = {  # one vector per (embedder fingerprint, chunk content hash); see crux_nb.embeddings
    "embedder": "str",
    "content_hash": "str",
    "vector": "object",  # float32 little-endian bytes of length 4 * dim
}

SCHEMAS: dict[str, dict[str, str]] = {
    "documents": DOCUMENTS,
    "parents": PARENTS,
    "chunks": CHUNKS,
    "entities": ENTITIES,
    "edges": EDGES,
    "edge_evidence": EDGE_EVIDENCE,
    "extractions": EXTRACTIONS,
    "community_generations": COMMUNITY_GENERATIONS,
    "communities": COMMUNITIES,
    "community_members": COMMUNITY_MEMBERS,
    "reports": REPORTS,
    "report_findings": REPORT_FINDINGS,
    "embeddings": EMBEDDINGS,
}

#: Columns holding JSON-like values (serialised as JSON text in Parquet).
JSON_COLUMNS: dict[str, tuple[str, ...]] = {
    "documents": ("metadata",),
    "parents": ("metadata",),
    "chunks": ("metadata",),
    "entities": ("aliases",),
    "communities": ("child_ids",),
    "report_findings": ("evidence", "assertion_refs"),
}
#: JSON columns that hold tuples (the others hold read-only metadata mappings).
TUPLE_COLUMNS = frozenset({"aliases", "child_ids", "evidence", "assertion_refs"})

_DTYPES = {"str": "str", "int": "int64", "float": "float64", "bool": "bool", "object": "object"}


class Metadata(dict):
    """A read-only dict: metadata shared with the store cannot be changed in place."""

    __slots__ = ()

    def _readonly(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("crux_nb metadata is read-only; copy it with dict(m) to change it.")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _readonly  # type: ignore[assignment]

    def __ior__(self, other: Any) -> Any:  # type: ignore[override]
        self._readonly()

    def __reduce__(self) -> Any:
        return (Metadata, (dict(self),))

    def __copy__(self) -> Metadata:
        return self

    def __deepcopy__(self, memo: Any) -> Metadata:
        return self


def frozen_metadata(value: Mapping[str, Any] | None) -> Metadata:
    """Return ``value`` as read-only :class:`Metadata` (nested dicts frozen too)."""
    if value is None:
        return Metadata()
    return Metadata({str(k): _freeze(v) for k, v in value.items()})


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return frozen_metadata(value)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def empty_frame(table: str) -> pd.DataFrame:
    """A zero-row frame with the table's columns and dtypes."""
    schema = SCHEMAS[table]
    return pd.DataFrame({c: pd.Series([], dtype=_DTYPES[k]) for c, k in schema.items()})


def require_columns(frame: Any, columns: list[str] | tuple[str, ...], *, what: str) -> None:
    """Raise :class:`InputError` naming the missing columns of ``frame``."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{what} must be a pandas DataFrame; got {type(frame).__name__}.")
    if isinstance(frame.columns, pd.MultiIndex) or not frame.columns.is_unique:
        raise InputError(f"{what} has repeated or multi-level column names {list(map(str, frame.columns))}.",
                         hint="give every column one distinct name (flatten MultiIndex columns first).")
    missing = [c for c in columns if not _has_column(frame, c)]
    if missing:
        raise InputError(
            f"{what} is missing column(s) {missing}; it has {list(map(str, frame.columns))}.",
            hint=f"the frame needs the columns {list(columns)}.",
        )


def _has_column(frame: pd.DataFrame, column: Any) -> bool:
    try:
        return column in frame.columns
    except TypeError:  # an unhashable column name (a list, a dict) is never a column
        return False


def coerce(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """Return a new frame with exactly ``table``'s columns, order and dtypes."""
    schema = SCHEMAS[table]
    absent = [c for c in OPTIONAL_COLUMNS.get(table, ()) if c not in frame.columns]
    if absent:
        frame = frame.assign(**{c: None for c in absent})  # a new frame: the caller's is never changed
    require_columns(frame, list(schema), what=f"the {table} frame")
    out = {}
    for column, kind in schema.items():
        series = frame[column]
        out[column] = _coerce_series(series, kind, f"{table}.{column}")
    return pd.DataFrame(out).reset_index(drop=True)


def _coerce_series(series: pd.Series, kind: str, name: str) -> pd.Series:
    try:
        if kind == "object":
            # keep the index: the other columns keep theirs, and DataFrame() aligns on it
            return pd.Series(list(series), dtype="object", name=series.name, index=series.index)
        if kind == "str":
            return series.astype("str")
        if kind == "int":
            return series.astype("int64")
        if kind == "float":
            return series.astype("float64")
        return series.astype("bool")
    except (TypeError, ValueError) as exc:
        raise InputError(f"column {name} cannot be read as {kind}: {exc}") from None
