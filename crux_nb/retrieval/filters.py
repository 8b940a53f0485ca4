"""Request filters: exact matches on scalar chunk metadata (as upstream's hydrate filter).

A filter is a mapping of field name to one scalar value (string, finite number,
boolean or None). Fields are the chunk's scalar metadata plus ``namespace``,
``source_id`` and ``chunk_id``. Numbers and booleans never match each other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import ParameterError

_MISSING = object()


def is_scalar(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int)):  # ints are finite (math.isfinite overflows on huge ones)
        return True
    return isinstance(value, float) and math.isfinite(value)


def check_filter(owner: str, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ParameterError(owner, "filter", "a mapping of field name to a scalar value", value)
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise ParameterError(owner, "filter", "a mapping with non-empty string keys", value)
        if not is_scalar(item):
            raise ParameterError(owner, f"filter[{key!r}]", "a string, finite number, boolean or None", item,
                                 hint="request filters are exact matches; use a typed view for IN or OR clauses.")
    return dict(value)


def same(a: Any, b: Any) -> bool:
    """Strict equality: ``True`` never equals ``1``; ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return type(a) is type(b) and a == b or (
        isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b)


def record_matches(record: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    if not filter:
        return True
    for key, want in filter.items():
        have = record.get(key, _MISSING)
        if have is _MISSING or not is_scalar(have) or not same(have, want):
            return False
    return True


def hit_record(namespace: str, source_id: str, chunk_id: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    record = {k: v for k, v in metadata.items() if is_scalar(v)}
    record.update(namespace=namespace, source_id=source_id, chunk_id=chunk_id)
    return record


def filter_mask(state: Any, namespace: str, filter: Mapping[str, Any] | None) -> np.ndarray:
    """Boolean mask over ``state.chunks`` rows that pass ``filter``."""
    cols = state.lookup.columns
    n = len(cols["source_id"])
    if not filter:
        return np.ones(n, dtype=bool)
    return np.fromiter((record_matches(hit_record(namespace, s, c, m), filter)
                        for s, c, m in zip(cols["source_id"], cols["chunk_id"], cols["metadata"])),
                       dtype=bool, count=n)


BUILTIN_FIELDS = ("namespace", "source_id", "chunk_id")


def known_fields(state: Any) -> frozenset[str]:
    """Every field a filter can match in ``state``: the built-in ones and any chunk's scalar metadata key."""
    fields = state.cache.get("filter_fields")
    if fields is None:
        keys = {k for m in state.lookup.columns["metadata"] for k, v in m.items() if is_scalar(v)}
        fields = state.cache["filter_fields"] = frozenset(keys | set(BUILTIN_FIELDS))
    return fields


def unknown_field_warnings(state: Any, filter: Mapping[str, Any] | None) -> list[str]:
    """One warning per filter field no chunk has (such a filter can match nothing; views refuse the same
    mistake with ``unknown_field``)."""
    if not filter:
        return []
    fields = known_fields(state)
    return [f"retrieve: filter field {key!r} is not a field of any chunk in this knowledge base, so nothing "
            f"matches it (fields: {', '.join(sorted(fields)[:12])}{' …' if len(fields) > 12 else ''})."
            for key in filter if key not in fields]
