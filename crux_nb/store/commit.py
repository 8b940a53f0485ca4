"""The commit protocol of ``kb.save``: which generations are committed, and the compare-and-swap that commits one.

A save writes its generation into ``generations/.tmp-gNNNNNN-<token>/`` and then

1. **claims** its number: renames the folder to ``generations/gNNNNNN``. A rename never replaces a non-empty
   folder, so two writers that picked the same number cannot both claim it (put-if-absent);
2. **switches** ``CURRENT`` with a compare-and-swap under a kernel lock (the file ``switch``, released by the
   kernel if its holder dies): the switch happens only if the build lease is still this writer's (its fencing
   token: the owner recorded in the lease file) and ``CURRENT`` still names the generation the save was based
   on. Otherwise :class:`~crux_nb.errors.ConflictError` (``save_conflict``), and the claimed folder is removed;
3. **cleans up**: generations dropped by retention, claimed-but-never-committed folders (a save killed between
   its claim and its switch, or one that lost the swap) and stale temporary folders.

``CURRENT`` lists the committed generations still kept (``"committed"``); :func:`committed` is what
``crux_nb.history``, ``crux_nb.open(generation=...)``, merges and retention see. A folder whose ``CURRENT`` has no
such list (written before this protocol) counts every generation up to the current one as committed; one with a
higher number was never switched to. Generation numbers only grow, so a ``CURRENT`` never returns to an earlier
value and a writer paused past its lease can never swap in a generation based on an older one.

Why this order is safe to clean: once a save switched to generation *n*, a writer that can still commit must
have read ``CURRENT`` at *n* or later, and so picked a number above *n*; every uncommitted folder numbered at or
below *n* belongs to a writer whose swap must fail, and may be removed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import ConflictError, LeaseError, StorageError
from .generations import FORMAT, GEN, fsync_dir, committed, current_pointer, folders, inside, number, read_base

__all__ = ["committed", "next_number", "claim", "switch", "clean", "discard", "taken_over", "storage_error"]

#: The kernel lock serialising ``CURRENT`` switches (held for a compare and one atomic rename).
SWITCH_LOCK = "switch"
SWITCH_WAIT = 60.0
_TMP = re.compile(r"^\.tmp-g(\d{6,})-")
_HINT_RETRY = ("another save committed first (or this one was paused past its lease); reopen with "
               "crux_nb.open(path) and apply the change again, or save with merge=True.")


def next_number(root: Path) -> int:
    """A generation number above every generation, claimed folder, temporary folder and ``CURRENT`` itself."""
    seen = [number(g) for g in folders(root)]
    gens = root / "generations"
    if gens.is_dir():
        seen += [int(m.group(1)) for p in gens.iterdir() if (m := _TMP.match(p.name))]
    if (root / "CURRENT").exists():
        seen.append(number(current_pointer(root)["generation"]))
    return max(seen, default=0) + 1


def _conflict(root: Path, why: str, *, current: str | None, base: str | None) -> ConflictError:
    return ConflictError(f"kb.save(): {why} in {str(root)!r}; this save was not committed.", current=current,
                         base=base, hint=_HINT_RETRY)


def taken_over(root: Path, generation: str, *, base: str | None) -> ConflictError:
    """The error of a save whose temporary folder was removed under it (a save that took its lease over)."""
    return _conflict(root, f"the temporary folder of {generation} was removed by another save (this one was paused "
                           "past its lease)", current=None, base=base)


def claim(root: Path, tmp: Path, generation: str, *, base: str | None) -> Path:
    """Rename the written folder ``tmp`` to its generation name; a folder of that name already there wins."""
    final = root / "generations" / generation
    try:
        os.rename(tmp, final)
    except FileNotFoundError:
        raise taken_over(root, generation, base=base) from None
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
            raise _conflict(root, f"generation {generation} was claimed by another save", current=None,
                            base=base) from None
        raise storage_error(root, exc, "claiming the new generation") from None
    fsync_dir(final.parent)
    return final


@contextmanager
def switch_lock(root: Path, *, wait: float = SWITCH_WAIT) -> Iterator[None]:
    """The kernel lock around a ``CURRENT`` switch (never a symlink's target: ``O_NOFOLLOW``)."""
    try:
        fd = os.open(root / SWITCH_LOCK, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StorageError(f"{SWITCH_LOCK} of {str(root)!r} is a symbolic link.", code="link_outside",
                               hint="remove the link; crux_nb creates this lock file itself.") from None
        raise storage_error(root, exc, "opening the switch lock") from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LeaseError(f"another save has held the switch lock of {str(root)!r} for {wait:.0f} s.",
                                     code="storage_busy", hint="a saver is paused inside its commit; resume or "
                                                               "stop it, then save again.") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def switch(root: Path, generation: str, *, observed: Any, lease: Any, keep: int, write_json: Any,
           format_version: int) -> list[str]:
    """The compare-and-swap: make ``generation`` current if ``CURRENT`` is still ``observed`` (a ``Base`` or
    None) and ``lease`` is still held by this writer. Returns the committed generations now kept."""
    base = None if observed is None else observed.generation
    with switch_lock(root):
        if lease is not None and not lease.owned():
            raise _conflict(root, "the build lease was taken over by another process (this save was paused or "
                                  "slower than the lease TTL)", current=None, base=base)
        now = read_base(root)
        if now != observed:
            raise _conflict(root, f"CURRENT moved to generation {now.generation if now else None} while this save "
                                  "ran", current=None if now is None else now.generation, base=base)
        for stray in root.glob(".CURRENT.*.tmp"):  # a killed switch's pointer file (only switches write them)
            stray.unlink(missing_ok=True)
        kept = (committed(root) + [generation])[-keep:]
        write_json(root / "CURRENT", {"format": FORMAT, "format_version": format_version, "generation": generation,
                                      "keep": keep, "committed": kept})
    return kept


def clean(root: Path, generation: str) -> None:
    """After a switch to ``generation``: remove generations no longer committed and numbered below it (dropped
    by retention, or claimed and never committed), and temporary folders numbered up to it."""
    gens = root / "generations"
    n = number(generation)
    keep = set(committed(root))
    for p in list(gens.iterdir()):
        m = GEN.match(p.name)
        tmp = _TMP.match(p.name)
        if (m and p.name not in keep and number(p.name) < n) or (tmp and int(tmp.group(1)) <= n):
            inside(root, p, "a generation folder")
            shutil.rmtree(p, ignore_errors=True)


def discard(folder: Path) -> None:
    """Remove a claimed folder whose switch failed (nobody else can commit under its number's name)."""
    shutil.rmtree(folder, ignore_errors=True)


def storage_error(root: Path, exc: OSError, doing: str) -> StorageError:
    """A coded :class:`StorageError` for an ``OSError`` met while saving (full disk, read-only folder, …)."""
    codes = {errno.ENOSPC: ("disk_full", "the disk is full", "free space and save again; the previous generation "
                                                            "is untouched."),
             errno.EDQUOT: ("disk_full", "the disk quota is exhausted", "free space and save again."),
             errno.EROFS: ("read_only", "the folder is on a read-only file system",
                           "save to a writable folder (kb.save(other_path))."),
             errno.EACCES: ("permission_denied", "permission was denied", "save to a folder you can write to."),
             errno.EPERM: ("permission_denied", "the operation is not permitted", "save to a folder you can write "
                                                                                   "to.")}
    code, what, hint = codes.get(exc.errno, ("storage_io", f"the file system failed ({exc.strerror or exc})",
                                             "check the disk and save again; the previous generation is untouched."))
    return StorageError(f"kb.save(): {what} while {doing} in {str(root)!r}; nothing was committed.", code=code,
                        hint=hint)
