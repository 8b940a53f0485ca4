"""crux_nb: connected-knowledge retrieval for notebooks, on pandas.

>>> import crux_nb
>>> kb = crux_nb.knowledge_base(id="docs")
>>> kb.add_text("plan.md", "# Plan\\n\\nRelease planning starts in March.")
>>> [hit.chunk_id for hit in kb.recipe().retrieve("release planning")]
['c0000']

Subpackages load on first use (PEP 562), so ``import crux_nb`` stays cheap and
``crux_nb.models.OfflineModel()`` works without importing ``crux_nb.models`` first:

>>> crux_nb.models.OfflineModel().name
'offline'
>>> [step.id for step in (crux_nb.retrieve(), crux_nb.expand_relations())]
['retrieve', 'expand-relations']
"""

from __future__ import annotations

import importlib
from typing import Any

from . import errors, refs
from .refs import ChunkRef, DocumentRef, EntityRef, ParentRef, decode_ref, encode_ref

__version__ = "0.1.0"

# top-level name -> (module, attribute), imported on first access
_LAZY_NAMES = {
    "KnowledgeBase": ("crux_nb.knowledgebase", "KnowledgeBase"),
    "knowledge_base": ("crux_nb.knowledgebase", "knowledge_base"),
    "open": ("crux_nb.knowledgebase", "open_knowledge_base"),
    "communities": ("crux_nb.community.config", "communities"),
    "retrieve": ("crux_nb.retrieval", "retrieve"),
    "expand_relations": ("crux_nb.retrieval", "expand_relations"),
    "global_search": ("crux_nb.retrieval", "global_search"),
    "custom_step": ("crux_nb.retrieval", "custom_step"),
    "View": ("crux_nb.views", "View"),
}
# user-facing subpackages first, then the ones step and model authors reach for
_LAZY_MODULES = ("models", "datasets", "retrieval", "widgets", "io", "display", "testing",
                 "community", "views", "store", "graph", "extract", "validation", "hits")

__all__ = [
    "knowledge_base", "KnowledgeBase", "open", "communities",
    "retrieve", "expand_relations", "global_search", "custom_step", "View",
    "ChunkRef", "DocumentRef", "EntityRef", "ParentRef", "decode_ref", "encode_ref",
    "models", "datasets", "retrieval", "widgets", "io", "errors", "refs", "__version__",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY_NAMES:
        module, attribute = _LAZY_NAMES[name]
        value = getattr(importlib.import_module(module), attribute)
    elif name in _LAZY_MODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES) | set(_LAZY_MODULES))
