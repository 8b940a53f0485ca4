"""crux_nb: connected-knowledge retrieval for notebooks, on pandas.

>>> import crux_nb
>>> kb = crux_nb.knowledge_base(id="docs")
>>> kb.add_text("plan.md", "# Plan\\n\\nRelease planning starts in March.")
>>> [hit.chunk_id for hit in kb.recipe().retrieve("release planning")]
['c0000']
"""

from . import errors, io, refs
from .refs import ChunkRef, DocumentRef, EntityRef, ParentRef, decode_ref, encode_ref
from .community.config import communities
from .knowledge_base import KnowledgeBase, knowledge_base
from .knowledge_base import open_knowledge_base as open
from .store.generations import history

__version__ = "0.1.0"

__all__ = [
    "KnowledgeBase", "knowledge_base", "communities", "open", "history", "errors", "io", "refs",
    "ChunkRef", "DocumentRef", "EntityRef", "ParentRef", "decode_ref", "encode_ref", "__version__",
]
