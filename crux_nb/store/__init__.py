"""Storage: validated frames (``state``), ingestion and chunking, Parquet generations (``persist``), the
build lease (``lease``). The :class:`~crux_nb.KnowledgeBase` handle over it lives in
:mod:`crux_nb.knowledgebase` (it composes every layer)."""

from .memory import use_system_allocator

use_system_allocator()  # crux_nb.store.memory says why
