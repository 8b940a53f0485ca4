"""Stable, content-addressed ids: SHA-256 over canonical JSON."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace; tuples become lists."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)


def stable_hash(value: Any, *, length: int = 16) -> str:
    """Hex digest of ``value``'s canonical JSON, cut to ``length`` characters."""
    return json_hash(canonical_json(value), length=length)


def json_hash(text: str, *, length: int = 16) -> str:
    """``stable_hash`` of the value whose canonical JSON is ``text`` (for callers that assemble it faster)."""
    # surrogatepass: a lone surrogate ('\ud800') hashes instead of raising; stores reject such text on input
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def json_strings(values: list[str]) -> list[str]:
    """Each string's canonical JSON without its quotes, from one ``json.dumps`` call: ``'"' +
    '","'.join(parts) + '"'`` is then the canonical JSON body of any list of them (an encoded string
    never contains ``","``: every quote inside it is escaped)."""
    if not values:
        return []
    return canonical_json(list(values))[2:-2].split('","')


def stable_id(prefix: str, value: Any, *, length: int = 16) -> str:
    """``<prefix>_<hash>``: deterministic and prefix-scoped, as upstream's createStableId."""
    return f"{prefix}_{stable_hash(value, length=length)}"


def _default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def text_hash(text: str) -> str:
    """A short SHA-256 of ``text`` alone (the key of cached per-chunk vectors)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]
