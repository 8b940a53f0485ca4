"""``crux_nb.open``: a saved knowledge base back in memory, with its communities configuration."""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any

import pyarrow as pa

from . import warming
from .knowledgebase import KnowledgeBase
from .store import persist
from .graph import cached as graph_cache
from .retrieval.retriever.lexical_store import NAME as LEXICAL, install_lexical
from .store.integrity import check_manifest_kb, check_tables, checks_key

__all__ = ["open_knowledge_base"]


def open_knowledge_base(path: str | os.PathLike, *, verify: bool = True, communities: Any = None,
                        generation: str | None = None) -> KnowledgeBase:
    """Open a saved knowledge base (``crux_nb.open``) at its current generation, or at an earlier
    ``generation`` still kept (``crux_nb.history(path)`` lists them).

    ``verify`` checks every table's SHA-256 against the manifest first. ``verify=False`` is unsafe: it skips
    that check, so a damaged or altered file is read as it is (in a test of 160 single-bit flips, 38 opened
    silently with different content); use it only on a folder you just wrote yourself. Either way the manifest's
    settings and the tables' agreement with each other are checked (``StorageError`` codes ``manifest_invalid``
    and ``inconsistent_generation``); from ``crux_nb.warming.WARM_MIN_CHUNKS`` chunks, verified tables
    found to agree are remembered in the disk cache below and not checked again. ``communities`` attaches a
    communities configuration. Without it, the configuration saved with the knowledge base (strategy,
    resolution, seed, the model's name and fingerprint) is restored when its model can be rebuilt from what was
    saved (the offline model); a model that cannot (a ``ChatModel``: its key is never saved) must be passed
    again, and until then ``kb.communities.status()`` is ``"model_required"`` and every other call raises an
    error saying so. Saved communities and reports are read either way. From
    ``crux_nb.warming.WARM_MIN_CHUNKS`` chunks what the first ``expand_relations()`` reads (the graph
    indexes, entity and source names, hit columns: ``crux_nb.warming.warm``) is built in a background
    thread while the knowledge base opens, so the first query finds it ready or nearly so. The graph's indexes
    are kept in a disk cache outside the folder, named by the checksums of the tables they were built from
    (``$CRUX_NB_CACHE_DIR``, default ``~/.cache/crux_nb``; ``off`` turns it off): reopening the same tables (a
    notebook restart) reads them instead of building them, and so does the first open of a generation this
    machine saved (``kb.save`` fills the cache for it: ``crux_nb.warming.warm_saved``); ``kb.warming`` is
    that thread.

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
    large = len(state.chunks) >= warming.WARM_MIN_CHUNKS  # the disk cache is for what costs time: large knowledge bases
    tables = saved.manifest.get("tables") if verify and large else None  # checksums checked: they name content
    if large:  # built while the install and the checks below run (next core)
        kb.warming = warming.warm(kb, installed=installed, cache_key=graph_cache.cache_key(tables) if tables else None)
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
