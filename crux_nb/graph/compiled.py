"""Compiled graph loops without a first-call stall: numba compiles them in a background thread.

numba is a core dependency (it ships wheels), so every install has the compiled traversal of
:mod:`.frontier_kernel` and the compiled breadth-first reach here. Compiling them takes seconds (tens of
seconds on a busy machine, once per machine: numba caches the machine code on disk, and a later process
loads it in about a second). So the first call never waits for it: it starts a daemon thread and answers
with the numpy code, which gives the same results bit for bit; calls after the thread finished run
compiled. The thread has a child process compile every loop into numba's disk cache (``python -m
crux_nb.warmup``: a compilation in this process would hold the interpreter lock for long stretches, and
the numpy calls answering meanwhile would queue behind it for seconds), then runs the loop once on the
first call's own arrays, which loads it from the cache (or compiles it here, should the child have failed).
:func:`wait` waits for it (a benchmark's warm-up); ``python -m crux_nb.warmup`` fills the cache ahead (an
install step).
``CRUX_NB_TRAVERSAL=numpy`` turns the compiled loops off, ``CRUX_NB_TRAVERSAL=kernel`` makes the first call
compile and wait (what the bit-for-bit tests use).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable

import numpy as np

__all__ = ["mode", "ready", "mark_ready", "warm", "wait", "reach_kernel"]

_events: dict[str, threading.Event] = {}
_started: dict[str, threading.Thread] = {}
_errors: dict[str, BaseException] = {}
_lock = threading.Lock()


def mode() -> str:
    """``"numpy"``, ``"kernel"`` (compile in the foreground) or ``"auto"`` (compile in the background)."""
    value = os.environ.get("CRUX_NB_TRAVERSAL", "").lower()
    return value if value in ("numpy", "kernel") else "auto"


def ready(name: str) -> bool:
    """Whether the compiled loop ``name`` finished compiling in this process."""
    event = _events.get(name)
    return event is not None and event.is_set()


def mark_ready(name: str) -> None:
    """Record that the compiled loop ``name`` ran (compiled in the foreground, or by :func:`warm`'s thread)."""
    event = _events.get(name)
    if event is None:
        with _lock:
            event = _events.setdefault(name, threading.Event())
    event.set()


def warm(name: str, compile_once: Callable[[], object]) -> None:
    """Run ``compile_once`` (a first call of the compiled loop ``name``) in a daemon thread, once per process."""
    with _lock:
        if name in _started:
            return
        event = _events.setdefault(name, threading.Event())

        def target() -> None:
            try:
                _compile_in_child()
                compile_once()
            except BaseException as exc:  # noqa: BLE001 (kept: the numpy code goes on answering)
                _errors[name] = exc

        _started[name] = thread = threading.Thread(target=target, name=f"crux_nb-compile-{name}", daemon=True)
    thread.start()


_child_done = threading.Lock()
_child_ran: list[int] = []


def _compile_in_child() -> None:
    """Compile every loop into numba's disk cache in a child process, once per process (a failure is left to
    the in-process compilation that follows)."""
    with _child_done:
        if _child_ran:
            return
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            done = subprocess.run([sys.executable, "-m", "crux_nb.warmup"], env=env, capture_output=True,
                                  timeout=1800, check=False)
            _child_ran.append(done.returncode)
        except (OSError, subprocess.SubprocessError):
            _child_ran.append(-1)


def wait(name: str, timeout: float | None = None) -> bool:
    """Wait for a background compilation of ``name`` started by :func:`warm`; whether it is ready."""
    thread = _started.get(name)
    if thread is not None:
        thread.join(timeout)
    if name in _errors:
        raise _errors[name]
    return ready(name)


_reach = None


def reach_kernel():
    """The compiled breadth-first reach (see :meth:`crux_nb.graph.adjacency.AdjacencyIndex.reach`)."""
    global _reach, _order_hop
    if _reach is None:
        import numba

        # the loop resolves its helper as a global when it compiles
        _order_hop = numba.njit(cache=True, nogil=True)(_order_hop)
        _reach = numba.njit(cache=True, nogil=True)(_reach_loop)
    return _reach


def _reach_loop(indptr, peer, mask, start, depth, seen, slots):
    """Nodes within ``depth`` hops of ``start`` over the entries ``mask`` admits, start excluded, ordered by
    (hop, node code): each hop's new nodes sorted, as the numpy reach's ``np.unique`` gives them. Returns
    (nodes, their hops, each hop's end in them). ``seen`` (a zeroed byte per node) and ``slots`` (room for
    every node) are the caller's, kept between calls (allocating them per call cost as much as a small
    search); ``seen`` is zeroed again on return."""
    ends = np.zeros(depth, np.int64)
    count = 0
    seen[start] = 1
    lo, hi = 0, 1  # the first hop reads the start alone
    for hop in range(1, depth + 1):
        first = count
        low, high = len(seen), -1  # the range of this hop's new codes
        for i in range(lo, hi):
            node = start if hop == 1 else slots[i]
            for e in range(indptr[node], indptr[node + 1]):
                if mask[e]:
                    p = peer[e]
                    if not seen[p]:
                        seen[p] = 2  # new this hop
                        slots[count] = p
                        count += 1
                        low, high = min(low, p), max(high, p)
        if count == first:
            break
        _order_hop(seen, slots, first, count, low, high)
        ends[hop - 1:] = count
        lo, hi = first, count
    seen[start] = 0
    nodes = slots[:count].copy()
    hops = np.empty(count, np.int64)
    first = 0
    for hop in range(depth):
        for i in range(first, ends[hop]):
            seen[nodes[i]] = 0
            hops[i] = hop + 1
        first = ends[hop]
    return nodes, hops, ends


def _order_hop(seen, slots, first, count, low, high):
    """Sort one hop's new codes ``slots[first:count]`` (marked 2 in ``seen``, marked 1 on return). A large hop
    is gathered by a scan of its code range instead: numba's sort of 10,000 codes costs about 6x a scan of
    100,000 bytes (the hubs' reaches), while a few thousand sort faster than the scan."""
    if high - low < 24 * (count - first):
        k = first
        for code in range(low, high + 1):
            if seen[code] == 2:
                seen[code] = 1
                slots[k] = code
                k += 1
    else:
        slots[first:count].sort()
        for i in range(first, count):
            seen[slots[i]] = 1
