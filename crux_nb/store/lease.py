"""A build lease: a lock file with an owner, a heartbeat and an expiry.

Only the holder may publish a new generation. A lease whose heartbeat is older
than its time-to-live is stale and may be taken over (its holder crashed).
"""

from __future__ import annotations

import contextvars
import errno
import fcntl
import json
import os
import socket
import time
import uuid
from pathlib import Path

from ..errors import LeaseError, StorageError

DEFAULT_TTL = 30.0
#: Long builds heartbeat their leases from :func:`keepalive` (tests that count file operations turn it off).
KEEPALIVE = True
_HELD: contextvars.ContextVar[tuple] = contextvars.ContextVar("crux_nb_held_leases", default=())


def keepalive() -> None:
    """Heartbeat every lease held in this context whose last beat is a quarter TTL old.

    Called after each model call of a long map (extraction, report writing), so a build that
    outlives the TTL is not taken for crashed while it is still making progress."""
    if KEEPALIVE:
        for lease in _HELD.get():
            if time.monotonic() - lease._beat >= lease.ttl / 4:
                lease.heartbeat()


class Lease:
    def __init__(self, path: Path, *, ttl: float = DEFAULT_TTL, wait: float = 60.0):
        self.path = Path(path)
        self.ttl = ttl
        self.wait = wait
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.held = False
        self._beat = 0.0

    def _record(self) -> bytes:
        return json.dumps({"owner": self.owner, "heartbeat": time.time(), "ttl": self.ttl}).encode()

    def _try_create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            return False
        except OSError as exc:
            raise self._failed(exc) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(self._record())
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            # a full disk leaves an empty lease file behind: every later save would wait a TTL for it
            self.path.unlink(missing_ok=True)
            raise self._failed(exc) from None
        return True

    def _failed(self, exc: OSError) -> StorageError:
        codes = {errno.ENOSPC: "disk_full", errno.EDQUOT: "disk_full", errno.EROFS: "read_only",
                 errno.EACCES: "permission_denied", errno.EPERM: "permission_denied"}
        return StorageError(f"the build lease {str(self.path)!r} could not be written: {exc.strerror or exc}.",
                            code=codes.get(exc.errno, "storage_io"),
                            hint="free disk space or save to a writable folder; nothing was changed.")

    def owned(self) -> bool:
        """Whether the lease file still names this holder (the fencing check before a commit)."""
        info = self.holder()
        return self.held and info is not None and info.get("owner") == self.owner

    def holder(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError, OSError):
            return None

    def is_stale(self) -> bool:
        """Whether the lease file is missing, unreadable and old, or its holder stopped heart-beating past its TTL."""
        info = self.holder()
        if info is None:
            # unreadable or half-written: judge by the file's age
            try:
                return time.time() - self.path.stat().st_mtime > self.ttl
            except FileNotFoundError:
                return True
        return time.time() - float(info.get("heartbeat", 0)) > float(info.get("ttl", self.ttl))

    def acquire(self) -> Lease:
        deadline = time.monotonic() + self.wait
        while True:
            if self.path.is_symlink():  # planted: crux_nb never creates the lease as a link
                raise StorageError(f"the build lease {str(self.path)!r} is a symbolic link.", code="link_outside",
                                   hint="remove the link; crux_nb creates the lease file itself.")
            if self._try_create():
                self.held = True
                self._beat = time.monotonic()
                _HELD.set(_HELD.get() + (self,))
                self._remove_stray_records()
                return self
            if self.is_stale():
                self._take_over()
                continue
            if time.monotonic() >= deadline:
                info = self.holder() or {}
                raise LeaseError(f"another process ({info.get('owner', 'unknown')}) holds the build lease {str(self.path)!r}.",
                                 hint="wait for it to finish; a crashed holder's lease expires after its TTL.")
            time.sleep(0.05)

    def _take_over(self) -> None:
        # Serialise take-overs with a kernel lock (released if we die), and re-check under it,
        # so a lease another process has just created is never removed by a late take-over.
        try:  # never through a planted link: it would make this process create a file wherever it points
            guard = os.open(self.path.with_name(self.path.name + ".guard"),
                            os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StorageError(f"{self.path.name}.guard next to {str(self.path)!r} is a symbolic link.",
                                   code="link_outside", hint="remove the link; crux_nb creates this file itself."
                                   ) from None
            raise self._failed(exc) from None
        try:
            fcntl.flock(guard, fcntl.LOCK_EX)
            if self.path.exists() and self.is_stale():
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(guard)

    def heartbeat(self) -> None:
        if not self.held:
            return
        info = self.holder()
        if info is None or info.get("owner") != self.owner:
            self.held = False
            raise LeaseError(f"the build lease {str(self.path)!r} was taken over by another process.",
                             hint="this build ran longer than the lease TTL; retry it.")
        tmp = self.path.with_name(f"{self.path.name}.{uuid.uuid4().hex[:8]}.tmp")
        tmp.write_bytes(self._record())
        try:
            os.replace(tmp, self.path)
        except FileNotFoundError:  # a new holder cleared our record: we were taken for crashed
            self.held = False
            raise LeaseError(f"the build lease {str(self.path)!r} was taken over by another process.",
                             hint="this build ran longer than the lease TTL; retry it.") from None
        self._beat = time.monotonic()

    def _remove_stray_records(self) -> None:
        """Temporary heartbeat files a killed holder left behind (only the holder writes them)."""
        for stray in self.path.parent.glob(f"{self.path.name}.*.tmp"):
            stray.unlink(missing_ok=True)

    def release(self) -> None:
        if self.held:
            info = self.holder()
            if info is not None and info.get("owner") == self.owner:
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
            self.held = False
            _HELD.set(tuple(lease for lease in _HELD.get() if lease is not self))

    def __enter__(self) -> Lease:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
