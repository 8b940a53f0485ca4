"""``crux_nb.open``: a saved knowledge base back in memory, with its communities configuration."""

from __future__ import annotations

import atexit
import os
import threading
import time
import warnings
from typing import Any

import pyarrow as pa

from .knowledgebase import KnowledgeBase
from .store import persist
from .graph import cached as graph_cache
from .retrieval.expand.prepare import prepare_expansion, prepare_traversal
from .retrieval.retriever.lexical_store import NAME as LEXICAL, install_lexical
from .store.integrity import check_manifest_kb, check_tables, checks_key

__all__ = ["open_knowledge_base", "warm"]


#: From this many chunks ``open`` builds what the first expansion reads in a background thread (:func:`warm`): at
#: 100k chunks ~1 s that the first query would otherwise wait for; below, milliseconds
WARM_MIN_CHUNKS = 10_000


def open_knowledge_base(path: str | os.PathLike, *, verify: bool = True, communities: Any = None,
                        generation: str | None = None) -> KnowledgeBase:
    """Open a saved knowledge base (``crux_nb.open``) at its current generation, or at an earlier
    ``generation`` still kept (``crux_nb.history(path)`` lists them).

    ``verify`` checks every table's SHA-256 against the manifest first. ``verify=False`` is unsafe: it skips
    that check, so a damaged or altered file is read as it is (in a test of 160 single-bit flips, 38 opened
    silently with different content); use it only on a folder you just wrote yourself. Either way the manifest's
    settings and the tables' agreement with each other are checked (``StorageError`` codes ``manifest_invalid``
    and ``inconsistent_generation``); from :data:`WARM_MIN_CHUNKS` chunks, verified tables found to agree are
    remembered in the disk cache below and not checked again. ``communities`` attaches a communities
    configuration. Without it, the configuration saved with the knowledge base (strategy, resolution, seed, the
    model's name and fingerprint) is restored when its model can be rebuilt from what was saved (the offline
    model); a model that cannot (a ``ChatModel``: its key is never saved) must be passed again, and until then
    ``kb.communities.status()`` is ``"model_required"`` and every other call raises an error saying so. Saved
    communities and reports are read either way. From :data:`WARM_MIN_CHUNKS` chunks what the first
    ``expand_relations()`` reads (the graph indexes, entity and source names, hit columns: :func:`warm`) is built
    in a background thread while the knowledge base opens, so the first query finds it ready or nearly so. The
    graph's indexes are kept in a disk cache outside the folder, named by the checksums of the tables they were
    built from (``$CRUX_NB_CACHE_DIR``, default ``~/.cache/crux_nb``; ``off`` turns it off): reopening the
    same tables (a notebook restart) reads them instead of building them; ``kb.warming`` is that thread.

    Examples
    --------
    >>> import tempfile, crux_nb
    >>> from crux_nb.models import OfflineModel
    >>> folder = tempfile.mkdtemp() + "/kb"
    >>> kb = crux_nb.knowledge_base(id="o", communities=crux_nb.communities(model=OfflineModel(), seed=3))
    >>> kb.add_text("a.md", "# A\\n\\nAda Lovelace met Charles Babbage.")
    >>> kb.save(folder)
    'g000001'
    >>> crux_nb.open(folder).communities.config
    communities(model='offline', id='communities', resolution=1.0, seed=3)
    """
    saved = persist.read_saved(path, verify=verify, generation=generation)
    # every field validated as knowledge_base() validates its arguments; a manifest from before the lexical
    # settings gets the behaviour it was built with (bm25s' split, English stop words)
    meta = check_manifest_kb(saved.root, saved.base.generation, saved.manifest.get("kb"))
    kb = KnowledgeBase(id=meta["id"], namespace=meta["namespace"], chunk_size=meta["chunk_size"], state=saved.state,
                       lexical=meta["lexical"])
    state = kb.state  # the saved tables with the knowledge base's lexical settings
    installed = threading.Event()
    large = len(state.chunks) >= WARM_MIN_CHUNKS  # the disk cache is for what costs time: large knowledge bases
    tables = saved.manifest.get("tables") if verify and large else None  # checksums checked: they name content
    if large:  # built while the install and the checks below run (next core)
        kb.warming = warm(kb, installed=installed, cache_key=graph_cache.cache_key(tables) if tables else None)
    try:
        install_indexes(state, saved.indexes)
    finally:
        installed.set()
    check_tables(saved.root, saved.base.generation, saved.manifest, state, key=checks_key(tables) if tables else None)
    kb.path = saved.root
    kb.graphrag = saved.graphrag
    kb.published(state, saved.base)
    if communities is not None:
        kb.configure_communities(communities)
    elif isinstance(saved.manifest.get("communities"), dict):
        kb.restore_communities(saved.manifest["communities"])
    _note_stale_extractor(kb, saved.manifest.get("communities"))
    return kb


def warm(kb: KnowledgeBase, *, installed: threading.Event | None = None,
         cache_key: str | None = None) -> threading.Thread:
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
        try:
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
        except Exception:  # noqa: BLE001 - the query that needs the index builds it again and raises
            pass
        finally:
            _WRITERS.discard(threading.current_thread())

    thread = threading.Thread(target=build, name="crux_nb-warm", daemon=True)
    if cache_key is not None:
        _WRITERS.add(thread)
    thread.start()
    return thread


def _finish_cache_writes() -> None:
    """At exit, wait (up to :data:`EXIT_WAIT_S`) for background builds that will write the disk cache: a short
    script that opens new tables and ends leaves the cache filled for the next one, instead of a killed writer."""
    deadline = time.monotonic() + EXIT_WAIT_S
    for thread in list(_WRITERS):
        thread.join(max(0.0, deadline - time.monotonic()))


#: The background builds (:func:`warm`) that will write the graph's indexes to the disk cache when done
_WRITERS: set[threading.Thread] = set()
#: How long the interpreter's exit waits for them (about 3 s at 200k chunks: the build's end, then the writing)
EXIT_WAIT_S = 30.0
atexit.register(_finish_cache_writes)


def install_indexes(state: Any, indexes: dict | None) -> None:
    """Hand the indexes saved with a generation to their owners (each checks they fit ``state``)."""
    found = (indexes or {}).get(LEXICAL)
    if found is not None:
        try:
            install_lexical(state, found.params, found.frames)
        except (KeyError, TypeError, ValueError, OSError, pa.ArrowException):
            pass  # derived data that does not fit or decode: the lexical leg rebuilds it on first use


def _note_stale_extractor(kb: KnowledgeBase, saved_communities: Any) -> None:
    """Warn when the graph's extractor differs from the configured model: the communities' model; else the
    model the saved communities name when it is not the offline model (a ``ChatModel`` must be passed again);
    else the offline model of this crux_nb (``kb.extract_entities()``'s default)."""
    from .extract.entities import stale_extractor_note
    from .models import OfflineModel

    model = getattr(kb.communities_config, "model", None)
    record = saved_communities.get("model") if isinstance(saved_communities, dict) else None
    if model is None and isinstance(record, dict) and record.get("class") not in (None, "OfflineModel"):
        name, fingerprint = str(record.get("name")), str(record.get("fingerprint"))
    else:
        model = OfflineModel() if model is None else model
        name, fingerprint = model.name, model.fingerprint
    note = stale_extractor_note(kb.state, name=name, fingerprint=fingerprint)
    if note:
        warnings.warn(f"crux_nb.open({str(kb.path)!r}): {note}", stacklevel=3)
