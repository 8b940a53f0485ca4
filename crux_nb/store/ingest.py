"""Reading user input (strings, frames; files and folders through :mod:`crux_nb.store.files`) into validated
source specs.

Nothing here touches a knowledge base: every input is checked in full first,
so a bad file or row leaves the knowledge base exactly as it was.
"""

from __future__ import annotations

import datetime as _dt
import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..errors import InputError
from ..schema import Metadata, check_unicode, frozen_metadata, require_columns
from .chunking import parse_front_matter

#: Metadata nesting deeper than this is refused (a recursive structure would never end).
MAX_METADATA_DEPTH = 64
#: Metadata integers must fit in 64 bits (JSON readers, Parquet and pandas agree on those).
MAX_METADATA_INT = 2**63 - 1
Format = Literal["markdown", "text"]


@dataclass(frozen=True)
class SourceSpec:
    source_id: str
    text: str
    metadata: Metadata
    media_type: str
    path: str | None = None


#: Bidirectional controls: they reorder how an id is displayed (``a\u202egpj.md`` shows as ``adm.jpg``).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Zs", "Zl", "Zp", "Mn", "Me"})
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")  # Hangul fillers: letters that show nothing


def check_source_id(source_id: Any) -> str:
    """A valid source id in NFC form (so the composed and decomposed spellings of ``é.md`` are one id)."""
    if not isinstance(source_id, str) or not source_id.strip():
        raise InputError(f"source id {source_id!r} must be a non-empty string.",
                         hint="pass a name such as 'launch-plan.md'.")
    if any(ord(ch) < 32 for ch in source_id):
        raise InputError(f"source id {source_id!r} contains control characters.",
                         hint="remove tabs, newlines and other control characters from the id.")
    check_unicode(source_id, f"source id {source_id!r}")
    bidi = next((ch for ch in source_id if ch in BIDI_CONTROLS), None)
    if bidi is not None:
        raise InputError(f"source id {source_id!r} contains the bidirectional control character U+{ord(bidi):04X}.",
                         hint="remove right-to-left overrides and other bidi controls from the id: they make it "
                              "display as a different name.")
    if all(unicodedata.category(ch) in _INVISIBLE_CATEGORIES or ch in _INVISIBLE_LETTERS for ch in source_id):
        raise InputError(f"source id {source_id!r} has no visible character.",
                         hint="pass a name such as 'launch-plan.md'.")
    return unicodedata.normalize("NFC", source_id)


def check_text(source_id: str, text: Any) -> str:
    if not isinstance(text, str):
        raise InputError(f"text of source {source_id!r} must be a string; got {type(text).__name__}.",
                         hint="decode bytes first, e.g. data.decode('utf-8').")
    if "\x00" in text:
        raise InputError(f"text of source {source_id!r} contains NUL bytes; it looks binary.",
                         hint="crux_nb indexes text; extract the text of binary files first.")
    if not text.strip():
        raise InputError(f"text of source {source_id!r} is empty.", hint="skip empty documents before adding them.")
    check_unicode(text, f"text of source {source_id!r}")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def clean_metadata(source_id: str, metadata: Any) -> Metadata:
    """Validate metadata: string keys and JSON-representable values."""
    if metadata is None:
        return Metadata()
    if not isinstance(metadata, Mapping):
        raise InputError(f"metadata of source {source_id!r} must be a mapping; got {type(metadata).__name__}.",
                         hint="pass a dict such as {'team': 'platform'}.")
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key:
            raise InputError(f"metadata of source {source_id!r} has a key {key!r} that is not a non-empty string.",
                             hint="metadata keys are field names: non-empty strings.")
        check_unicode(key, f"metadata key {key!r} of source {source_id!r}")
        out[key] = _json_value(source_id, key, value)
    return frozen_metadata(out)


