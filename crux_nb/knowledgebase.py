"""The knowledge base: frames on pandas, ingestion, edges, the graph reader and recipes."""

from __future__ import annotations

import os
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import pandas as pd

from .community.access import CommunityAccess
from .community.graph_export import GraphExports
from .errors import CruxError, NotFoundError, ParameterError
from .schema import SCHEMAS
from .store.chunking import DEFAULT_CHUNK_SIZE, check_chunk_size
from .store.files import AddedPaths, path_specs
from .store.ingest import Format, check_unique, frame_specs, text_spec
from .retrieval.retriever.lexical_store import SavedIndexes
from .store.imports import GraphRAGImport
from .store.lexical import DEFAULT_SETTINGS, LexicalSettings, lexical_settings
from .store.saving import Saving
from .store.state import KBState, with_edges, with_entities, with_sources, without_sources
from .validation import check_name
from .warming import FillsCacheOnSave

__all__ = ["KnowledgeBase", "knowledge_base"]


def knowledge_base(*, id: str = "kb", namespace: str | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE,
                   communities: Any = None, language: str = DEFAULT_SETTINGS.language,
                   stopwords: Any = DEFAULT_SETTINGS.stopwords, stemmer: str | None = DEFAULT_SETTINGS.stemmer,
                   tokenizer: str = DEFAULT_SETTINGS.tokenizer) -> KnowledgeBase:
    """Create an empty knowledge base.

    The lexical settings (saved with it; ``BM25Leg(...)`` overrides them per step) say how text becomes BM25 terms:
    ``language`` (``"en"``, ``"fr"``, ``"de"``, ``"zh"``... or its English name); ``stopwords``: ``"auto"`` (the
    language's list, or none when the text reads as code: there, stop words are keywords), ``"language"`` (the
    language's list, if bm25s ships one), ``None`` (none), another language's code, or your own list of words;
    ``stemmer``: ``None``, ``"language"`` or a language code (needs PyStemmer: ``crux_nb[stem]``); ``tokenizer``:
    ``"crux"`` (identifiers such as ``dict.setdefault`` and ``--verbose`` kept whole beside their parts, CJK text split
    into character bigrams) or ``"bm25s"`` (bm25s' own split). See :mod:`crux_nb.store.lexical`.

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("intro.md", "# Intro\\n\\nRelease planning starts in March.")
    >>> kb
    KnowledgeBase(id='docs', namespace='docs', documents=1, sections=1, chunks=1, entities=0, edges=0)
    """
    check_name("knowledge_base()", "id", id)
    namespace = id if namespace is None else check_name("knowledge_base()", "namespace", namespace)
    lexical = lexical_settings("knowledge_base()", language=language, stopwords=stopwords, stemmer=stemmer,
                               tokenizer=tokenizer)
    kb = KnowledgeBase(id=id, namespace=namespace, chunk_size=check_chunk_size(chunk_size), lexical=lexical)
    if communities is not None:
        kb.configure_communities(communities)
    return kb


