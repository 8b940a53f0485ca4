"""Row-by-row validation of the frames passed to ``kb.add_edges`` and ``kb.add_entities``.

This is the reference implementation: every check runs per row, in a fixed order, and
the first failing row raises an error naming it (``add_edges() row 3: ...``). The
column-wise fast path (:mod:`crux_nb.store.rows_fast`) answers the same frames with the
same rows, and falls back to these functions whenever it finds something to report.
Both return plain column lists (``dict[str, list]``), the input of the state merge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .._hashing import stable_id
from ..errors import InputError
from ..refs import EntityRef, as_ref, encode_ref
from ..schema import check_unicode

__all__ = ["STRUCTURAL_TYPES", "DIRECTIONS", "EDGE_COLUMNS", "EVIDENCE_COLUMNS", "ENTITY_COLUMNS",
           "check_type_name", "optional", "optional_text", "positive_finite", "edge_rows", "entity_rows"]

STRUCTURAL_TYPES = ("hierarchy", "sequence")
DIRECTIONS = ("directed", "symmetric")
EDGE_COLUMNS = ("edge_id", "type", "from_ref", "to_ref", "direction", "weight", "stage", "description")
EVIDENCE_COLUMNS = ("edge_id", "source_id", "chunk_ref", "provenance")
ENTITY_COLUMNS = ("entity_id", "ref", "canonical_name", "type", "aliases", "description")


def check_type_name(value: Any, where: str) -> str:
    """``value`` as a relation type name, or :class:`InputError` (``where`` names the row)."""
    if not isinstance(value, str) or not value.strip() or ":" in value or "%" in value:
        raise InputError(f"{where}: relation type {value!r} must be a non-empty string without ':' or '%'.",
                         hint="name relation types like 'references' or 'depends_on'.")
    check_unicode(value, f"{where}: relation type {value!r}")
    if value in STRUCTURAL_TYPES:
        raise InputError(f"{where}: relation type {value!r} is structural: it is projected from sections and chunk order, "
                         "never stored.", hint="choose another type name, e.g. 'references'.")
    return value


def positive_finite(number: int | float) -> bool:
    try:
        number = float(number)
    except OverflowError:  # an int beyond float range
        return False
    return math.isfinite(number) and number > 0


def is_missing(value: Any) -> bool:
    """None, NA, NaT or NaN: an empty cell of a frame with optional columns."""
    return value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and value != value)


def optional(record: dict, key: str, default: Any) -> Any:
    """A frame cell that may be absent, None, NA or NaN (rows of a frame with optional columns)."""
    value = record.get(key, default)
    return default if is_missing(value) else value


def optional_text(record: dict, key: str, where: str) -> str | None:
    """An optional string cell: a string, or missing (None)."""
    value = optional(record, key, None)
    if value is not None and not isinstance(value, str):
        raise InputError(f"{where}: {key} must be a string or missing; got {type(value).__name__}.",
                         hint=f"convert the {key} column to strings, or leave it out.")
    return None if value is None else check_unicode(value, f"{where}: {key}")


def _evidence_list(value: Any, where: str) -> list[str]:
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise InputError(f"{where}: evidence must be a list of chunk refs; got {type(value).__name__}.")
    refs = [encode_ref(as_ref(v, kinds=("chunk",), what=f"{where}: evidence")) for v in value]
    if not refs:
        raise InputError(f"{where}: evidence is empty; every semantic edge needs at least one supporting chunk.")
    return refs


def edge_rows(frame: pd.DataFrame, *, existing: set[str], chunk_sources: dict[str, str], stage: str,
              provenance: str) -> tuple[dict[str, list], dict[str, list], dict[str, str]]:
    """``(edges, evidence, new entities)`` of an ``add_edges`` frame, validated row by row.

    ``existing`` holds the encoded document, section and chunk refs of the knowledge base,
    ``chunk_sources`` maps chunk refs to source ids; new entities map ref -> entity id.
    """
    edges: dict[str, list] = {c: [] for c in EDGE_COLUMNS}
    evidence: dict[str, list] = {c: [] for c in EVIDENCE_COLUMNS}
    new_entities: dict[str, str] = {}
    for i, rec in enumerate(frame.to_dict("records")):
        where = f"add_edges() row {i}"
        etype = check_type_name(rec["type"], where)
        direction = optional(rec, "direction", "directed")
        if not isinstance(direction, str) or direction not in DIRECTIONS:
            raise InputError(f"{where}: direction {direction!r} must be 'directed' or 'symmetric'.",
                             hint="leave the column out (or None) for 'directed'.")
        ends = []
        for col in ("from_ref", "to_ref"):
            ref = as_ref(rec[col], what=f"{where}: {col}")
            text = check_unicode(encode_ref(ref), f"{where}: {col}")
            if isinstance(ref, EntityRef):
                new_entities.setdefault(text, ref.entity_id)
            elif text not in existing:
                raise InputError(f"{where}: {col} {text!r} does not exist in this knowledge base.",
                                 hint="add the source first, or check the ref (kb.chunks['ref']).")
            ends.append(text)
        if direction == "symmetric":
            ends.sort()
        supports = _evidence_list(rec["evidence"], where)
        for ref in supports:
            if ref not in chunk_sources:
                raise InputError(f"{where}: evidence {ref!r} is not a chunk of this knowledge base.",
                                 hint="evidence must list chunk refs from kb.chunks['ref'].")
        edge_id = stable_id("edge", {"type": etype, "from": ends[0], "to": ends[1], "direction": direction,
                                     "stage": stage})
        description = optional_text(rec, "description", where)
        weight = optional(rec, "weight", 1.0)
        if not isinstance(weight, (int, float)) or not positive_finite(weight):
            raise InputError(f"{where}: weight {weight!r} must be a positive number (and finite).",
                             hint="leave the column out (or None) for weight 1.0.")
        for column, value in zip(EDGE_COLUMNS, (edge_id, etype, ends[0], ends[1], direction, float(weight), stage,
                                                description if isinstance(description, str) and description else None)):
            edges[column].append(value)
        for ref in supports:
            for column, value in zip(EVIDENCE_COLUMNS, (edge_id, chunk_sources[ref], ref, provenance)):
                evidence[column].append(value)
    return edges, evidence, new_entities


def entity_rows(frame: pd.DataFrame) -> dict[str, list]:
    """The entity rows of an ``add_entities`` frame, validated row by row."""
    rows: dict[str, list] = {c: [] for c in ENTITY_COLUMNS}
    for i, rec in enumerate(frame.to_dict("records")):
        where = f"add_entities() row {i}"
        eid, name = rec["entity_id"], rec["canonical_name"]
        if not isinstance(eid, str) or not eid or not isinstance(name, str) or not name.strip():
            raise InputError(f"{where}: entity_id and canonical_name must be non-empty strings.",
                             hint="every entity needs an id and a name, e.g. ('acme', 'ACME Corp').")
        check_unicode(eid, f"{where}: entity_id")
        check_unicode(name, f"{where}: canonical_name")
        aliases = optional(rec, "aliases", ())
        if (isinstance(aliases, (str, bytes, Mapping)) or not hasattr(aliases, "__iter__")
                or not all(isinstance(a, str) for a in aliases)):
            raise InputError(f"{where}: aliases must be a list of strings.",
                             hint="pass a list such as ['ACME', 'Acme Corp'], or leave the column out.")
        for alias in aliases:
            check_unicode(alias, f"{where}: alias")
        for column, value in zip(ENTITY_COLUMNS, (eid, encode_ref(EntityRef(eid)), name.strip(),
                                                  optional_text(rec, "type", where), tuple(sorted(set(aliases))),
                                                  optional_text(rec, "description", where))):
            rows[column].append(value)
    return rows
