"""What a first query reads and no saved index holds, built in a background thread and kept in the disk cache of
derived arrays (:mod:`crux_nb.store.array_cache`): after ``crux_nb.open`` (:func:`warm`) and after ``kb.save``
(:func:`warm_saved`), on knowledge bases of :data:`WARM_MIN_CHUNKS` chunks or more.

A save fills the cache for the generation it wrote, so the first open of that generation in a new process (a
notebook restart after an edit) reads the graph's indexes and skips the table checks, as a reopening does.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from typing import Any

from .graph import cached as graph_cache
from .retrieval.expand.prepare import prepare_expansion, prepare_traversal
from .store.array_cache import cache_root, has_entry
from .store.integrity import CHECKS, checks_key, remember_agreement
from .store.parts import saved_entries

__all__ = ["WARM_MIN_CHUNKS", "EXIT_WAIT_S", "warm", "warm_saved", "FillsCacheOnSave"]

#: From this many chunks ``open`` builds what the first expansion reads in a background thread (:func:`warm`), and
#: a save caches it for the generation it wrote (:func:`warm_saved`): at 100k chunks ~1 s that the first query
#: would otherwise wait for; below, milliseconds
WARM_MIN_CHUNKS = 10_000
#: How long the interpreter's exit waits for a background build that will write the disk cache (about 3 s at
#: 200k chunks: the build's end, then the writing)
EXIT_WAIT_S = 30.0
#: The background builds that will write the disk cache when done
_WRITERS: set[threading.Thread] = set()
#: A save's fills run one at a time (each builds a graph: a burst of saves must not build them all at once) ...
_FILLING = threading.Lock()
#: ... and only the last save's of a knowledge base: the earlier ones' generations are superseded
_LATEST_FILL: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def warm(kb: Any, *, installed: threading.Event | None = None, cache_key: str | None = None) -> threading.Thread:
    """Build what a first query reads and no saved index holds, in a background thread, and return it: what the
    default ``expand_relations()`` reads (:func:`~crux_nb.retrieval.expand.prepare.prepare_expansion`: the graph's
    traversal index and view, the entity and source names) and the chunk columns a hit is made of (~2 s at 200k
    chunks and 100k entities). One thread, one index after the other: two would contend for the interpreter lock
    and finish both later. The graph's indexes and the entity names first, while ``open`` installs the saved
    indexes (they read none); the rest once ``installed`` is set: the source names read the lexical statistics
    the saved index brings (without them, counting every chunk's identifiers takes seconds). A failure there is
    left for the query that needs the index to raise. With ``cache_key`` (naming the opened tables:
    ``crux_nb.graph.cached``) the graph's indexes are read from the disk cache when an earlier process left them
    there, and else cached once everything is built (after the first query's needs, so it never waits for the
    writing)."""
    state, reader = kb.state, kb.reader

    def build() -> None:
        if graph_cache.restore(reader, cache_key):
            _WRITERS.discard(threading.current_thread())
        prepare_traversal(reader, state=state)  # reads no saved index
        if installed is not None:
            installed.wait()
        prepare_expansion(reader, state)
        for column in state.lookup.COLUMNS:
            state.lookup.columns[column]
        if threading.current_thread() in _WRITERS:
            graph_cache.keep(reader, cache_key)

    thread = _background(build, "crux_nb-warm", writes=cache_key is not None)
    thread.start()
    return thread


def warm_saved(kb: Any) -> threading.Thread | None:
    """After ``kb.save``: cache what the first open of the generation just written would build or check (the
    graph's indexes and views, :func:`warm`'s order; the tables' agreement), in a background thread, and return it
    (None when there is nothing to do: a small knowledge base, the cache off, entries there already, or a state
    changed since the save). The graph is built in this process only if no query built it already; the next
    query of this knowledge base reads what the thread built."""
    state = kb.state
    if len(state.chunks) < WARM_MIN_CHUNKS or cache_root() is None:
        return None
    tables = saved_entries(state)  # only tables still stored as they are in memory: keys name what is written
    graph_key, agreed_key = graph_cache.cache_key(tables), checks_key(tables)
    graph_key = None if has_entry(graph_cache.KIND, graph_key) else graph_key
    agreed_key = None if has_entry(CHECKS, agreed_key) else agreed_key
    if graph_key is None and agreed_key is None:
        return None
    reader = kb.reader

    def fill() -> None:
        with _FILLING:  # one at a time; of saves made meanwhile, only the last one's is worth filling
            if _LATEST_FILL.get(kb) is not threading.current_thread():
                return
            remember_agreement(state, agreed_key)
            if graph_key is not None:
                prepare_traversal(reader, state=state)
                prepare_expansion(reader, state)
                graph_cache.keep(reader, graph_key)

    thread = _background(fill, "crux_nb-fill", writes=True)
    _LATEST_FILL[kb] = thread
    thread.start()
    return thread


class FillsCacheOnSave:
    """``kb.after_save()`` (mixed into ``KnowledgeBase``; ``Saving.save`` calls it once a save is committed)."""

    def after_save(self) -> None:
        """Cache for the generation just written what its first open would build (:func:`warm_saved`);
        ``kb.warming`` is the thread."""
        self.warming = warm_saved(self) or self.warming


def _background(work: Any, name: str, *, writes: bool) -> threading.Thread:
    """A daemon thread (not started) running ``work``, waited for at exit when it ``writes`` the disk cache; a
    failure is silent (the query that needs what failed builds it again and raises)."""
    def run() -> None:
        try:
            work()
        except Exception:  # noqa: BLE001 - derived data: the query that needs it builds it again
            pass
        finally:
            _WRITERS.discard(threading.current_thread())

    thread = threading.Thread(target=run, name=name, daemon=True)
    if writes:
        _WRITERS.add(thread)
    return thread


def _finish_cache_writes() -> None:
    """At exit, wait (up to :data:`EXIT_WAIT_S`) for background builds that will write the disk cache: a short
    script that opens or saves new tables and ends leaves the cache filled for the next one, not a killed writer."""
    deadline = time.monotonic() + EXIT_WAIT_S
    for thread in list(_WRITERS):
        thread.join(max(0.0, deadline - time.monotonic()))


atexit.register(_finish_cache_writes)
