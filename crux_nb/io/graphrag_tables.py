"""GraphRAG output tables: where they lie, what their columns are called, and reading them safely.

A GraphRAG output folder holds one Parquet file per table. GraphRAG 2 and 3 name
them ``<table>.parquet``; GraphRAG 0.x and 1.x named them
``create_final_<table>.parquet``. Columns were renamed over the versions
(``name`` became ``title``, ``raw_content`` became ``text``, ``document_ids``
became ``document_id``, ``rank_explanation`` became ``rating_explanation``);
:data:`COLUMNS` lists every spelling read, first the current one.

Every problem surfaces as a crux_nb error naming the table and the column:
:class:`~crux_nb.errors.StorageError` for a missing folder, table or unreadable
file, :class:`~crux_nb.errors.InputError` for a missing column or a value of the
wrong kind. Never a raw pandas or pyarrow traceback.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError, StorageError
from ..schema import check_unicode
from .graphrag_limits import read_capped

TABLES = ("documents", "text_units", "entities", "relationships", "communities", "community_reports", "covariates")
REQUIRED_TABLES = ("text_units", "entities", "relationships", "communities", "community_reports")
LEGACY_PREFIX = "create_final_"

#: table -> column -> (kind, required, accepted spellings). Kinds: str, int, float, ids (list of str),
#: ints (list of int), findings (list of {summary, explanation}), any.
COLUMNS: dict[str, dict[str, tuple[str, bool, tuple[str, ...]]]] = {
    "documents": {"id": ("str", True, ("id",)), "human_readable_id": ("int", False, ("human_readable_id",)),
                  "title": ("str", False, ("title",)), "text": ("str", False, ("text", "raw_content")),
                  "text_unit_ids": ("ids", False, ("text_unit_ids",)),
                  "creation_date": ("str", False, ("creation_date",)),
                  "metadata": ("any", False, ("metadata", "raw_data"))},
    "text_units": {"id": ("str", True, ("id",)), "human_readable_id": ("int", False, ("human_readable_id",)),
                   "text": ("text", True, ("text", "chunk")), "n_tokens": ("int", False, ("n_tokens",)),
                   "document_id": ("str", False, ("document_id",)),
                   "document_ids": ("ids", False, ("document_ids",)),
                   "entity_ids": ("ids", False, ("entity_ids",)),
                   "relationship_ids": ("ids", False, ("relationship_ids",)),
                   "covariate_ids": ("ids", False, ("covariate_ids",))},
    "entities": {"id": ("str", False, ("id",)), "human_readable_id": ("int", False, ("human_readable_id",)),
                 "title": ("str", True, ("title", "name")), "type": ("str", False, ("type",)),
                 "description": ("str", False, ("description",)),
                 "text_unit_ids": ("ids", False, ("text_unit_ids",)), "frequency": ("int", False, ("frequency",)),
                 "degree": ("int", False, ("degree",))},
    "relationships": {"id": ("str", False, ("id",)), "human_readable_id": ("int", False, ("human_readable_id",)),
                      "source": ("str", True, ("source",)), "target": ("str", True, ("target",)),
                      "description": ("str", False, ("description",)), "weight": ("float", False, ("weight",)),
                      "combined_degree": ("int", False, ("combined_degree", "rank")),
                      "text_unit_ids": ("ids", False, ("text_unit_ids",))},
    "communities": {"id": ("str", False, ("id",)), "human_readable_id": ("int", False, ("human_readable_id",)),
                    "community": ("int", False, ("community",)), "level": ("level", True, ("level",)),
                    "parent": ("int", False, ("parent",)), "children": ("ints", False, ("children",)),
                    "title": ("str", False, ("title",)), "entity_ids": ("ids", False, ("entity_ids",)),
                    "relationship_ids": ("ids", False, ("relationship_ids",)),
                    "text_unit_ids": ("ids", False, ("text_unit_ids",)), "period": ("str", False, ("period",)),
                    "size": ("int", False, ("size",))},
    "community_reports": {"id": ("str", False, ("id",)), "human_readable_id": ("int", False, ("human_readable_id",)),
                          "community": ("int", True, ("community",)), "level": ("level", False, ("level",)),
                          "title": ("str", True, ("title",)), "summary": ("str", False, ("summary",)),
                          "full_content": ("str", False, ("full_content",)), "rank": ("float", False, ("rank",)),
                          "rating_explanation": ("str", False, ("rating_explanation", "rank_explanation")),
                          "findings": ("findings", False, ("findings",)), "period": ("str", False, ("period",))},
    "covariates": {"id": ("str", False, ("id",)), "human_readable_id": ("int", False, ("human_readable_id",)),
                   "covariate_type": ("str", False, ("covariate_type",)), "type": ("str", False, ("type",)),
                   "description": ("str", False, ("description",)), "subject_id": ("str", False, ("subject_id",)),
                   "object_id": ("str", False, ("object_id",)), "status": ("str", False, ("status",)),
                   "start_date": ("str", False, ("start_date",)), "end_date": ("str", False, ("end_date",)),
                   "source_text": ("str", False, ("source_text",)),
                   "text_unit_id": ("str", True, ("text_unit_id",))},
}


@dataclass(frozen=True)
class GraphRAGTables:
    """The tables of one GraphRAG output folder, columns renamed to the current spelling.

    A column absent from the file is absent from the frame (``has()`` tells); present
    columns hold clean Python values: ``None`` for missing, lists for id lists.
    """

    folder: Path
    layout: str  # "graphrag>=2 (<table>.parquet)" or "graphrag<2 (create_final_<table>.parquet)"
    frames: dict[str, pd.DataFrame]
    files: dict[str, str] = field(default_factory=dict)

    def has(self, table: str, column: str | None = None) -> bool:
        frame = self.frames.get(table)
        return frame is not None and (column is None or column in frame.columns)

    def column(self, table: str, column: str, default: Any = None) -> list[Any]:
        """The column as a list (``default`` for every row when the column is absent)."""
        frame = self.frames[table]
        return frame[column].tolist() if column in frame.columns else [default] * len(frame)

    def require(self, table: str, *columns: str, why: str) -> None:
        """Raise :class:`InputError` unless the table has one of ``columns``."""
        if not any(self.has(table, c) for c in columns):
            spellings = " or ".join(repr(c) for c in columns)
            raise InputError(f"GraphRAG table {self.files.get(table, table)!r} has no column {spellings}, "
                             f"which is needed {why}.", code="graphrag_missing_column",
                             hint=f"the folder {str(self.folder)!r} looks incomplete or written by an unknown "
                                  "GraphRAG version.")


def find_folder(path: str | os.PathLike) -> Path:
    """The folder holding the tables: ``path`` itself, or its ``output`` subfolder (a GraphRAG project root)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"read_graphrag(): path must be a folder path; got {type(path).__name__}.",
                         code="graphrag_not_a_folder")
    root = Path(path)
    if not root.exists():
        raise StorageError(f"GraphRAG folder {str(root)!r} does not exist.", code="graphrag_not_found",
                           hint="pass the folder GraphRAG wrote its Parquet tables to (usually <project>/output).")
    if not root.is_dir():
        raise InputError(f"{str(root)!r} is not a folder; read_graphrag() needs the folder of a GraphRAG index.",
                         code="graphrag_not_a_folder",
                         hint="pass the folder that holds entities.parquet, text_units.parquet and the other tables.")
    if not _table_file(root, "text_units")[0] and (root / "output").is_dir() and _table_file(root / "output", "text_units")[0]:
        return root / "output"
    return root


