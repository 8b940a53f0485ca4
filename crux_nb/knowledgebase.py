"""The knowledge base: frames on pandas, ingestion, edges, the graph reader and recipes."""

from __future__ import annotations

import os
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from .community.access import CommunityAccess
from .community.graph_export import GraphExports
from .errors import CruxError, NotFoundError, ParameterError
from .schema import SCHEMAS
from .store.chunking import DEFAULT_CHUNK_SIZE, check_chunk_size
from .store.ingest import Format, check_unique, frame_specs, path_specs, text_spec
from .store import persist  # called through the module: tests patch persist.save
from .store.state import KBState, with_edges, with_entities, with_sources, without_sources
from .validation import check_name

__all__ = ["KnowledgeBase", "knowledge_base"]



def knowledge_base(*, id: str = "kb", namespace: str | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE,
                   communities: Any = None) -> KnowledgeBase:
    """Create an empty knowledge base.

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("intro.md", "# Intro\\n\\nRelease planning starts in March.")
    >>> kb
    KnowledgeBase(id='docs', namespace='docs', documents=1, sections=1, chunks=1, entities=0, edges=0)
    """
    check_name("knowledge_base()", "id", id)
    namespace = id if namespace is None else check_name("knowledge_base()", "namespace", namespace)
    kb = KnowledgeBase(id=id, namespace=namespace, chunk_size=check_chunk_size(chunk_size))
    if communities is not None:
        kb.configure_communities(communities)
    return kb


