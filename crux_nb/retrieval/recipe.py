"""Recipes: an ordered list of steps bound to a knowledge base, validated at construction.

Construction errors follow upstream (section 6.2) with the same codes:
``invalid_step_order``, ``missing_model``, ``recipe_id_conflict``, ``reserved_step_id``.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

from .._hashing import stable_hash
from ..errors import CruxError, ParameterError, RetrievalConfigError, RetrievalRunError
from ..hits import to_data
from .results import HitList, RetrievalResult
from .base import PRODUCER_KINDS, RESERVED_IDS, Step
from .retriever.step import retrieve
from .trace import RecipeTrace, StepTrace, collapse_warnings
from .types import KnowledgeBinding, PlannedQuery, Request, StepContext, StepInput


def validate_steps(recipe_id: Any, steps: list[Any], *, retriever_id: str, model: Any, communities: Any) -> None:
    """Raise :class:`RetrievalConfigError` for an invalid recipe (upstream's rules, in order)."""
    if not isinstance(recipe_id, str) or not recipe_id.strip():
        raise RetrievalConfigError("Retrieval recipe id must be non-empty.", code="invalid_step_order")
    if recipe_id == retriever_id:
        raise RetrievalConfigError(f'Retrieval recipe id "{recipe_id}" conflicts with the retriever id of its knowledge base.',
                                   code="recipe_id_conflict", hint="choose another recipe id.")
    producers = [s for s in steps if s.kind in PRODUCER_KINDS]
    if len(producers) > 1:  # checked before the phase chain, so the error names both producers
        raise RetrievalConfigError(
            f'Retrieval recipe has more than one producer step: "{producers[0].id}" and "{producers[1].id}". '
            "Use exactly one of retrieve() or global_search().", code="invalid_step_order")
    ids = [s.id for s in steps]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:  # traces, trace.step(id) and the widgets address steps by id
        raise RetrievalConfigError(f'Retrieval recipe has more than one step with id "{repeated[0]}".',
                                   code="duplicate_step_id", hint="pass id=... to one of the step factories.")
    current = "queries"
    for step in steps:
        if not step.builtin and step.id in RESERVED_IDS:
            raise RetrievalConfigError(f'Retrieval step id "{step.id}" is reserved for built-in steps.',
                                       code="reserved_step_id", hint="rename the custom step.")
        if step.phase[0] != current:
            raise RetrievalConfigError(f'Retrieval step "{step.id}" expects {step.phase[0]} input but receives {current}.',
                                       code="invalid_step_order",
                                       hint="start with a producer (retrieve() or global_search()), then hit steps.")
        if step.needs_model and step.model is None and model is None:
            raise RetrievalConfigError(f'Retrieval step "{step.id}" requires a model.', code="missing_model",
                                       hint="pass model=... to the step or to the recipe.")
        if step.kind == "global-search" and communities is None:
            raise RetrievalConfigError(
                f'Retrieval step "{step.id}" requires connected knowledge communities. Configure '
                "crux_nb.knowledge_base(..., communities=crux_nb.communities(model=...)) and run it through "
                "kb.recipe(...) or view.recipe(...).", code="missing_model",
                hint="configure communities on the knowledge base.")
        current = step.phase[1]


@dataclass(frozen=True)
class Recipe:
    """A validated, bound list of steps. Run it with :meth:`retrieve` or :meth:`retrieve_with_trace`.

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Release planning starts in March.")
    >>> recipe = kb.recipe(steps=[crux_nb.retrieve(limit=3), crux_nb.expand_relations(limit=2)], id="plan")
    >>> recipe
    Recipe(id='plan', steps=[retrieve(limit=3), expand_relations(direction='both', depth=1, limit=2, seeds=['hits', 'query'])])
    >>> [(s["id"], s["kind"], s["phase"]) for s in recipe.to_dict()["steps"]]
    [('retrieve', 'retrieve', ['queries', 'hits']), ('expand-relations', 'custom', ['hits', 'hits'])]
    """

    id: str
    steps: tuple[Step, ...]
    kb: Any
    model: Any = None
    fingerprint: str = ""
    concurrency: int = 4
    view: Any = None
    executor: Any = None

    @classmethod
    def bind(cls, kb: Any, *, steps: list | None, id: str | None, model: Any, concurrency: int = 4,
             view: Any = None, executor: Any = None) -> Recipe:
        """Validate ``steps`` against ``kb`` and bind them (what ``kb.recipe()`` and ``view.recipe()`` call).

        >>> import crux_nb
        >>> from crux_nb.retrieval import Recipe
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> Recipe.bind(kb, steps=[crux_nb.retrieve(), crux_nb.expand_relations(id="x"),
        ...                        crux_nb.expand_relations(id="x")], id=None, model=None)
        Traceback (most recent call last):
        ...
        crux_nb.errors.RetrievalConfigError: ...x...
        """
        steps = [retrieve()] if steps is None else steps
        if isinstance(steps, (str, bytes)) or not hasattr(steps, "__iter__"):
            raise ParameterError("kb.recipe()", "steps", "a list of steps", steps)
        steps = list(steps)
        for step in steps:
            if not isinstance(step, Step):
                raise ParameterError("kb.recipe()", "steps", "a list of steps made by crux_nb.retrieval factories", step)
        fingerprint = stable_hash({"steps": [s.to_dict() for s in steps], "kb": kb.id, "namespace": kb.namespace,
                                   "model": getattr(model, "name", None),
                                   "view": None if view is None else [view.id, view.where, view.pinned]})
        recipe_id = f"{kb.id}-recipe-{fingerprint[:8]}" if id is None else id
        validate_steps(recipe_id, steps, retriever_id=kb.id, model=model,
                       communities=getattr(kb, "communities_config", None))
        from ..validation import check_int

        concurrency = check_int("kb.recipe()", "concurrency", concurrency, minimum=1)
        if executor is not None and not callable(getattr(executor, "submit", None)):
            raise ParameterError("kb.recipe()", "executor", "an object with submit() (an executor or a Dask client)",
                                 executor)
        return cls(id=recipe_id, steps=tuple(steps), kb=kb, model=model, fingerprint=fingerprint, concurrency=concurrency,
                   view=view, executor=executor)

    def retrieve(self, query: str, *, filter: dict | None = None, limit: int | None = None, admit: Any = None) -> HitList:
        """Run the recipe and return its hits.

        Examples
        --------
        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Release planning starts in March.")
        >>> kb.add_text("b.md", "The office moves in June.")
        >>> [hit.source.id for hit in kb.recipe(steps=[crux_nb.retrieve(limit=1)]).retrieve("release planning")]
        ['a.md']
        """
        return self.retrieve_with_trace(query, filter=filter, limit=limit, admit=admit).hits

    run = retrieve

    def retrieve_with_trace(self, query: str, *, filter: dict | None = None, limit: int | None = None,
                            admit: Any = None) -> RetrievalResult:
        """Run the recipe; return hits and a trace with one entry per step.

        A failing step raises :class:`RetrievalRunError` whose ``trace`` records the failed step.

        Examples
        --------
        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Release planning starts in March.")
        >>> hits, trace = kb.recipe(steps=[crux_nb.retrieve(), crux_nb.expand_relations()]).retrieve_with_trace("release")
        >>> [step.step_id for step in trace.steps], len(hits)
        (['retrieve', 'expand-relations'], 1)
        """
        request = Request.build(query, filter=filter, limit=limit, admit=admit)
        context = self._context(request)
        queries: tuple = (PlannedQuery(request.query, filter=None),)
        hits: tuple = ()
        traces: list[StepTrace] = []
        started = time.perf_counter()
        for step in self.steps:
            step_context = context if step.model is None else _with_model(context, step.model)
            t0 = time.perf_counter()
            try:
                out = step.run(StepInput(queries=queries, hits=hits), step_context)
            except Exception as exc:  # recorded in the trace, then re-raised as a run error
                traces.append(StepTrace(step.id, step.kind, "error", _ms(t0), len(queries), len(hits), 0, 0,
                                        error={"name": type(exc).__name__, "message": getattr(exc, "message", str(exc))}))
                trace = self._trace(request, traces, 0, started)
                code = exc.code if isinstance(exc, RetrievalRunError) else "step_failed"
                message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
                raise RetrievalRunError(message, code=code, trace=trace,
                                        hint=getattr(exc, "hint", None) if isinstance(exc, CruxError) else None) from exc
            new_queries = queries if out.queries is None else tuple(out.queries)
            new_hits = hits if out.hits is None else tuple(out.hits)
            if step.phase[1] == "hits" and out.hits is not None:
                new_queries = queries
            traces.append(StepTrace(step.id, step.kind, "success", _ms(t0), len(queries), len(hits),
                                    len(new_queries) if step.phase[1] == "queries" else 0, len(new_hits),
                                    collapse_warnings(out.warnings), out.knowledge, out.details))
            queries, hits = new_queries, new_hits
        final = HitList(hits if self.steps and self.steps[-1].phase[1] == "hits" else ())
        if request.limit is not None:
            final = HitList(final[: request.limit])
        return RetrievalResult(final, self._trace(request, traces, len(final), started))

    def _context(self, request: Request) -> StepContext:
        members = None if self.view is None else frozenset(self.view.resolve().members)
        communities = self.kb.communities if self.kb.has_communities else None
        if self.view is not None and communities is not None:
            communities = self.view.communities
        return StepContext(recipe_id=self.id, namespace=self.kb.namespace, request=request, state=self.kb.state,
                           knowledge=KnowledgeBinding(self.kb.reader, self.kb.namespace, request.filter, members),
                           model=self.model, communities=communities, concurrency=self.concurrency, members=members,
                           executor=self.executor)

    def plan(self, query: str):
        """The global-search preflight (reports, batches, input characters, calls) without any model call.

        Examples
        --------
        >>> import crux_nb
        >>> from crux_nb.models import OfflineModel
        >>> kb = crux_nb.knowledge_base(id="docs", communities=crux_nb.communities(model=OfflineModel()))
        >>> kb.add_text("a.md", "Ada Park leads the Lumen launch.")
        >>> _ = kb.communities.prepare(progress=False)
        >>> kb.recipe(steps=[crux_nb.global_search(model=OfflineModel(), detail="detailed")]).plan("Lumen").calls
        1
        """
        request = Request.build(query)
        for step in self.steps:
            if step.kind == "global-search":
                return step.plan(self._context(request), request.query)
        raise RetrievalConfigError(f'Recipe "{self.id}" has no global-search step to plan.', code="invalid_step_order")

    _runs = itertools.count(1)

    def _trace(self, request: Request, traces: list[StepTrace], count: int, started: float) -> RecipeTrace:
        warnings = collapse_warnings(w for t in traces for w in t.warnings)
        errors = tuple(t.error for t in traces if t.error)
        return RecipeTrace(id=f"{self.id}#{next(Recipe._runs)}", recipe_id=self.id, fingerprint=self.fingerprint,
                           query=request.query, steps=tuple(traces), result_count=count,
                           duration_ms=_ms(started), warnings=warnings, errors=errors)

    def to_dict(self) -> dict[str, Any]:
        """The recipe as plain data: id, fingerprint, knowledge base id and each step's ``to_dict()``.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.recipe(id="r").to_dict()["steps"][0]["config"]["limit"]
        10
        """
        return {"id": self.id, "fingerprint": self.fingerprint, "kb": self.kb.id,
                "steps": [to_data(s.to_dict()) for s in self.steps]}

    def __repr__(self) -> str:
        return f"Recipe(id={self.id!r}, steps=[{', '.join(repr(s) for s in self.steps)}])"

    def _repr_html_(self) -> str:
        from ..display.html import recipe_html

        return recipe_html(self)


def _with_model(context: StepContext, model: Any) -> StepContext:
    from dataclasses import replace

    return replace(context, model=model)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0
