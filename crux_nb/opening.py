"""``crux_nb.open``: a saved knowledge base back in memory, with its communities configuration."""

from __future__ import annotations

import os
import warnings
from typing import Any

from .knowledgebase import KnowledgeBase
from .store import persist
from .store.lexical import settings_from_record

__all__ = ["open_knowledge_base"]


def open_knowledge_base(path: str | os.PathLike, *, verify: bool = True, communities: Any = None,
                        generation: str | None = None) -> KnowledgeBase:
    """Open a saved knowledge base (``crux_nb.open``) at its current generation, or at an earlier
    ``generation`` still kept (``crux_nb.history(path)`` lists them).

    ``verify`` checks every table's SHA-256 against the manifest first. ``communities`` attaches a communities
    configuration. Without it, the configuration saved with the knowledge base (strategy, resolution, seed, the
    model's name and fingerprint) is restored when its model can be rebuilt from what was saved (the offline
    model); a model that cannot (a ``ChatModel``: its key is never saved) must be passed again, and until then
    ``kb.communities.status()`` is ``"model_required"`` and every other call raises an error saying so. Saved
    communities and reports are read either way.

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
    meta = saved.manifest["kb"]
    # a manifest from before the lexical settings: the behaviour it was built with (bm25s' split, English stop words)
    kb = KnowledgeBase(id=meta["id"], namespace=meta["namespace"], chunk_size=meta["chunk_size"], state=saved.state,
                       lexical=settings_from_record(meta.get("lexical")))
    kb.path = saved.root
    kb.graphrag = saved.graphrag
    kb.published(saved.state, saved.base)
    if communities is not None:
        kb.configure_communities(communities)
    elif isinstance(saved.manifest.get("communities"), dict):
        kb.restore_communities(saved.manifest["communities"])
    _note_stale_extractor(kb, saved.manifest.get("communities"))
    return kb


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