def _json_value(source_id: str, key: str, value: Any, depth: int = 0) -> Any:
    if depth > MAX_METADATA_DEPTH:
        raise InputError(f"metadata {key[:80]!r} of source {source_id!r} nests deeper than {MAX_METADATA_DEPTH} "
                         "levels (or refers to itself).", hint="flatten the value, or store it as a JSON string.")
    if isinstance(value, str):
        return check_unicode(value, f"metadata {key!r} of source {source_id!r}")
    if value is None or isinstance(value, bool):
        return value
    if value is pd.NA or value is pd.NaT:  # pandas' missing values (NaT would otherwise read as the text "NaT")
        return None
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, int):
        if abs(value) > MAX_METADATA_INT:
            raise InputError(f"metadata {key!r} of source {source_id!r} is an integer beyond 64 bits.",
                             hint="store very large numbers as strings.")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"metadata {key!r} of source {source_id!r} is {value}; only finite numbers are stored.")
        return value
    if isinstance(value, (pd.Timestamp, _dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str) or not k:  # as at the top level: 1 and None would silently become "1"/"None"
                raise InputError(f"metadata {key!r} of source {source_id!r} has a nested key {k!r} that is not a "
                                 "non-empty string.", hint="metadata keys are field names: non-empty strings.")
            name = check_unicode(k, f"metadata {key!r} of source {source_id!r}")
            if name in out:
                raise InputError(f"metadata {key!r} of source {source_id!r} has two keys that read as {name!r}.",
                                 hint="nested keys are stored as strings; make them distinct strings.")
            out[name] = _json_value(source_id, f"{key}.{name}", v, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_json_value(source_id, key, v, depth + 1) for v in value]
    raise InputError(f"metadata {key!r} of source {source_id!r} has type {type(value).__name__}, "
                     "which cannot be saved as JSON.", hint="use strings, numbers, booleans, lists or dicts.")


def text_spec(source_id: Any, text: Any, *, metadata: Any = None, format: Format = "markdown",
              path: str | None = None) -> SourceSpec:
    source_id = check_source_id(source_id)
    text = check_text(source_id, text)
    if not isinstance(format, str) or format not in ("markdown", "text"):
        raise InputError(f"format {format!r} is not one of 'markdown', 'text'.",
                         hint="pass format='markdown' (headings become sections) or format='text'.")
    meta: dict[str, Any] = {}
    if format == "markdown":
        meta, text = parse_front_matter(text)
        if not text.strip():
            raise InputError(f"text of source {source_id!r} has front matter but no content.")
    meta.update(clean_metadata(source_id, metadata))
    media_type = "text/markdown" if format == "markdown" else "text/plain"
    return SourceSpec(source_id, text, clean_metadata(source_id, meta), media_type, path)


def frame_specs(frame: Any, *, id_column: str = "id", text_column: str = "text",
                format: Format = "markdown") -> list[SourceSpec]:
    """Specs for each row of a frame; other columns become metadata (missing values dropped)."""
    require_columns(frame, [id_column, text_column], what="the frame passed to add_frame()")
    ids = frame[id_column].tolist()
    texts = frame[text_column].tolist()
    meta_columns = [c for c in frame.columns if c not in (id_column, text_column)]
    values = [frame[c].tolist() for c in meta_columns]  # column by column: any column name reads back
    records = [dict(zip(meta_columns, row)) for row in zip(*values)] if meta_columns else [{}] * len(ids)
    specs = []
    for source_id, text, record in zip(ids, texts, records):
        meta = {str(k): v for k, v in record.items() if not _is_na(v)}
        specs.append(text_spec(source_id, text, metadata=meta, format=format))
    return specs


def _is_na(value: Any) -> bool:
    if isinstance(value, (list, tuple, dict, np.ndarray)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def check_unique(specs: list[SourceSpec]) -> None:
    seen: set[str] = set()
    for spec in specs:
        if spec.source_id in seen:
            raise InputError(f"source id {spec.source_id!r} appears more than once in one call.",
                             hint="give every source a unique id.")
        seen.add(spec.source_id)