class KnowledgeBase(GraphExports, CommunityAccess, FillsCacheOnSave, Saving, SavedIndexes):
    """Documents, sections, chunks, entities and typed edges as pandas DataFrames.

    Frames returned by the properties are copies: changing them never changes
    the knowledge base. Every change is all-or-nothing.

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("plan.md", "# Plan\\n\\nThe launch moved to May.")
    >>> kb
    KnowledgeBase(id='docs', namespace='docs', documents=1, sections=1, chunks=1, entities=0, edges=0)
    >>> chunks = kb.chunks
    >>> chunks.loc[0, "content"] = "changed"  # a copy: the knowledge base keeps its own
    >>> kb.chunks.loc[0, "content"]
    '# Plan\\n\\nThe launch moved to May.'
    """

    def __init__(self, *, id: str, namespace: str, chunk_size: int = DEFAULT_CHUNK_SIZE, state: KBState | None = None,
                 lexical: LexicalSettings = DEFAULT_SETTINGS):
        self.id = id
        self.namespace = namespace
        self.chunk_size = chunk_size
        #: how text becomes BM25 terms (``knowledge_base(language=..., stopwords=...)``); every state carries it
        self.lexical = lexical
        self._state = self._adopt(state or KBState())
        self._lock = threading.RLock()
        self._reader = None
        self.communities_config, self._communities = None, None
        self._views: dict[str, dict] = {}
        #: import details of a knowledge base read by ``crux_nb.io.read_graphrag`` (a ``GraphRAGImport``: counts,
        #: reference resolution, warnings, GraphRAG's ids by crux id); saved with it and restored by ``crux_nb.open``
        self.graphrag: GraphRAGImport | None = None
        self.path, self.warming = None, None  # the folder opened from or last saved to; the open's or save's warm thread
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
        """Every table by name (copies).

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Alpha.")
        >>> {name: len(frame) for name, frame in kb.frames().items() if name in ("documents", "chunks", "edges")}
        {'documents': 1, 'chunks': 1, 'edges': 0}
        """
        return {t: self._state.frame(t).copy(deep=False) for t in SCHEMAS}

    @property
    def state(self) -> KBState:
        """The current immutable state (for steps and persistence)."""
        return self._state

    def _adopt(self, state: KBState) -> KBState:
        """``state`` carrying this knowledge base's lexical settings (the retrieve step reads them there)."""
        return state if state.lexical == self.lexical else replace(state, lexical=self.lexical)

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
            self._state = new = self._adopt(new)
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

    def add_path(self, path: str | os.PathLike, *, metadata: dict | None = None, include: str | list[str] | None = None,
                 exclude: str | list[str] | None = None, progress: bool | None = None) -> AddedPaths:
        """Add a file or every file below a folder (id = relative path; HTML, reST, PDF, notebooks need the ``formats``
        extra), ``include``/``exclude`` glob patterns; the ids returned list unread files in ``.skipped``, with why.

        Examples
        --------
        >>> import crux_nb
        >>> crux_nb.knowledge_base(id="s").add_path(crux_nb.datasets.sample_path(), exclude="decision-*").skipped[:1]
        (Skipped(path='decision-cut-embedded-sdk.md', reason="excluded by 'decision-*'", requested=True),)
        """
        result = path_specs(path, metadata=metadata, include=include, exclude=exclude, progress=progress)
        check_unique(result.specs)
        self.commit(lambda s: with_sources(s, result.specs, chunk_size=self.chunk_size))
        return result.added()

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
        """Add or update entities: ``entity_id``, ``canonical_name``; optional ``type``, ``aliases``, ``description``.

        >>> import pandas as pd, crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_entities(pd.DataFrame({"entity_id": ["ada"], "canonical_name": ["Ada Lovelace"]}))
        >>> kb.entities[["ref", "canonical_name"]].to_dict("records")
        [{'ref': 'entity:ada', 'canonical_name': 'Ada Lovelace'}]
        """
        self.commit(lambda s: with_entities(s, frame))

    def extract_entities(self, model: Any = None, *, batch_chars: int | None = None, progress: bool | None = None,
                         executor: Any = None):
        """Extract entities and relations with ``model`` (offline by default) into ``mentions`` and
        ``related`` edges; only new or changed sources are sent to the model. ``batch_chars``: chunk text
        per call (default: the model's ``extract_batch_chars`` if it has one, else 12,000).

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Ada Lovelace met Charles Babbage in London.")
        >>> _ = kb.extract_entities()
        >>> sorted(kb.entities["canonical_name"])
        ['Ada Lovelace', 'Charles Babbage', 'London']
        """
        from .extract import extract_entities

        return extract_entities(self, model, batch_chars=batch_chars, progress=progress, executor=executor)

    def graph_report(self, *, top: int = 10):
        """The entity graph's quality: hubs by share of chunks, untyped share, suspicious aliases, isolated
        entities and per-type counts (``.to_frame()``, an HTML repr); see ``crux_nb.extract.report``.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Ada Lovelace met Charles Babbage in London.")
        >>> _ = kb.extract_entities()
        >>> kb.graph_report().n_entities
        3
        """
        from .extract.report import graph_report
        from .validation import check_int

        return graph_report(self.state, top=check_int("graph_report()", "top", top, minimum=1))

    # ------------------------------------------------------------------ views
    def view(self, *, id: str, where: dict):
        """A typed view: sources whose metadata match ``where`` (see ``crux_nb.views``).

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Alpha.", metadata={"team": "x"})
        >>> kb.add_text("b.md", "Beta.", metadata={"team": "y"})
        >>> sorted(kb.view(id="team-x", where={"team": "x"}).members())
        ['a.md']
        """
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
        ``executor`` (a ``concurrent.futures`` executor or a ``dask.distributed.Client``) runs them instead.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "The launch moved to May.")
        >>> [str(hit.ref) for hit in kb.recipe(steps=[crux_nb.retrieve(limit=1)]).retrieve("launch")]
        ['chunk:a.md:c0000']
        """
        from .retrieval.recipe import Recipe

        return Recipe.bind(self, steps=steps, id=id, model=model, concurrency=concurrency, executor=executor)

    def summary(self) -> dict[str, int]:
        """Row counts of the main tables.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "# A\\n\\nAlpha.")
        >>> kb.summary()
        {'documents': 1, 'sections': 1, 'chunks': 1, 'entities': 0, 'edges': 0}
        """
        s = self._state
        return {"documents": len(s.documents), "sections": len(s.parents), "chunks": len(s.chunks),
                "entities": len(s.entities), "edges": len(s.edges)}

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in self.summary().items())
        return f"KnowledgeBase(id={self.id!r}, namespace={self.namespace!r}, {counts})"

    def _repr_html_(self) -> str:
        from .display.html import knowledge_base_html

        return knowledge_base_html(self)
