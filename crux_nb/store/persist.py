"""Saving and opening knowledge bases: one folder of Parquet files per generation.

Layout::

    <path>/CURRENT                       {"generation": "g000002", ...}  (replaced atomically)
    <path>/generations/g000002/manifest.json
    <path>/generations/g000002/<table>/part-00000.parquet   one Parquet dataset per table
    <path>/lease                         build lease while a save runs
    <path>/switch                        kernel lock around the CURRENT compare-and-swap (see commit.py)

Each table is a folder of Parquet part files of at most ``partition_rows`` rows,
so ``dask.dataframe.read_parquet(table_paths(path)["chunks"])`` reads it as one
partition per file (:func:`table_paths` names the current generation's folders).

A save writes a complete new generation beside the current one, claims its number
and switches the ``CURRENT`` pointer with a compare-and-swap (:mod:`crux_nb.store.commit`);
a crash at any point leaves the previous generation current and readable. Only Parquet and JSON are read back
(never pickle), and file names never come from user data.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import ConflictError, CruxError, NotFoundError, ParameterError, StorageError
from ..schema import JSON_COLUMNS, SCHEMAS, TUPLE_COLUMNS, coerce, empty_frame, frozen_metadata, has_surrogate
from . import commit
from .generations import (FORMAT, GEN, RESTORE, Base, check_version, current_pointer, generation_folder, inside,
                          kept, manifest_digest, read_base)
from .imports import read_import, save_import
from .save_checks import check_save_options, check_target
from .lease import Lease
from .lexical import settings_record
from .indexes import read_indexes, write_indexes
from .edge_order import arranger, saved_frame
from .parts import PartPool, fsync_dir, link_unchanged, part_pool, remember, write_table
from .reading import ChecksumMismatch, decode_json, join_parts, listed_files as _listed_files, read_part
from .reading import read_bytes as _read_bytes  # a module name: tests patch persist._read_bytes
from .state import KBState

FORMAT_VERSION = 3
#: Generations kept by default (``kb.save(path, keep=N)`` changes it for the folder).
KEEP_GENERATIONS = 2
_OPEN_ATTEMPTS = 5
PARTITION_ROWS = 100_000
#: Tables added after format 2 was first written: a generation saved before them opens with them empty.
LATER_TABLES = frozenset({"embeddings"})


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(value, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _to_storable(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    out = frame.copy()
    for column in JSON_COLUMNS.get(table, ()):
        out[column] = pd.Series([_json_text(v) for v in out[column].tolist()], dtype="str", index=out.index)
    return out


def _json_text(value: Any) -> str:
    """A JSON column's text; the empty values most rows hold without a call to ``json.dumps`` (3.5 us each:
    0.7 s of a save at 200k chunks)."""
    if not value and isinstance(value, (dict, tuple, list)):
        return "[]" if isinstance(value, (tuple, list)) else "{}"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _from_storable(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    out = frame.copy()
    for column in JSON_COLUMNS.get(table, ()):
        out[column] = decode_json(out[column], tuple if column in TUPLE_COLUMNS else frozen_metadata)
    return coerce(out, table)


def check_path(owner: str, path: Any) -> None:
    """A folder path: a string or ``os.PathLike`` without NUL bytes or lone surrogates (no file system takes those)."""
    text = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(text, str) or not text or "\x00" in text or has_surrogate(text):
        raise ParameterError(owner, "path", "a folder path (a non-empty str or pathlib.Path, valid Unicode)", path)


def conflict(root: Path, current: Base, base: Base | None) -> ConflictError:
    if base is None:
        told = "this knowledge base was not opened from it"
    elif base.generation == current.generation:
        told = f"this knowledge base was read from a different {base.generation} (another folder's)"
    else:
        told = f"this knowledge base was read from generation {base.generation}"
    return ConflictError(f"kb.save(): {str(root)!r} is at generation {current.generation}, but {told}; saving "
                         "would discard the changes saved since. Nothing was written.",
                         current=current.generation, base=None if base is None else base.generation)


def save(kb: Any, path: str | os.PathLike, *, partition_rows: int = PARTITION_ROWS, overwrite: bool = False,
         merge: bool = False, keep: int | None = None) -> str:
    """Write ``kb`` as a new generation and make it current; returns the generation id.

    Publishes only if the folder's current generation is still the one ``kb`` was read from (checked under the
    build lease, and again by the compare-and-swap that commits: ``crux_nb.store.commit``); otherwise raises
    :class:`ConflictError` unless ``overwrite`` or ``merge`` says what to do (see ``KnowledgeBase.save``)."""
    check_save_options(partition_rows, overwrite, merge, keep)
    root = Path(path)
    check_target(root)
    before = kb.state
    provided = _index_frames(kb, before)  # tokenizing is the slow part: done before the lease is taken
    try:
        (root / "generations").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise commit.storage_error(root, exc, "creating the folder") from None
    inside(root, root / "generations", "the generations folder")
    with Lease(root / "lease") as lease:
        current = read_base(root)
        snapshot: KBState = kb.state  # what this save writes; changes made meanwhile stay in memory (saved_as)
        state = snapshot
        if current is not None and current != kb.base and not overwrite:
            if not merge or kb.base is None:
                raise conflict(root, current, kb.base)
            from .merge import merge_onto

            state = merge_onto(root, kb, current, read=lambda g: _read_generation(root, g, verify=True)[1],
                               mine=snapshot)
        generation = f"g{commit.next_number(root):06d}"
        keep = keep or _kept_setting(root)
        tmp = root / "generations" / f".tmp-{generation}-{uuid.uuid4().hex[:8]}"
        try:
            tmp.mkdir()
            if state is not before:  # merged, or changed by another thread: index what is written
                provided = _index_frames(kb, state)
            _write_generation(kb, state, tmp, generation, partition_rows, lease, provided)
        except CruxError:  # StorageError is an OSError too: a lease lost while writing stays what it is
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        except FileNotFoundError:  # our temporary folder vanished: a save that took the lease over removed it
            raise commit.taken_over(root, generation, base=None if current is None else current.generation) from None
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise commit.storage_error(root, exc, f"writing generation {generation}") from None
        final = commit.claim(root, tmp, generation, base=None if current is None else current.generation)
        try:
            commit.switch(root, generation, observed=current, lease=lease, keep=keep, write_json=_write_json,
                          format_version=FORMAT_VERSION)
        except CruxError:
            commit.discard(final)  # claimed but never committed: nobody else can use its name
            raise
        except OSError as exc:
            commit.discard(final)
            raise commit.storage_error(root, exc, "switching CURRENT") from None
        commit.clean(root, generation)
        kb.saved_as(snapshot, state, Base(generation, manifest_digest(final)))
    return generation


def _write_generation(kb: Any, state: KBState, tmp: Path, generation: str, partition_rows: int, lease: Any,
                      provided: dict) -> dict:
    """Every table, the saved indexes, the import details and the manifest of one generation, written into
    ``tmp``; parts a kept generation holds already are linked, not written (:mod:`crux_nb.store.parts`)."""
    pool = part_pool(tmp.parent.parent)
    tables = {}
    for table in SCHEMAS:
        frame = state.frame(table)  # the same frame object as at the last save or open: its parts, linked
        tables[table] = link_unchanged(tmp / table, state.shared, table, frame, partition_rows=partition_rows,
                                       pool=pool) or _write_saved(tmp / table, table, frame, state, partition_rows, pool)
        remember(state.shared, table, frame, tables[table])
        lease.heartbeat()
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "generation": generation,
                "kb": {"id": kb.id, "namespace": kb.namespace, "chunk_size": kb.chunk_size,
                       "lexical": settings_record(kb.lexical)},
                "tables": tables}
    if provided:
        manifest["indexes"] = write_indexes(tmp, provided, tables, partition_rows=partition_rows, pool=pool)
        lease.heartbeat()
    if getattr(kb, "graphrag", None) is not None:  # import details travel with the knowledge base
        manifest["imported"] = save_import(kb.graphrag, tmp / "imported",
                                           lambda folder, frame: _write_table(folder, frame, partition_rows, pool))
    if kb.communities_config is not None:
        manifest["communities"] = communities_record(kb.communities_config)
    elif getattr(kb, "saved_communities", None):  # opened without its model: keep what was saved
        manifest["communities"] = kb.saved_communities
    _write_json(tmp / "manifest.json", manifest)
    return manifest


def _index_frames(kb: Any, state: KBState) -> dict:  # kb.index_frames: see crux_nb.store.indexes
    provider = getattr(kb, "index_frames", None)
    return provider(state) if callable(provider) else {}


def communities_record(config: Any) -> dict:
    """What ``open()`` needs to restore a communities configuration (never a model's credentials)."""
    return {"id": config.id, "resolution": config.resolution, "seed": config.seed,
            "max_children": config.max_children, "incremental_engine": config.incremental_engine,
            "strategy_fingerprint": config.strategy_fingerprint,
            "model": {"name": config.model.name, "fingerprint": config.model.fingerprint,
                      "class": type(config.model).__name__, "options": _options(config.model)}}


def _options(model: Any) -> dict | None:
    """A model's output-relevant options when it states them as plain JSON (the offline model does)."""
    options = getattr(model, "options", None)
    try:
        value = options() if callable(options) else None
        return value if isinstance(value, dict) and json.loads(json.dumps(value)) == value else None
    except (TypeError, ValueError):
        return None


def _kept_setting(root: Path) -> int:
    """The folder's retention setting (``kb.save(path, keep=N)`` records it in ``CURRENT``)."""
    if not (root / "CURRENT").exists():
        return KEEP_GENERATIONS
    value = current_pointer(root).get("keep")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else KEEP_GENERATIONS


def _write_saved(folder: Path, table: str, frame: pd.DataFrame, state: KBState, partition_rows: int, pool) -> dict:
    """One table of the state, edges in evidence order (:mod:`crux_nb.store.edge_order`)."""
    rows, order = saved_frame(table, frame, state.edge_evidence)
    entry = _write_table(folder, _to_storable(rows, table), partition_rows, pool)
    return entry if order is None else {**entry, "order": order}


def _write_table(folder: Path, frame: pd.DataFrame, partition_rows: int, pool: PartPool | None = None) -> dict:
    """The table's part files (:func:`crux_nb.store.parts.write_table`: cut by content, kept parts linked)."""
    return write_table(folder, frame, partition_rows=partition_rows, pool=pool)


def current_generation(path: str | os.PathLike) -> str:
    """The id of the current generation of a saved knowledge base."""
    return current_pointer(Path(path))["generation"]


@dataclass(frozen=True)
class Saved:
    """One generation read back: the folder, its manifest, the state and the :class:`Base` it is."""

    root: Path
    manifest: dict
    state: KBState
    base: Base
    graphrag: Any = None  # a GraphRAGImport, when the knowledge base was imported from GraphRAG
    indexes: Any = None  # {name: SavedIndex}: the saved indexes that match its tables (crux_nb.store.indexes)


def read_saved(path: str | os.PathLike, *, verify: bool = True, generation: str | None = None) -> Saved:
    """The current generation saved at ``path``, or an earlier ``generation`` still kept
    (``crux_nb.history(path)`` lists them). ``verify`` checks every table's SHA-256 against the manifest first.
    """
    check_path("crux_nb.open()", path)
    root = Path(path)
    if generation is not None:
        if not isinstance(generation, str) or not GEN.match(generation):
            raise ParameterError("crux_nb.open()", "generation", "a generation id such as 'g000002'", generation)
        current_pointer(root)
        if generation not in kept(root):
            raise NotFoundError(f"generation {generation} of {str(root)!r} is not kept (kept: {', '.join(kept(root))}).",
                                hint="crux_nb.history(path) lists the generations kept; kb.save(path, keep=N) "
                                     "keeps more.")
        manifest, state, digest = _read_generation(root, generation, verify=verify)
    else:
        generation, (manifest, state, digest) = _read_current(root, verify=verify)
    folder = generation_folder(root, generation) / "imported"
    graphrag = read_import(manifest.get("imported"), lambda name, entry: _read_parts(
        root, folder, generation, name, entry, verify=verify, what=f"imported table {name!r}"))
    indexes = read_indexes(root, generation_folder(root, generation), manifest, verify=verify)
    return Saved(root, manifest, state, Base(generation, digest), graphrag, indexes)


def read_current(path: str | os.PathLike, *, verify: bool = True) -> tuple[Path, dict, KBState]:
    """The current generation saved at ``path``: ``(root, manifest meta, state)``."""
    saved = read_saved(path, verify=verify)
    return saved.root, saved.manifest["kb"], saved.state


def _read_current(root: Path, *, verify: bool) -> tuple[str, tuple[dict, KBState, str]]:
    generation = current_generation(root)
    for _ in range(_OPEN_ATTEMPTS):
        try:
            return generation, _read_generation(root, generation, verify=verify)
        except StorageError as exc:
            # Saves delete generations older than the kept ones: one a slow reader was still reading
            # may vanish under it. Then CURRENT has moved on; read the new one instead.
            newer = current_generation(root)
            if newer == generation or exc.code in ("link_outside", "unsupported_format"):
                raise
            generation = newer
    raise StorageError(f"{str(root)!r} changed {_OPEN_ATTEMPTS} times while it was being opened.",
                       code="storage_busy", hint="other processes are saving continuously; open it again later.")


def _read_generation(root: Path, generation: str, *, verify: bool) -> tuple[dict, KBState, str]:
    """The manifest, the state and the manifest's SHA-256 (the bytes parsed: see ``generations.Base``)."""
    folder = generation_folder(root, generation)
    try:
        raw = inside(root, folder / "manifest.json", f"the manifest of generation {generation}").read_bytes()
        manifest = json.loads(raw.decode("utf-8"))
        tables = manifest["tables"]
        manifest["kb"]["id"]
    except FileNotFoundError:
        raise StorageError(f"generation {generation} of {str(root)!r} has no manifest.", hint=RESTORE) from None
    except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: a manifest nested thousands deep
        raise StorageError(f"the manifest of generation {generation} of {str(root)!r} is corrupted.",
                           hint=RESTORE) from None
    check_version(root, manifest.get("format_version"), f"the manifest of generation {generation}")
    def read(table: str) -> pd.DataFrame:
        return empty_frame(table) if table in LATER_TABLES and table not in tables \
            else _read_table(root, folder, generation, table, tables.get(table), verify=verify)

    with ThreadPoolExecutor(1) as pool:  # the edge tables (sorted back as they are read) beside the rest: a core each
        edge_tables = {table: pool.submit(read, table) for table in ("edges", "edge_evidence")}
        frames = {table: edge_tables[table].result() if table in edge_tables else read(table) for table in SCHEMAS}
    state = KBState(**frames)
    for table, frame in frames.items():  # a save of an unchanged table links these parts (crux_nb.store.parts)
        remember(state.shared, table, frame, tables.get(table))
    return manifest, state, hashlib.sha256(raw).hexdigest()


def table_paths(path: str | os.PathLike) -> dict[str, Path]:
    """The folder of each table (a Parquet dataset) in the current generation of a saved knowledge base.

    Read one with pandas or Dask, one partition per part file::

        import dask.dataframe as dd
        chunks = dd.read_parquet(table_paths("kb")["chunks"])

    JSON-valued columns (``metadata``, ``aliases``…) hold JSON text in the files.
    """
    root = Path(path)
    folder = generation_folder(root, current_generation(root))
    return {table: folder / table for table in SCHEMAS}


def _read_table(root: Path, folder: Path, generation: str, table: str, entry: Any, *, verify: bool) -> pd.DataFrame:
    try:  # arrange: the rows back in memory order (crux_nb.store.edge_order); unknown orders are a ValueError
        arrange = arranger(table, entry)
        return _from_storable(_read_parts(root, folder, generation, table, entry, verify=verify,
                                          what=f"table {table!r}", arrange=arrange), table)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:  # JSON text damaged (verify=False)
        raise StorageError(f"table {table!r} of generation {generation} in {str(root)!r} does not match its schema: "
                           f"{exc}.", hint=RESTORE) from None


def _read_parts(root: Path, folder: Path, generation: str, table: str, entry: Any, *, verify: bool, what: str,
                arrange: Any = None) -> pd.DataFrame:
    """The part files of one dataset, checked against the manifest (names, SHA-256 with ``verify``, rows)."""
    where = f"{what} of generation {generation} in {str(root)!r}"
    files = _listed_files(folder, table, entry, where)
    pieces = []
    for file, part in files:
        inside(root, file, where)
        if not file.exists():
            raise StorageError(f"{where} is missing ({file.relative_to(folder)}).",
                               hint="the folder was changed by hand; restore it from a backup.")
        try:  # read once: the bytes checked are the bytes decoded (crux_nb.store.reading)
            data = _read_bytes(file)
        except FileNotFoundError:  # retention removed it under a slow reader: the caller follows CURRENT again
            raise StorageError(f"{where} vanished while it was read ({file.name}).", code="generation_removed",
                               hint="the generation was cleaned up by a newer save; open the folder again.") from None
        try:
            piece = read_part(data, part.get("sha256"), verify=verify)
        except ChecksumMismatch:
            raise StorageError(f"{where} is corrupted (checksum mismatch in {file.relative_to(folder)}).",
                               code="checksum_mismatch", hint="the file was changed after saving; " + RESTORE) from None
        except _UNREADABLE as exc:
            raise _unreadable(where, exc) from None
        if piece.num_rows != part.get("rows"):
            raise StorageError(f"{where} has {piece.num_rows} rows in {file.name}; the manifest says "
                               f"{part.get('rows')}.", hint=RESTORE)
        pieces.append(piece)
    try:
        return join_parts(pieces, arrange)
    except _UNREADABLE as exc:
        raise _unreadable(where, exc) from None


# with verify=False a damaged file can fail anywhere in pyarrow's and pandas' decoding
_UNREADABLE = (pa.ArrowException, OSError, ValueError, KeyError, TypeError, IndexError)


def _unreadable(where: str, exc: BaseException) -> StorageError:
    return StorageError(f"{where} cannot be read as Parquet: {type(exc).__name__}.", hint=RESTORE)
