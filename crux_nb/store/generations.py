"""The generations of a saved knowledge base: the strict ``CURRENT`` reader, the folder confinement check,
the identity a save compares against, and :func:`history`.

A knowledge base remembers the generation it was read from as a :class:`Base`: the generation id and the
SHA-256 of that generation's ``manifest.json`` (which lists every table's checksum). Two folders at the same
generation number but with different content therefore never look alike, while a byte copy of a folder is
the same base as the original.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import NotFoundError, StorageError

__all__ = ["Base", "READ_VERSIONS", "history", "current_pointer", "read_base", "inside", "fsync_dir"]

FORMAT = "crux_nb"
#: The ``format_version`` values this crux_nb reads (1: one Parquet file per table; 2: one dataset per table; 3: edges
#: and their evidence in evidence order, :mod:`crux_nb.store.edge_order`).
READ_VERSIONS = (1, 2, 3)
GEN = re.compile(r"^g(\d{6,})$")
RESTORE = ("the saved folder was changed outside crux_nb; restore it from a backup "
           "(kb.save keeps the previous generation: crux_nb.history(path) lists what is kept).")


@dataclass(frozen=True)
class Base:
    """The generation a knowledge base was read from (or last saved as): its id and its manifest's SHA-256."""

    generation: str
    digest: str


def inside(root: Path, path: Path, what: str) -> Path:
    """``path`` itself, after checking that it resolves (symlinks followed) to a place inside ``root``.

    A saved folder may hold links between its own files, but a link leaving it (a part file replaced by a link
    to ``/etc/passwd``, ``generations/`` pointing elsewhere) would be read, hashed or written through."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise StorageError(f"{what} of {str(root)!r} is a link that leaves the knowledge-base folder.",
                           code="link_outside", hint="replace the link by the real file or folder (crux_nb never "
                                                     "follows links out of a saved folder), or restore a backup.")
    return path


def check_version(root: Path, version: object, where: str) -> None:
    if isinstance(version, bool) or not isinstance(version, int) or version not in READ_VERSIONS:
        readable = ", ".join(str(v) for v in READ_VERSIONS)
        raise StorageError(f"{where} of {str(root)!r} has format_version {version!r}; this crux_nb reads format "
                           f"versions {readable}.", code="unsupported_format",
                           hint="open it with the crux_nb version that wrote it (a newer one reads older formats), "
                                "or restore the folder from a backup.")


def current_pointer(root: Path) -> dict:
    """The parsed ``CURRENT`` pointer, checked strictly (format, format_version, generation id, confinement)."""
    if not root.exists():
        raise NotFoundError(f"no saved knowledge base at {str(root)!r}.", hint="save one with kb.save(path).")
    pointer = root / "CURRENT"
    if not pointer.exists():
        raise StorageError(f"{str(root)!r} has no CURRENT pointer; it is not a saved crux_nb knowledge base.",
                           hint="open the folder that kb.save() wrote.")
    inside(root, pointer, "CURRENT")
    try:
        info = json.loads(pointer.read_text(encoding="utf-8"))
        generation = info["generation"]
    except (ValueError, KeyError, TypeError):
        raise StorageError(f"the CURRENT pointer of {str(root)!r} is corrupted.", hint=RESTORE) from None
    if info.get("format") != FORMAT or not isinstance(generation, str) or not GEN.match(generation):
        raise StorageError(f"the CURRENT pointer of {str(root)!r} is not a crux_nb pointer.", hint=RESTORE)
    check_version(root, info.get("format_version"), "the CURRENT pointer")
    return info


def generation_folder(root: Path, generation: str) -> Path:
    gens = inside(root, root / "generations", "the generations folder")
    return inside(root, gens / generation, f"generation {generation}")


def manifest_digest(folder: Path) -> str | None:
    try:
        return hashlib.sha256((folder / "manifest.json").read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def read_base(root: Path) -> Base | None:
    """The folder's current generation as a :class:`Base` (None when nothing was saved there yet)."""
    if not (root / "CURRENT").exists():
        return None
    generation = current_pointer(root)["generation"]
    digest = manifest_digest(generation_folder(root, generation))
    if digest is None:
        raise StorageError(f"generation {generation} of {str(root)!r} has no manifest.", hint=RESTORE)
    return Base(generation, digest)


