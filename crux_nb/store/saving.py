"""Saving a knowledge base and the generation it was read from, as a mixin of ``KnowledgeBase``."""

from __future__ import annotations

import os
from typing import Any

from . import persist  # called through the module: tests patch persist.save
from .state import KBState

__all__ = ["Saving"]


class Saving:
    """``kb.save()``, ``kb.base`` and ``kb.base_generation`` (mixed into ``KnowledgeBase``)."""

    def save(self, path: str | os.PathLike, *, partition_rows: int = 100_000, overwrite: bool = False,
             merge: bool = False, keep: int | None = None) -> str:
        """Save as a new generation (one Parquet dataset per table, ``partition_rows`` rows per file);
        returns the generation id. ``crux_nb.store.persist.table_paths(path)`` names the table folders.

        The save publishes only if the folder is still at the generation this knowledge base was read from
        (``kb.base_generation``; checked under the build lease, and again by the compare-and-swap that commits,
        which also fails if this save's lease was taken over while it was paused). Otherwise it raises
        :class:`~crux_nb.errors.ConflictError` (code ``save_conflict``) and writes nothing. The ways out:

        * reopen with ``crux_nb.open(path)`` and apply the change again;
        * ``merge=True``: apply this knowledge base's source-level changes since its base generation (sources
          added, replaced or removed, with their extraction results and evidence; edges and entities added) onto
          the newer generation, and make the result this knowledge base's state. A source changed on both sides
          differently raises ``ConflictError`` (code ``merge_conflict``). Communities come from the side that
          rebuilt them (the newer generation's if both did); ``status()`` says ``stale`` when the merged sources
          differ from what they were built from;
        * ``overwrite=True``: replace the newer generation (it stays in ``crux_nb.history(path)`` while kept).

        ``keep`` sets how many generations the folder keeps (recorded in the folder; default 2).

        Safe to call while other threads change this knowledge base: the save writes the state it started
        from, and changes made meanwhile stay (unsaved) in memory.

        From 10,000 chunks a background thread then caches, outside the folder, what the first open of the
        generation written would build and check (the graph's indexes, the tables' agreement), so a notebook
        restarted after the save opens it as fast as an unchanged one (``crux_nb.warming.warm_saved``;
        ``kb.warming`` is the thread; ``CRUX_NB_CACHE_DIR=off`` turns it off).

        Examples
        --------
        >>> import tempfile, crux_nb
        >>> folder = tempfile.mkdtemp() + "/kb"
        >>> kb = crux_nb.knowledge_base(id="s")
        >>> kb.add_text("a.md", "# A\\n\\nAlpha.")
        >>> kb.save(folder)
        'g000001'
        >>> other = crux_nb.open(folder)
        >>> other.add_text("b.md", "# B\\n\\nBeta.")
        >>> other.save(folder)
        'g000002'
        >>> kb.add_text("c.md", "# C\\n\\nGamma.")
        >>> kb.save(folder)
        Traceback (most recent call last):
        ...
        crux_nb.errors.ConflictError: kb.save(): ... Nothing was written. Hint: ...
        >>> kb.save(folder, merge=True)
        'g000003'
        >>> sorted(crux_nb.open(folder).documents["source_id"])
        ['a.md', 'b.md', 'c.md']
        """
        persist.check_path("kb.save()", path)
        generation = persist.save(self, path, partition_rows=partition_rows, overwrite=overwrite, merge=merge, keep=keep)
        self.path = path
        self.after_save()
        return generation

    def after_save(self) -> None:
        """Called once a save is committed (``KnowledgeBase`` fills the disk cache for the generation written:
        ``crux_nb.warming``)."""

    @property
    def base(self):
        """The generation this knowledge base was read from or last saved as (a ``generations.Base``), or None."""
        return self._base

    @property
    def base_generation(self) -> str | None:
        """The id of the generation this knowledge base was read from or last saved as (None if never)."""
        return None if self._base is None else self._base.generation

    def saved_as(self, snapshot: KBState, written: KBState, base: Any) -> None:
        """Record a save: ``snapshot`` is the state the save started from, ``written`` what it committed as
        ``base`` (``snapshot`` itself, or a merge of it onto a newer generation).

        Changes another thread made while the save ran are kept (never reverted to the snapshot): with no
        merge they are simply unsaved changes on top of ``base``; after a merge they are applied onto the
        merged state (the later change wins a source both touched)."""
        with self._lock:
            if self._state is snapshot:
                state = written
            elif written is snapshot:
                state = self._state
            else:
                from .merge import three_way

                state = three_way(snapshot, self._state, written)
            state = self._adopt(state)
            if state is not self._state:
                self._state = state
                self._reader = None
            self._base = base

    def published(self, state: KBState, base: Any) -> None:
        """Record a publish (or an open): ``state`` is what the folder holds as generation ``base``."""
        with self._lock:
            state = self._adopt(state)
            if state is not self._state:
                self._state = state
                self._reader = None
            self._base = base
