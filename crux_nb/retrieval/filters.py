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


def _kind(value: Any) -> int:
    """0 str, 1 bool, 2 number, 3 None, -1 not a scalar (never matches): the classes :func:`same` keeps apart."""
    if isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return 0
    if value is None:
        return 3
    if isinstance(value, (int, float)) and is_scalar(value):
        return 2
    return -1


class FieldCodes:
    """One filter field over a state's chunks: a code per row (-1 = the field is missing or not scalar) and the
    code of each (kind, value); equal numbers (``1``, ``1.0``) share a code, ``True`` and ``1`` do not."""

    def __init__(self, values: Any):
        self.code: dict[tuple[int, Any], int] = {}
        rows = []
        for value in values:
            kind = value if value is _MISSING else _kind(value)
            if kind is _MISSING or kind < 0:
                rows.append(-1)
                continue
            rows.append(self.code.setdefault((kind, value), len(self.code)))
        self.rows = np.asarray(rows, dtype=np.int64)

    def mask(self, want: Any) -> np.ndarray:
        code = self.code.get((_kind(want), want))
        return np.zeros(len(self.rows), dtype=bool) if code is None else self.rows == code


def _field_codes(state: Any, key: str) -> FieldCodes:
    cache = state.cache.setdefault("filter_codes", {})
    codes = cache.get(key)
    if codes is None:
        cols = state.lookup.columns
        values = cols[key] if key in ("source_id", "chunk_id") else (m.get(key, _MISSING) for m in cols["metadata"])
        codes = cache[key] = FieldCodes(values)
    return codes


def filter_mask(state: Any, namespace: str, filter: Mapping[str, Any] | None) -> np.ndarray:
    """Boolean mask over ``state.chunks`` rows that pass ``filter`` (as :func:`record_matches` on each row's
    :func:`hit_record`), from per-field codes built once per state: one integer comparison per field."""
    mask = np.ones(len(state.chunks), dtype=bool)
    for key, want in (filter or {}).items():
        if key == "namespace":
            if not same(namespace, want):
                mask[:] = False
        else:
            mask &= _field_codes(state, key).mask(want)
    return mask


def members_mask(state: Any, members: Any) -> np.ndarray:
    """Boolean mask over ``state.chunks`` rows whose source is one of ``members`` (a view's member sources)."""
    codes = _field_codes(state, "source_id")
    wanted = [c for c in (codes.code.get((0, m)) for m in members) if c is not None]
    return np.isin(codes.rows, np.asarray(wanted, dtype=np.int64))


BUILTIN_FIELDS = ("namespace", "source_id", "chunk_id")


def known_fields(state: Any) -> frozenset[str]:
    """Every field a filter can match in ``state``: the built-in ones and any chunk's scalar metadata key."""
    def build() -> frozenset[str]:
        keys = {k for m in state.lookup.columns["metadata"] for k, v in m.items() if is_scalar(v)}
        return frozenset(keys | set(BUILTIN_FIELDS))

    return state.cached("filter_fields", build)


def unknown_field_warnings(state: Any, filter: Mapping[str, Any] | None) -> list[str]:
    """One warning per filter field no chunk has, and per value no chunk holds in a known field (either filter
    matches nothing; views refuse an unknown field with ``unknown_field``)."""
    if not filter:
        return []
    fields = known_fields(state)
    out = []
    for key, want in filter.items():
        if key not in fields:
            out.append(f"retrieve: filter field {key!r} is not a field of any chunk in this knowledge base, so nothing "
                       f"matches it (fields: {', '.join(sorted(fields)[:12])}{' …' if len(fields) > 12 else ''}).")
        elif key != "namespace" and not _field_codes(state, key).mask(want).any():
            out.append(_value_warning(state, key, want))
    return out


def _value_warning(state: Any, key: str, want: Any) -> str:
    """The values the field does hold, those closest in spelling first (a typo shows its fix)."""
    import difflib

    values = {str(value): value for _, value in _field_codes(state, key).code}  # 1 and '1' differ: shown as repr
    close = difflib.get_close_matches(str(want), list(values), n=3, cutoff=0.6)
    shown = close or sorted(values)[:8]
    label = "closest" if close else f"{len(values)} values, e.g." if len(values) > len(shown) else "values"
    return (f"retrieve: no chunk has {key!r} = {want!r}, so the filter matches nothing "
            f"({label}: {', '.join(repr(values[v]) for v in shown) or 'none'}).")