def _table_file(folder: Path, table: str) -> tuple[Path | None, bool]:
    """(file, legacy) for ``table``: the current name wins over the legacy one."""
    for name, legacy in ((f"{table}.parquet", False), (f"{LEGACY_PREFIX}{table}.parquet", True)):
        if (folder / name).is_file():
            return folder / name, legacy
    return None, False


def load_tables(path: str | os.PathLike) -> GraphRAGTables:
    """Read every GraphRAG table of the folder (optional tables may be absent)."""
    import pyarrow as pa

    folder = find_folder(path)
    frames, files, legacy_seen = {}, {}, set()
    for table in TABLES:
        file, legacy = _table_file(folder, table)
        if file is None:
            if table in REQUIRED_TABLES:
                raise StorageError(f"GraphRAG folder {str(folder)!r} has no {table!r} table "
                                   f"({table}.parquet or {LEGACY_PREFIX}{table}.parquet).",
                                   code="graphrag_missing_table",
                                   hint="read_graphrag() needs text_units, entities, relationships, communities and "
                                        "community_reports; documents and covariates are optional.")
            continue
        legacy_seen.add(legacy)
        files[table] = file.name
        try:
            frame = read_capped(file)
        except StorageError:
            raise
        except (pa.ArrowException, OSError, ValueError, TypeError, KeyError, IndexError) as exc:
            raise StorageError(f"GraphRAG table {file.name!r} in {str(folder)!r} cannot be read as Parquet "
                               f"({type(exc).__name__}).", code="graphrag_not_parquet",
                               hint="the file is damaged or is not a Parquet file.") from None
        frames[table] = normalise(frame, table, file.name)
    layout = "graphrag<2 (create_final_<table>.parquet)" if legacy_seen == {True} else "graphrag>=2 (<table>.parquet)"
    return GraphRAGTables(folder=folder, layout=layout, frames=frames, files=files)