def kept(root: Path) -> list[str]:
    """The committed generation ids kept in the folder, oldest first (see ``crux_nb.store.commit``)."""
    gens = root / "generations"
    if not gens.is_dir():
        return []
    inside(root, gens, "the generations folder")
    return committed(root)


def number(generation: str) -> int:
    """The integer of a generation id (``g000012`` → 12)."""
    return int(GEN.match(generation).group(1))


def folders(root: Path) -> list[str]:
    """Every folder named like a generation, committed or not (unordered)."""
    gens = root / "generations"
    if not gens.is_dir():
        return []
    return [p.name for p in gens.iterdir() if GEN.match(p.name)]


def committed(root: Path) -> list[str]:
    """The committed generations still kept in the folder, oldest first (the current one last); see
    ``crux_nb.store.commit`` for the protocol.

    >>> import tempfile, crux_nb
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp()) / "kb"
    >>> kb = crux_nb.knowledge_base(id="c")
    >>> kb.save(folder), kb.save(folder)
    ('g000001', 'g000002')
    >>> (folder / "generations" / "g000009").mkdir()  # a claimed folder that was never switched to
    >>> from crux_nb.store.generations import committed
    >>> committed(folder)
    ['g000001', 'g000002']
    """
    if not (root / "CURRENT").exists():
        return []
    info = current_pointer(root)
    current = info["generation"]
    present = set(folders(root))
    listed = info.get("committed")
    if isinstance(listed, list) and all(isinstance(g, str) and GEN.match(g) for g in listed):
        names = {g for g in listed if g in present} | ({current} & present)
    else:  # a pointer written before commits were listed: everything up to the current generation
        names = {g for g in present if number(g) <= number(current)}
    return sorted(names, key=number)


def history(path: str | os.PathLike) -> pd.DataFrame:
    """The generations a saved knowledge base still keeps, oldest first.

    Columns: ``generation``, ``current`` (bool), ``documents``, ``chunks``, ``entities``, ``edges`` (row counts
    from each generation's manifest) and ``saved_at`` (the generation folder's modification time, UTC).
    Open one with ``crux_nb.open(path, generation=...)``; ``kb.save(path, keep=N)`` sets how many are kept.

    Examples
    --------
    >>> import tempfile, crux_nb
    >>> kb = crux_nb.knowledge_base(id="h")
    >>> kb.add_text("a.md", "# A\\n\\nAlpha.")
    >>> folder = tempfile.mkdtemp() + "/kb"
    >>> kb.save(folder)
    'g000001'
    >>> kb.add_text("b.md", "# B\\n\\nBeta.")
    >>> kb.save(folder)
    'g000002'
    >>> crux_nb.history(folder)[["generation", "current", "documents"]]
      generation  current  documents
    0    g000001    False          1
    1    g000002     True          2
    """
    root = Path(path)
    current = current_pointer(root)["generation"]
    rows = []
    for generation in kept(root):
        folder = generation_folder(root, generation)
        try:
            tables = json.loads(inside(root, folder / "manifest.json", f"generation {generation}").read_text(
                encoding="utf-8"))["tables"]
            counts = {t: int(tables[t]["rows"]) for t in ("documents", "chunks", "entities", "edges")}
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            continue  # a half-deleted or damaged generation is not one that can be opened
        saved_at = pd.Timestamp(folder.stat().st_mtime, unit="s", tz="UTC").floor("s")
        rows.append({"generation": generation, "current": generation == current, **counts, "saved_at": saved_at})
    return pd.DataFrame(rows, columns=["generation", "current", "documents", "chunks", "entities", "edges",
                                       "saved_at"])


def fsync_dir(path: Path) -> None:
    """Make a folder's new entries durable (a rename or link is in the folder, not the file)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
