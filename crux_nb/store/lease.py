"""A build lease: a lock file with an owner, a heartbeat and an expiry.

Only the holder may publish a new generation. A lease whose heartbeat is older
than its time-to-live is stale and may be taken over (its holder crashed).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
import uuid
from pathlib import Path

from ..errors import LeaseError

DEFAULT_TTL = 30.0


class Lease:
    def __init__(self, path: Path, *, ttl: float = DEFAULT_TTL, wait: float = 60.0):
        self.path = Path(path)
        self.ttl = ttl
        self.wait = wait
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.held = False

    def _record(self) -> bytes:
        return json.dumps({"owner": self.owner, "heartbeat": time.time(), "ttl": self.ttl}).encode()

    def _try_create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(self._record())
            fh.flush()
            os.fsync(fh.fileno())
        return True

    def holder(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError, OSError):
            return None

    def _stale(self) -> bool:
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
            if self._try_create():
                self.held = True
                return self
            if self._stale():
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
        guard = os.open(self.path.with_name(self.path.name + ".guard"), os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(guard, fcntl.LOCK_EX)
            if self.path.exists() and self._stale():
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
        os.replace(tmp, self.path)

    def release(self) -> None:
        if self.held:
            info = self.holder()
            if info is not None and info.get("owner") == self.owner:
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
            self.held = False

    def __enter__(self) -> Lease:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