def normalise(frame: pd.DataFrame, table: str, file: str) -> pd.DataFrame:
    """Rename columns to the current spelling, check required ones, clean every value."""
    out = {}
    for column, (kind, required, spellings) in COLUMNS[table].items():
        found = next((s for s in spellings if s in frame.columns), None)
        if found is None:
            if required:
                alt = f" (or {', '.join(repr(s) for s in spellings[1:])})" if len(spellings) > 1 else ""
                raise InputError(f"GraphRAG table {file!r} has no column {column!r}{alt}; it has "
                                 f"{[str(c) for c in frame.columns]}.", code="graphrag_missing_column",
                                 hint=f"a GraphRAG {table} table needs the column {column!r}.")
            continue
        where = f"GraphRAG table {file!r}, column {found!r}"
        out[column] = [_clean(v, kind, f"{where}, row {i}") for i, v in enumerate(frame[found].tolist())]
    # object columns: pandas 3 would read a list of strings and None as a str column, turning None into NaN
    index = pd.RangeIndex(len(frame))
    return pd.DataFrame({c: pd.Series(v, dtype=object, index=index) for c, v in out.items()}, index=index)


def missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return value is pd.NA or value is pd.NaT


def _plain(value: Any, depth: int = 0) -> Any:
    """A JSON-safe Python value (Parquet structs and lists read back as dicts and numpy arrays)."""
    if isinstance(value, np.generic):
        value = value.item()
    if depth > 32 or value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v, depth + 1) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _clean_text(value: Any, where: str) -> str:
    """A text unit's text: a non-empty string without NUL (what ``kb.add_text`` accepts)."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if missing(value) or not isinstance(value, str):
        got = "missing" if missing(value) else f"a {type(value).__name__} ({value!r:.40})"
        raise InputError(f"{where}: the text must be a string; it is {got}.", code="graphrag_invalid_value",
                         hint="every text unit needs its text; re-run GraphRAG's indexing or drop the row.")
    if not value.strip() or "\x00" in value:
        raise InputError(f"{where}: the text is {'empty' if not value.strip() else 'binary (it holds NUL bytes)'}.",
                         code="graphrag_invalid_value", hint="every text unit needs readable text; drop the row.")
    return check_unicode(value, where)


def _clean(value: Any, kind: str, where: str) -> Any:
    if kind == "text":
        return _clean_text(value, where)
    if kind == "level":
        level = _clean(value, "int", where)
        if level is not None and level < 0:
            raise InputError(f"{where}: level {level} is negative; GraphRAG levels count from 0 (the top).",
                             code="graphrag_invalid_value")
        return level
    if kind == "any":
        return None if missing(value) else _plain(value)
    if kind in ("ids", "ints", "findings"):
        return _clean_list(value, kind, where)
    if missing(value):
        return None
    try:
        if kind == "str":
            if isinstance(value, (bytes, bytearray)):
                return value.decode("utf-8")
            if isinstance(value, (list, tuple, dict, np.ndarray)):
                raise TypeError("a list or mapping")
            return str(value)
        if kind == "int":
            if isinstance(value, str):
                value = value.strip()
            number = float(value)
            if not number.is_integer():
                raise ValueError("not a whole number")
            return int(number)
        number = float(value)  # float
        return None if math.isnan(number) else number
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(f"{where}: {value!r:.60} is not a valid {_KIND_NAMES[kind]} ({exc}).",
                         code="graphrag_invalid_value") from None


_KIND_NAMES = {"text": "string", "level": "integer", "str": "string", "int": "integer", "float": "number", "ids": "list of ids",
               "ints": "list of integers", "findings": "list of findings"}


def _clean_list(value: Any, kind: str, where: str) -> list:
    if missing(value):
        return []
    if isinstance(value, str):
        text = value.strip()
        if kind == "findings" or text.startswith("["):
            try:
                value = json.loads(text) if text else []
            except ValueError:
                raise InputError(f"{where}: {value!r:.60} is not a JSON list.", code="graphrag_invalid_value") from None
        else:
            value = [p for p in text.split(",") if p.strip()]
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, dict) or not isinstance(value, (list, tuple)):
        raise InputError(f"{where}: expected a {_KIND_NAMES[kind]}; got {type(value).__name__}.",
                         code="graphrag_invalid_value")
    if kind == "ids":
        return [str(v).strip() for v in value if not missing(v) and str(v).strip()]
    if kind == "ints":
        return [_clean(v, "int", where) for v in value if not missing(v)]
    findings = []
    for item in value:
        if isinstance(item, str):
            item = {"summary": "", "explanation": item}
        if not isinstance(item, dict):
            raise InputError(f"{where}: a finding must be a mapping with 'summary' and 'explanation'; "
                             f"got {type(item).__name__}.", code="graphrag_invalid_value")
        findings.append({k: "" if missing(item.get(k)) else str(item.get(k)) for k in ("summary", "explanation")})
    return findings