class KnowledgeBase(GraphExports, CommunityAccess):
    """Documents, sections, chunks, entities and typed edges as pandas DataFrames.

    Frames returned by the properties are copies: changing them never changes
    the knowledge base. Every change is all-or-nothing.
    """

    def __init__(self, *, id: str, namespace: str, chunk_size: int = DEFAULT_CHUNK_SIZE, state: KBState | None = None):
        self.id = id
        self.namespace = namespace
        self.chunk_size = chunk_size
        self._state = state or KBState()
        self._lock = threading.RLock()
        self._reader = None
        self.communities_config = None
        self._communities = None
        self._views: dict[str, dict] = {}
        self.graphrag = None  # import details, set by crux_nb.io.read_graphrag (in memory only)
        self.path = None  # the folder this knowledge base was opened from or last saved to
        #: view revisions seen in this session, ``{(view id, revision): members}`` (pinned views replay them)
        self.view_revisions: dict[tuple[str, str], tuple] = {}
        self._base = None  # the generation read from or last saved (see save())
        self.saved_communities = None  # the communities configuration saved in the folder (see crux_nb.open)

    # ----------------------------------------------------------------- frames
    @property
    def documents(self) -> pd.DataFrame:
        """One row per source: ``source_id``, ``title``, ``path``, ``media_type``, ``content_hash``, counts, ``metadata``."""
        return self._state.documents.copy(deep=False)

    @property
    def parents(self) -> pd.DataFrame:
        """Sections (Markdown headings): ``source_id``, ``parent_id``, ``ordinal``, ``title``, ``heading_level``."""
        return self._state.parents.copy(deep=False)

    @property
    def chunks(self) -> pd.DataFrame:
        """Chunks: ``ref``, ``source_id``, ``chunk_id``, ``parent_id``, ``ordinal``, ``content``, ``n_chars``, ``metadata``."""
        return self._state.chunks.copy(deep=False)

    @property
    def entities(self) -> pd.DataFrame:
        return self._state.entities.copy(deep=False)

    @property
    def edges(self) -> pd.DataFrame:
        """Persisted semantic edges (structural ``hierarchy``/``sequence`` edges are never stored)."""
        return self._state.edges.copy(deep=False)

    @property
    def edge_evidence(self) -> pd.DataFrame:
        """One row per chunk supporting an edge: ``edge_id``, ``source_id``, ``chunk_ref``, ``provenance``."""
        return self._state.edge_evidence.copy(deep=False)

    def frames(self) -> dict[str, pd.DataFrame]:
        """Every table by name (copies)."""
        return {t: self._state.frame(t).copy(deep=False) for t in SCHEMAS}

    @property
    def state(self) -> KBState:
        """The current immutable state (for steps and persistence)."""
        return self._state

    # -------------------------------------------------------------- ingestion
    def commit(self, change: Callable[[KBState], KBState], *, expected: KBState | None = None) -> KBState:
        """Replace the state by ``change(state)`` atomically (the one write path for every layer).

        Extraction, communities and user code build a new immutable :class:`~crux_nb.store.state.KBState`
        from the current one; ``change`` runs under this knowledge base's lock. With ``expected``, the
        commit happens only if the state is still that object (optimistic concurrency); otherwise a
        :class:`~crux_nb.errors.CruxError` with code ``state_changed`` is raised and nothing changes.
        Returns the new state.

        Examples
        --------
        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> before = kb.state
        >>> _ = kb.commit(lambda state: state, expected=before)
        >>> kb.add_text("a.md", "Alpha.")
        >>> try:
        ...     kb.commit(lambda state: state, expected=before)
        ... except crux_nb.errors.CruxError as error:
        ...     print(error.code)
        state_changed
        """
        with self._lock:
            if expected is not None and self._state is not expected:
                raise CruxError("the knowledge base changed since the expected state was read.", code="state_changed",
                                hint="read kb.state again and rebuild the change from it.")
            new = change(self._state)
            if not isinstance(new, KBState):
                raise ParameterError("kb.commit()", "change", "a function returning a KBState", new)
            self._state = new
            self._reader = None
            return new

    def add_text(self, source_id: str, text: str, *, metadata: dict | None = None, format: Format = "markdown",
                 chunk_size: int | None = None) -> None:
        """Add (or replace) one source from a string. Markdown front matter becomes metadata.

        Examples
        --------
        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("plan.md", "# Plan\\n\\nThe launch moved to May.", metadata={"team": "product"})
        >>> kb.documents[["source_id", "n_chunks"]].to_dict("records")
        [{'source_id': 'plan.md', 'n_chunks': 1}]
        """
        spec = text_spec(source_id, text, metadata=metadata, format=format)
        size = self.chunk_size if chunk_size is None else check_chunk_size(chunk_size)
        self.commit(lambda s: with_sources(s, [spec], chunk_size=size))

    def add_path(self, path: str | os.PathLike, *, metadata: dict | None = None) -> list[str]:
        """Add a ``.md``/``.txt`` file, or every such file below a folder (source id = relative path).

        Examples
        --------
        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="sample")
        >>> len(kb.add_path(crux_nb.datasets.sample_path())) > 30
        True
        """
        specs = path_specs(path, metadata=metadata)
        check_unique(specs)
        self.commit(lambda s: with_sources(s, specs, chunk_size=self.chunk_size))
        return [s.source_id for s in specs]

    def add_frame(self, frame: pd.DataFrame, *, id_column: str = "id", text_column: str = "text",
                  format: Format = "markdown") -> list[str]:
        """Add one source per row; every other column becomes metadata.

        Examples
        --------
        >>> import pandas as pd, crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_frame(pd.DataFrame({"id": ["a", "b"], "text": ["Alpha.", "Beta."], "team": ["x", "y"]}))
        ['a', 'b']
        """
        specs = frame_specs(frame, id_column=id_column, text_column=text_column, format=format)
        check_unique(specs)
        self.commit(lambda s: with_sources(s, specs, chunk_size=self.chunk_size))
        return [s.source_id for s in specs]

    def remove(self, source_id: str | Iterable[str]) -> None:
        """Remove sources with their chunks, the evidence they gave and edges left unsupported.

        Examples
        --------
        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Alpha.")
        >>> kb.remove("a.md")
        >>> len(kb.documents)
        0
        """
        if isinstance(source_id, str):
            ids = [source_id]
        elif isinstance(source_id, (bytes, Mapping)) or not isinstance(source_id, Iterable):
            raise ParameterError("kb.remove()", "source_id", "a source id or a list of source ids", source_id)
        else:
            ids = list(source_id)
        if not all(isinstance(s, str) for s in ids):
            raise ParameterError("kb.remove()", "source_id", "a source id or a list of source ids (strings)", source_id)
        ids = [unicodedata.normalize("NFC", s) for s in ids]  # ids are stored in NFC (see add_text)
        known = set(self._state.documents["source_id"])
        missing = [s for s in ids if s not in known]
        if missing:
            raise NotFoundError(f"source {missing[0]!r} is not in knowledge base {self.id!r}.",
                                hint="kb.documents['source_id'] lists the sources.")
        self.commit(lambda s: without_sources(s, set(ids)))

    def add_edges(self, frame: pd.DataFrame) -> None:
        """Add semantic edges: columns ``from_ref``, ``to_ref``, ``type``, ``evidence`` (chunk refs),
        optional ``direction`` (``directed``/``symmetric``), ``description``, ``weight``.

        Examples
        --------
        >>> import pandas as pd, crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Alpha.")
        >>> kb.add_text("b.md", "Beta.")
        >>> kb.add_edges(pd.DataFrame({"from_ref": ["chunk:a.md:c0000"], "to_ref": ["chunk:b.md:c0000"],
        ...                            "type": ["references"], "evidence": [["chunk:a.md:c0000"]]}))
        >>> [str(n.ref) for n in kb.reader.neighbors("chunk:a.md:c0000", types=["references"])]
        ['chunk:b.md:c0000']
        """
        self.commit(lambda s: with_edges(s, frame))

    def add_entities(self, frame: pd.DataFrame) -> None:
        """Add or update entities: ``entity_id``, ``canonical_name``; optional ``type``, ``aliases``, ``description``."""
        self.commit(lambda s: with_entities(s, frame))

    def extract_entities(self, model: Any = None, *, batch_chars: int | None = None, progress: bool | None = None,
                         executor: Any = None):
        """Extract entities and relations with ``model`` (offline by default) into ``mentions`` and
        ``related`` edges; only new or changed sources are sent to the model. ``batch_chars``: chunk text
        per call (default: the model's ``extract_batch_chars`` if it has one, else 12,000)."""
        from .extract import extract_entities

        return extract_entities(self, model, batch_chars=batch_chars, progress=progress, executor=executor)

    # ------------------------------------------------------------------ views
    def view(self, *, id: str, where: dict):
        """A typed view: sources whose metadata match ``where`` (see ``crux_nb.views``)."""
        from .views import View, field_kinds, normalise_where

        check_name("kb.view()", "id", id)
        normalised = normalise_where(where, field_kinds(self._state.documents))
        known = self._views.get(id)
        if known is not None and known != normalised:
            raise CruxError(f'View "{id}" is already registered with a different predicate.', code="view_conflict",
                            hint="choose another view id.")
        self._views[id] = normalised
        return View(self, id, normalised)

    # ---------------------------------------------------------------- reading
    @property
    def reader(self):
        """A graph reader pinned to the current state.

        Examples
        --------
        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "# A\\n\\nAlpha.")
        >>> [n.type for n in kb.reader.neighbors("chunk:a.md:c0000")]
        ['hierarchy']
        """
        from .graph.reader import GraphReader

        with self._lock:
            if self._reader is None:
                self._reader = GraphReader(self._state, namespace=self.namespace)
            return self._reader

    def recipe(self, steps: list | None = None, *, id: str | None = None, model: Any = None, concurrency: int = 4,
               executor: Any = None):
        """A retrieval recipe bound to this knowledge base (one ``retrieve()`` step by default).

        ``concurrency`` bounds the model calls a step may run at once (global-search map batches);
        ``executor`` (a ``concurrent.futures`` executor or a ``dask.distributed.Client``) runs them instead."""
        from .retrieval.recipe import Recipe

        return Recipe.bind(self, steps=steps, id=id, model=model, concurrency=concurrency, executor=executor)

    def save(self, path: str | os.PathLike, *, partition_rows: int = 100_000, overwrite: bool = False,
             merge: bool = False, keep: int | None = None) -> str:
        """Save as a new generation (one Parquet dataset per table, ``partition_rows`` rows per file);
        returns the generation id. ``crux_nb.store.persist.table_paths(path)`` names the table folders.

        The save publishes only if the folder is still at the generation this knowledge base was read from
        (``kb.base_generation``; checked under the build lease, atomically with the publish). Otherwise it raises
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
        return generation

    @property
    def base(self):
        """The generation this knowledge base was read from or last saved as (a ``generations.Base``), or None."""
        return self._base

    @property
    def base_generation(self) -> str | None:
        """The id of the generation this knowledge base was read from or last saved as (None if never)."""
        return None if self._base is None else self._base.generation

    def published(self, state: KBState, base: Any) -> None:
        """Record a publish (or an open): ``state`` is what the folder holds as generation ``base``."""
        with self._lock:
            if state is not self._state:
                self._state = state
                self._reader = None
            self._base = base

    def summary(self) -> dict[str, int]:
        s = self._state
        return {"documents": len(s.documents), "sections": len(s.parents), "chunks": len(s.chunks),
                "entities": len(s.entities), "edges": len(s.edges)}

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in self.summary().items())
        return f"KnowledgeBase(id={self.id!r}, namespace={self.namespace!r}, {counts})"

    def _repr_html_(self) -> str:
        from .display.html import knowledge_base_html

        return knowledge_base_html(self)
