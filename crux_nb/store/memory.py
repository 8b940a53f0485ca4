"""Which allocator Arrow's buffers come from in a process that uses crux_nb.

pyarrow's default pool on Linux is mimalloc, which hands memory freed by one step back to the operating system
within milliseconds (its purge delay), so the next step's buffers are fresh pages again; on a virtual machine
every fresh page costs a fault (measured here: ~2.5 ms per MB first touched, against ~0.2 ms per MB reused).
Opening a knowledge base decodes, joins and converts every table, so it pays that again and again: at 200k chunks
/ 1M edges, open + first query took 2.6-3.5 s of system CPU on mimalloc against 0.6-1.2 s on the system
allocator, with 250-300 MB less peak memory (``bench/open_first.py``; bench/HISTORY.md tells the story).

So on Linux the first use of crux_nb's storage makes the system allocator Arrow's default, unless the user has
chosen one (the ``ARROW_DEFAULT_MEMORY_POOL`` environment variable, or ``pyarrow.set_memory_pool`` with another
backend than mimalloc). Buffers already allocated stay valid: each remembers its pool.
"""

from __future__ import annotations

import os
import sys

import pyarrow as pa

__all__ = ["use_system_allocator", "ENV"]

#: Arrow's own environment variable: set to ``mimalloc`` (or ``jemalloc``) to keep that allocator
ENV = "ARROW_DEFAULT_MEMORY_POOL"


def use_system_allocator(*, platform: str = sys.platform, environ: dict | None = None) -> bool:
    """Make the system allocator Arrow's default pool when the default is still mimalloc, nobody chose it through
    :data:`ENV`, and the platform is Linux; True when it changed the pool.

    >>> use_system_allocator(platform="darwin")
    False
    >>> use_system_allocator(environ={ENV: "mimalloc"})
    False
    """
    environ = os.environ if environ is None else environ
    if not platform.startswith("linux") or environ.get(ENV):
        return False
    if pa.default_memory_pool().backend_name != "mimalloc":
        return False
    pa.set_memory_pool(pa.system_memory_pool())
    return True
