"""The values that flow through a recipe run: requests, planned queries, step input/output, context."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import InputError, ParameterError
from ..refs import KnowledgeRef
from .filters import check_filter, hit_record, record_matches
from ..hits import EvidenceHit, RetrieverHit, evidence_key

Phase = Literal["queries", "hits"]
PHASES = ("queries", "hits")


@dataclass(frozen=True)
class PlannedQuery:
    query: str
    filter: Mapping[str, Any] | None = None
    weight: float | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.query, str) or not self.query.strip():
            raise InputError("Planned retrieval query must be non-empty.", code="invalid_query",
                             hint="pass a non-blank query string.")
        object.__setattr__(self, "query", self.query.strip())
        if self.weight is not None and (not isinstance(self.weight, (int, float)) or not self.weight > 0
                                        or not math.isfinite(self.weight)):
            raise InputError("Planned retrieval query weight must be positive.", code="invalid_query")


@dataclass(frozen=True)
class Request:
    """One retrieval request: the query plus optional filter, limit and admission hook."""

    query: str
    filter: Mapping[str, Any] | None = None
    limit: int | None = None
    admit: Callable[[Mapping[str, Any]], Any] | None = None

    @classmethod
    def build(cls, query: Any, *, filter: Any = None, limit: Any = None, admit: Any = None) -> Request:
        owner = "recipe.retrieve()"
        if not isinstance(query, str) or not query.strip():
            raise InputError("Planned retrieval query must be non-empty.", code="invalid_query",
                             hint="pass a non-blank query string.")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ParameterError(owner, "limit", "a positive integer or None", limit)
        if admit is not None and not callable(admit):
            raise ParameterError(owner, "admit", "a callable or None", admit)
        return cls(query=query.strip(), filter=check_filter(owner, filter), limit=limit, admit=admit)


@dataclass(frozen=True)
class StepInput:
    """What a step receives: the planned queries (producers) or the previous step's hits (hit steps).

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Launch in May.")
    >>> seen = []
    >>> spy = crux_nb.custom_step(lambda inp, ctx: seen.append((len(inp.hits), ctx.request.query)) or inp.hits, id="spy")
    >>> _ = kb.recipe(steps=[crux_nb.retrieve(), spy]).retrieve("launch")
    >>> seen
    [(1, 'launch')]
    """

    queries: tuple[PlannedQuery, ...] = ()
    hits: tuple[RetrieverHit, ...] = ()


@dataclass(frozen=True)
class StepOutput:
    """What a step returns; ``knowledge`` is the knowledge trace payload, ``details`` step-specific records.

    A custom step may return a ``StepOutput`` (with warnings) instead of a plain list of hits:

    >>> import crux_nb
    >>> from crux_nb.retrieval import StepOutput
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Launch in May.")
    >>> warn = crux_nb.custom_step(lambda inp, ctx: StepOutput(hits=inp.hits, warnings=("checked",)), id="warn")
    >>> kb.recipe(steps=[crux_nb.retrieve(), warn]).retrieve_with_trace("launch").trace.step("warn").warnings
    ('checked',)
    """

    queries: tuple[PlannedQuery, ...] | None = None
    hits: tuple[RetrieverHit, ...] | None = None
    warnings: tuple[str, ...] = ()
    knowledge: Any = None
    details: Any = None


@dataclass(frozen=True)
class KnowledgeBinding:
    """Graph access for steps: a pinned reader and a (filter-checked) ``hydrate``."""

    reader: Any
    namespace: str
    filter: Mapping[str, Any] | None = None
    members: frozenset[str] | None = None  # a view's member sources; None = every source

    def hydrate(self, ref: KnowledgeRef | str) -> EvidenceHit | None:
        return self._admit(self.reader.hydrate(ref))

    def hydrate_row(self, row: int, **fields: Any) -> EvidenceHit | None:
        """The hit of chunk row ``row`` (``reader.hydrate_row``, ``fields`` its score and provenance), or ``None``
        where the filter or view hides it."""
        return self._admit(self.reader.hydrate_row(row, **fields))

    def row_key(self, row: int) -> str | None:
        """The :func:`~crux_nb.hits.hit_key` of the hit :meth:`hydrate_row` gives for chunk row ``row``, or ``None``
        where the filter or view hides it: the same test, decided before any hit is built."""
        source_id, chunk_id, metadata = self.reader.row_fields(row)
        namespace = self.reader.namespace
        return evidence_key(namespace, source_id, chunk_id) if self._admits(namespace, source_id, chunk_id,
                                                                            metadata) else None

    def _admit(self, hit: EvidenceHit | None) -> EvidenceHit | None:
        if hit is None or not self._admits(hit.namespace, hit.source.id, hit.chunk_id, hit.metadata):
            return None
        return hit

    def _admits(self, namespace: str, source_id: str, chunk_id: str, metadata: Mapping[str, Any]) -> bool:
        """Whether the view's members and the request's filter let a chunk through (one test for both paths)."""
        if self.members is not None and source_id not in self.members:
            return False
        return not self.filter or record_matches(hit_record(namespace, source_id, chunk_id, metadata), self.filter)


@dataclass(frozen=True)
class StepContext:
    """What a step may read besides its input: the recipe, the request, the pinned state and graph.

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Launch in May.")
    >>> seen = {}
    >>> def look(inp, ctx):
    ...     seen.update(recipe=ctx.recipe_id, chunks=len(ctx.state.chunks), query=ctx.request.query)
    ...     return inp.hits
    >>> _ = kb.recipe(steps=[crux_nb.retrieve(), crux_nb.custom_step(look, id="look")], id="r").retrieve("launch")
    >>> seen
    {'recipe': 'r', 'chunks': 1, 'query': 'launch'}
    """

    recipe_id: str
    namespace: str
    request: Request
    state: Any
    knowledge: KnowledgeBinding | None
    model: Any = None
    communities: Any = None
    concurrency: int = 4
    members: frozenset[str] | None = None
    executor: Any = None  # a concurrent.futures executor or dask.distributed.Client for model calls
    # per-run scratch shared by the steps of one run (a fresh dict per request): ``retrieve`` leaves the
    # query's per-chunk relevance under CHUNK_RELEVANCE for ``expand_relations`` to reuse
    extras: Mapping[str, Any] = field(default_factory=dict)


#: ``context.extras`` key: a function giving the query's relevance per chunk row of the state (0..1, best = 1),
#: left by ``retrieve`` and called only by a step that needs it
CHUNK_RELEVANCE = "chunk_relevance"
#: ``context.extras`` key: a function ``n -> the first n chunk rows of the retrieve step's ranking`` (best first,
#: visible rows with a positive relevance only; fewer when fewer exist), left by ``retrieve``: the head it ranked
#: anyway is reused, so ``expand_relations`` reads the retrieve step's next candidates without a pass over all chunks
CHUNK_RANKING = "chunk_ranking"
#: ``context.extras`` key: a function giving ``(embedder, the query's unit vector or None)`` of the run's first
#: dense leg, left by ``retrieve`` when it has one (``expand_relations`` seeds entities near the query with it)
QUERY_VECTOR = "query_vector"
