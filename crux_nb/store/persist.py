"""Saving and opening knowledge bases: one folder of Parquet files per generation.

Layout::

    <path>/CURRENT                       {"generation": "g000002", ...}  (replaced atomically)
    <path>/generations/g000002/manifest.json
    <path>/generations/g000002/<table>/part-00000.parquet   one Parquet dataset per table
    <path>/lease                         build lease while a save runs

Each table is a folder of Parquet part files of at most ``partition_rows`` rows,
so ``dask.dataframe.read_parquet(table_paths(path)["chunks"])`` reads it as one
partition per file (:func:`table_paths` names the current generation's folders).

A save writes a complete new generation beside the current one, then replaces
the ``CURRENT`` pointer with one atomic rename; a crash at any point leaves the
previous generation current and readable. Only Parquet and JSON are read back
(never pickle), and file names never come from user data.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import NotFoundError, ParameterError, StorageError
from ..schema import JSON_COLUMNS, SCHEMAS, TUPLE_COLUMNS, coerce, frozen_metadata, has_surrogate
from .lease import Lease
from .state import KBState

FORMAT = "crux_nb"
FORMAT_VERSION = 2
KEEP_GENERATIONS = 2
_OPEN_ATTEMPTS = 5
PARTITION_ROWS = 100_000
_GEN = re.compile(r"^g(\d{6,})$")
_RESTORE = "the saved folder was changed outside crux_nb; restore it from a backup (kb.save keeps the previous generation)."
_PART = re.compile(r"^part-\d{5}\.parquet$")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(value, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _to_storable(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    out = frame.copy()
    for column in JSON_COLUMNS.get(table, ()):
        out[column] = pd.Series([json.dumps(v, sort_keys=True, ensure_ascii=False) for v in out[column]],
                                dtype="str", index=out.index)
    return out


def _from_storable(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    out = frame.copy()
    for column in JSON_COLUMNS.get(table, ()):
        values = [json.loads(v) for v in out[column]]
        if column in TUPLE_COLUMNS:
            values = [tuple(v) for v in values]
        else:
            values = [frozen_metadata(v) for v in values]
        out[column] = pd.Series(values, dtype="object", index=out.index)
    return coerce(out, table)


def check_path(owner: str, path: Any) -> None:
    """A folder path: a string or ``os.PathLike`` without NUL bytes or lone surrogates (no file system takes those)."""
    text = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(text, str) or not text or "\x00" in text or has_surrogate(text):
        raise ParameterError(owner, "path", "a folder path (a non-empty str or pathlib.Path, valid Unicode)", path)


def _generations(root: Path) -> list[str]:
    gens = root / "generations"
    if not gens.is_dir():
        return []
    return sorted(p.name for p in gens.iterdir() if _GEN.match(p.name))


def _check_target(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise StorageError(f"{str(root)!r} exists and is not a folder.", hint="choose a folder path for kb.save().")
    if root.is_dir() and any(root.iterdir()) and not (root / "CURRENT").exists() and not (root / "generations").exists():
        raise StorageError(f"folder {str(root)!r} is not empty and is not a crux_nb knowledge base.",
                           hint="save into a new or empty folder.")


def save(kb: Any, path: str | os.PathLike, *, partition_rows: int = PARTITION_ROWS) -> str:
    """Write ``kb`` as a new generation and make it current; returns the generation id."""
    if isinstance(partition_rows, bool) or not isinstance(partition_rows, int) or partition_rows < 1:
        raise ParameterError("kb.save", "partition_rows", "a positive integer", partition_rows)
    root = Path(path)
    _check_target(root)
    (root / "generations").mkdir(parents=True, exist_ok=True)
    state: KBState = kb.state
    with Lease(root / "lease") as lease:
        existing = _generations(root)
        number = int(_GEN.match(existing[-1]).group(1)) + 1 if existing else 1
        generation = f"g{number:06d}"
        _remove_partials(root)
        tmp = root / "generations" / f".tmp-{generation}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        tables = {}
        for table in SCHEMAS:
            tables[table] = _write_table(tmp / table, _to_storable(state.frame(table), table), partition_rows)
            lease.heartbeat()
        manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "generation": generation,
                    "kb": {"id": kb.id, "namespace": kb.namespace, "chunk_size": kb.chunk_size},
                    "tables": tables}
        _write_json(tmp / "manifest.json", manifest)
        final = root / "generations" / generation
        os.rename(tmp, final)
        _fsync_dir(final.parent)
        _write_json(root / "CURRENT", {"format": FORMAT, "format_version": FORMAT_VERSION, "generation": generation})
        _cleanup(root, keep=generation)
    return generation


def _write_table(folder: Path, frame: pd.DataFrame, partition_rows: int) -> dict:
    """One Parquet file per ``partition_rows`` rows (at least one file, so empty tables keep their schema)."""
    folder.mkdir()
    schema = pa.Schema.from_pandas(frame, preserve_index=False)
    parts = []
    for number, start in enumerate(range(0, max(len(frame), 1), partition_rows)):
        file = folder / f"part-{number:05d}.parquet"
        piece = frame.iloc[start:start + partition_rows]
        pq.write_table(pa.Table.from_pandas(piece, schema=schema, preserve_index=False), file)
        with open(file, "rb+") as fh:
            os.fsync(fh.fileno())
        parts.append({"file": file.name, "rows": len(piece), "sha256": _sha256(file)})
    _fsync_dir(folder)
    return {"folder": folder.name, "rows": len(frame), "parts": parts}


def _remove_partials(root: Path) -> None:
    """Leftovers of a save that was killed: partial generation folders and temporary pointer files."""
    for p in (root / "generations").iterdir():
        if p.name.startswith(".tmp-"):
            shutil.rmtree(p, ignore_errors=True)
    for p in root.glob(".CURRENT.*.tmp"):
        p.unlink(missing_ok=True)


def _cleanup(root: Path, *, keep: str) -> None:
    gens = _generations(root)
    for name in gens[:-KEEP_GENERATIONS]:
        if name != keep:
            shutil.rmtree(root / "generations" / name, ignore_errors=True)


def current_generation(path: str | os.PathLike) -> str:
    """The id of the current generation of a saved knowledge base."""
    root = Path(path)
    if not root.exists():
        raise NotFoundError(f"no saved knowledge base at {str(root)!r}.", hint="save one with kb.save(path).")
    pointer = root / "CURRENT"
    if not pointer.exists():
        raise StorageError(f"{str(root)!r} has no CURRENT pointer; it is not a saved crux_nb knowledge base.",
                           hint="open the folder that kb.save() wrote.")
    try:
        info = json.loads(pointer.read_text(encoding="utf-8"))
        generation = info["generation"]
    except (ValueError, KeyError, TypeError):
        raise StorageError(f"the CURRENT pointer of {str(root)!r} is corrupted.", hint=_RESTORE) from None
    if info.get("format") != FORMAT or not isinstance(generation, str) or not _GEN.match(generation):
        raise StorageError(f"the CURRENT pointer of {str(root)!r} is not a crux_nb pointer.", hint=_RESTORE)
    return generation


def read_current(path: str | os.PathLike, *, verify: bool = True) -> tuple[Path, dict, KBState]:
    """The current generation saved at ``path``: ``(root, manifest meta, state)``.

    ``verify`` checks every table's SHA-256 against the manifest first. ``crux_nb.open()`` wraps the
    state in a :class:`~crux_nb.KnowledgeBase`.
    """
    check_path("crux_nb.open()", path)
    root = Path(path)
    generation = current_generation(root)
    for _ in range(_OPEN_ATTEMPTS):
        try:
            meta, state = _read_generation(root, generation, verify=verify)
            break
        except StorageError:
            # Saves delete generations older than the last two: one a slow reader was still reading
            # may vanish under it. Then CURRENT has moved on; read the new one instead.
            newer = current_generation(root)
            if newer == generation:
                raise
            generation = newer
    else:
        raise StorageError(f"{str(root)!r} changed {_OPEN_ATTEMPTS} times while it was being opened.",
                           code="storage_busy", hint="other processes are saving continuously; open it again later.")
    return root, meta, state


def _read_generation(root: Path, generation: str, *, verify: bool) -> tuple[dict, KBState]:
    folder = root / "generations" / generation
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        tables = manifest["tables"]
        meta = manifest["kb"]
    except FileNotFoundError:
        raise StorageError(f"generation {generation} of {str(root)!r} has no manifest.", hint=_RESTORE) from None
    except (ValueError, KeyError, TypeError):
        raise StorageError(f"the manifest of generation {generation} of {str(root)!r} is corrupted.", hint=_RESTORE) from None
    if manifest.get("format_version", 0) > FORMAT_VERSION:
        raise StorageError(f"{str(root)!r} was written by a newer crux_nb (format {manifest.get('format_version')}).",
                           hint="upgrade crux_nb to open it.")
    frames = {table: _read_table(root, folder, generation, table, tables.get(table), verify=verify)
              for table in SCHEMAS}
    return meta, KBState(**frames)


def table_paths(path: str | os.PathLike) -> dict[str, Path]:
    """The folder of each table (a Parquet dataset) in the current generation of a saved knowledge base.

    Read one with pandas or Dask, one partition per part file::

        import dask.dataframe as dd
        chunks = dd.read_parquet(table_paths("kb")["chunks"])

    JSON-valued columns (``metadata``, ``aliases``…) hold JSON text in the files.
    """
    root = Path(path)
    folder = root / "generations" / current_generation(root)
    return {table: folder / table for table in SCHEMAS}


def _read_table(root: Path, folder: Path, generation: str, table: str, entry: Any, *, verify: bool) -> pd.DataFrame:
    where = f"table {table!r} of generation {generation} in {str(root)!r}"
    files = _listed_files(folder, table, entry, where)
    pieces = []
    for file, part in files:
        if not file.exists():
            raise StorageError(f"{where} is missing ({file.relative_to(folder)}).",
                               hint="the folder was changed by hand; restore it from a backup.")
        if verify and _sha256(file) != part.get("sha256"):
            raise StorageError(f"{where} is corrupted (checksum mismatch).", hint="the file was changed after saving.")
        try:
            piece = pq.read_table(file).to_pandas()
        except (pa.ArrowException, OSError) as exc:
            raise StorageError(f"{where} cannot be read as Parquet: {type(exc).__name__}.",
                               hint=_RESTORE) from None
        if len(piece) != part.get("rows"):
            raise StorageError(f"{where} has {len(piece)} rows in {file.name}; the manifest says {part.get('rows')}.",
                               hint=_RESTORE)
        pieces.append(piece)
    frame = pieces[0] if len(pieces) == 1 else pd.concat(pieces, ignore_index=True)
    try:
        return _from_storable(frame, table)
    except (ValueError, TypeError) as exc:
        raise StorageError(f"{where} does not match its schema: {exc}.",
                           hint=_RESTORE) from None


def _listed_files(folder: Path, table: str, entry: Any, where: str) -> list[tuple[Path, dict]]:
    """The part files the manifest lists for ``table``; names are checked so a manifest cannot point elsewhere."""
    if isinstance(entry, dict) and entry.get("file") == f"{table}.parquet":  # format 1: one file per table
        return [(folder / entry["file"], entry)]
    parts = entry.get("parts") if isinstance(entry, dict) and entry.get("folder") == table else None
    if not isinstance(parts, list) or not parts or not all(
            isinstance(p, dict) and isinstance(p.get("file"), str) and _PART.match(p["file"]) for p in parts):
        raise StorageError(f"{where} is not listed in the manifest.",
                           hint=_RESTORE)
    return [(folder / table / p["file"], p) for p in parts]
