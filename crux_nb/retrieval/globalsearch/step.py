"""``global_search``: map–reduce over community reports (upstream section 4, with DESIGN 4.2, 4.4, 4.8).

Run order: reject request filters; resolve freshness (exact, compensated,
raw-fallback, materialization-wait); resolve detail; select units (all, or a
model-rated adaptive descent); pack batches under the model's budget (24,000 characters at most, fewer for
a chat model whose context window holds less, or ``batch_chars``); preflight
and admission (the 32-call ceiling or the request's ``admit`` hook); one map
call per batch with one repair, every unit carrying the corpus' statistics of the
query's terms (``support``); a deterministic reduce to finding hits; the support
status of the best finding (a warning when the corpus may not answer).
"""

from __future__ import annotations

import warnings as _warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from ...errors import ParameterError, RetrievalRunError
from ..._hashing import canonical_json
from ...validation import MODEL_TASKS, check_choice, check_int, check_name, check_number
from ..base import Step, changed
from ..trace import KnowledgeTrace
from ..types import StepContext, StepInput, StepOutput
from .descent import (BUDGET, FALLBACK, FALLBACKS, MAX_CALLS, THRESHOLD, AdaptiveTrace, Batch, budget_chars, descend,
                      finding_prior, pack, prompt_id, report_prior)
from .mapreduce import candidates, reduce
from .support import MIN_SUPPORT, absent_terms, corpus_statistics, support, support_warning
from ...community import Report
from .units import Freshness, auto_detail, resolve, select_detail

__all__ = ["GlobalSearchStep", "global_search", "Preflight"]

PRIOR = "findings"
PRIORS = ("findings", "reports", "none")

NEEDS_COMMUNITIES = ("global_search() requires connected knowledge communities. Configure "
                     "crux_nb.knowledge_base(..., communities=crux_nb.communities(model=...)) and run it through "
                     "kb.recipe(...) or view.recipe(...).")


@dataclass(frozen=True)
class Preflight:
    """The cost of a run before any map call: reports, batches, input characters, calls.

    >>> import crux_nb
    >>> kb = crux_nb.datasets.load_tiny(communities=True)
    >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="detailed")
    >>> plan = kb.recipe(steps=[search]).plan("Who runs Atlas?")
    >>> plan.reports, plan.calls, plan.coverage
    (2, 1, 'exact')
    """

    reports: int
    batches: int
    input_chars: int
    calls: int
    coverage: str = ""
    detail: str = ""
    scan: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The plain-data form recorded in ``KnowledgeTrace.preflight`` (the counts, no labels).

        >>> Preflight(reports=2, batches=1, input_chars=270, calls=1, coverage="exact").to_dict()
        {'kind': 'global-search', 'reports': 2, 'batches': 1, 'input_chars': 270, 'calls': 1}
        """
        return {"kind": "global-search", "reports": self.reports, "batches": self.batches,
                "input_chars": self.input_chars, "calls": self.calls}


@dataclass(frozen=True)
class Selection:
    freshness: Freshness
    detail: str
    available: tuple[Report, ...]
    selected: tuple[Report, ...]
    batches: tuple[Batch, ...]
    adaptive: AdaptiveTrace | None
    truncations: tuple[dict, ...]


@dataclass(frozen=True, repr=False)
class GlobalSearchStep(Step):
    model: Any = None
    scan: Literal["all", "adaptive"] = "all"
    detail: Literal["auto", "overview", "detailed"] = "auto"
    limit: int = 20
    threshold: float = THRESHOLD
    max_calls: int = MAX_CALLS
    budget: float | int | None = BUDGET
    fallback: str = FALLBACK
    prior: str = PRIOR
    min_support: float = MIN_SUPPORT
    id: str = "global-search"
    batch_chars: int | None = None
    kind: str = "global-search"
    phase: tuple[str, str] = ("queries", "hits")
    needs_model: bool = True
    factory = "global_search"
    #: parameters beyond the core four, with their defaults; repr and to_dict() show them when changed
    DEFAULTS = {"threshold": THRESHOLD, "max_calls": MAX_CALLS, "budget": BUDGET, "fallback": FALLBACK,
                "prior": PRIOR, "min_support": MIN_SUPPORT, "id": "global-search", "batch_chars": None}

    def __post_init__(self) -> None:
        owner = "global_search()"
        if self.model is None or not all(callable(getattr(self.model, m, None)) for m in MODEL_TASKS):
            raise ParameterError(owner, "model", "a knowledge model (e.g. crux_nb.models.OfflineModel())", self.model)
        if not isinstance(self.scan, str) or self.scan not in ("all", "adaptive"):
            raise ParameterError(owner, "scan", "'all' or 'adaptive'", self.scan)
        if not isinstance(self.detail, str) or self.detail not in ("auto", "overview", "detailed"):
            raise ParameterError(owner, "detail", "'auto', 'overview' or 'detailed'", self.detail)
        object.__setattr__(self, "limit", check_int(owner, "limit", self.limit, minimum=1))
        check_number(owner, "threshold", self.threshold, minimum=0, maximum=100)
        check_number(owner, "min_support", self.min_support, minimum=0, maximum=1)
        object.__setattr__(self, "max_calls", check_int(owner, "max_calls", self.max_calls, minimum=0))
        check_name(owner, "id", self.id)
        b = self.budget
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float)) or b <= 0
                              or isinstance(b, float) and b > 1):
            raise ParameterError(owner, "budget", "None, a share of scan all's input in (0, 1] (float) or characters "
                                 "(int >= 1)", b)
        check_choice(owner, "fallback", self.fallback, FALLBACKS)
        check_choice(owner, "prior", self.prior, PRIORS)
        if self.batch_chars is not None:
            object.__setattr__(self, "batch_chars", check_int(owner, "batch_chars", self.batch_chars, minimum=1))

    def call_chars(self, task: str) -> int | None:
        """Input characters one ``task`` call may carry: ``batch_chars`` when given, else the model's budget
        (a chat model's follows its context window), else None (upstream's 24,000-character packing)."""
        from ...models.budget import input_budget

        return self.batch_chars if self.batch_chars is not None else input_budget(self.model, task, None)

    def config(self) -> dict[str, Any]:
        return {"model": self.model.name, "scan": self.scan, "detail": self.detail, "limit": self.limit,
                **changed(self, self.DEFAULTS)}

    # ----------------------------------------------------------------- plan
    def select(self, context: StepContext, query: str, *, wait: bool, rate: Any = None) -> Selection:
        surface = context.communities
        freshness = resolve(surface, wait=wait)
        detail = self.detail
        if detail == "auto":
            detail = auto_detail(query=query, generations=freshness.generations,
                                 strategy=surface.config.strategy_fingerprint, model_fingerprint=self.model.fingerprint,
                                 scan=self.scan, limit=self.limit)
        available = select_detail(list(freshness.units), detail)
        adaptive, truncations = None, ()
        if self.scan == "adaptive" and rate is not None:
            units = list(freshness.units)
            chosen, adaptive, cut = descend(
                units, rate, mappable={u.community_id for u in available}, threshold=self.threshold, max_calls=self.max_calls,
                budget=budget_chars(self.budget, available), fallback=self.fallback,
                prior=_prior(self.prior, units, query),
                rating_cost=lambda batch: len(canonical_json([query, [u.rating_payload() for u in batch]])),
                call_chars=self.call_chars("rate"))
            selected = [u for u in available if u.community_id in chosen]
            truncations = tuple(cut)
        else:
            selected = available
        budget = self.call_chars("map_findings")
        batches = pack(selected) if budget is None else pack(selected, budget, size=_payload_chars)
        return Selection(freshness, detail, tuple(available), tuple(selected), tuple(batches), adaptive, truncations)

    def plan(self, context: StepContext, query: str) -> Preflight:
        """The preflight without any model call (adaptive: the scan-all upper bound)."""
        _check_binding(context)
        sel = self.select(context, query, wait=False)
        note = "adaptive: upper bound (scan all); rating calls not included" if self.scan == "adaptive" else ""
        if sel.freshness.coverage == "materialization-wait":
            note = "communities are not ready and current evidence exceeds one batch: call kb.communities.prepare()"
        return Preflight(len(sel.selected), len(sel.batches), sum(b.input_chars for b in sel.batches), len(sel.batches),
                         sel.freshness.coverage, sel.detail, self.scan, note)

    # ------------------------------------------------------------------ run
    def run(self, input: StepInput, context: StepContext) -> StepOutput:
        from ...models import CallLog, call_task

        _check_binding(context)
        if context.request.filter is not None:
            raise RetrievalRunError("global_search() does not accept request filters. Create a typed knowledge view "
                                    "and call view.recipe(...) instead.", code="filter_rejected",
                                    hint="kb.view(id=..., where={...}).recipe(steps=[global_search(...)])")
        query = "\n".join(q.query for q in input.queries)
        log = CallLog()

        def rate(units: list[Report], k: int) -> dict[str, float]:
            out = call_task(self.model, "rate", query, [u.rating_payload() for u in units],
                            prompt_id=prompt_id("rate", k), log=log)
            return {r["community_id"]: r["rating"] for r in out["ratings"]}

        sel = self.select(context, query, wait=True, rate=rate)
        preflight = Preflight(len(sel.selected), len(sel.batches), sum(b.input_chars for b in sel.batches),
                              len(sel.batches), sel.freshness.coverage, sel.detail, self.scan)
        _admit(context, preflight, self.max_calls)
        corpus = corpus_statistics(context.state, context.communities.visible_sources(context.state), query)
        outputs = self._map(query, sel.batches, corpus, log, context.concurrency, context.executor)
        cands = [c for out in outputs for c in candidates(out)]
        cited: dict[str, tuple[str, ...]] = {}
        hits = reduce(cands, list(sel.freshness.units), namespace=context.namespace, limit=self.limit, cited=cited)
        status = support(hits[0].score if hits else None, self.min_support, absent_terms(query, corpus))
        trace = KnowledgeTrace(
            contributor="global-search", coverage=sel.freshness.coverage, coverage_basis=sel.freshness.basis,
            generations=sel.freshness.generations, view=_view(context), scan=self.scan, detail=sel.detail,
            available={"reports": len(sel.available), "findings": sum(len(u.findings) for u in sel.available)},
            processed={"reports": len(sel.selected), "findings": sum(len(u.findings) for u in sel.selected)},
            adaptive=sel.adaptive, preflight=preflight.to_dict(), truncations=sel.truncations, calls=log,
            support=status)
        details = {"units": sel.freshness.units, "batches": sel.batches, "excluded": sel.freshness.excluded,
                   "selected": tuple(u.community_id for u in sel.selected), "cited": cited}
        warnings: tuple[str, ...] = ()
        if self.scan == "adaptive" and sel.available and not sel.selected:
            warnings = (f"global_search adaptive scan selected none of {len(sel.available)} {sel.detail} reports "
                        f"(fallback={self.fallback!r}, budget={self.budget!r}).",)
        weak = support_warning(status)
        if weak is not None:  # kb.recipe().retrieve() returns hits only: say it out loud too
            warnings += (weak,)
            _warnings.warn(weak, UserWarning, stacklevel=2)
        return StepOutput(hits=tuple(hits), knowledge=trace, details=details, warnings=warnings)

    def _map(self, query: str, batches: tuple[Batch, ...], corpus: dict, log: Any, concurrency: int,
             executor: Any) -> list[dict]:
        from ...models.remote import run_calls

        # every unit carries the same corpus statistics (data, not a protocol change): a model may weigh the
        # query's terms by them, and a finding's score cannot depend on its batch
        calls = [(self.model, "map_findings", (query, [{**u.payload(), "corpus": corpus} for u in b.units]),
                  {"prompt_id": b.prompt_id,
                   "issued_ids": frozenset(f.id for u in b.units for f in u.findings)}) for b in batches]
        bar = _bar(len(batches))
        try:
            if executor is not None or len(batches) < 2 or concurrency < 2:  # e.g. a dask.distributed.Client
                return run_calls(calls, log=log, executor=executor, on_result=lambda: bar.update(1))
            with ThreadPoolExecutor(min(concurrency, len(batches))) as pool:  # outputs in batch order, whatever
                return run_calls(calls, log=log, executor=pool, on_result=lambda: bar.update(1))  # finishes first
        finally:
            bar.close()


def _bar(total: int):
    """Counts and time left over the map calls (from 10 calls, as extraction and report writing)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="mapping reports", unit="call", disable=total < 10)


def _payload_chars(unit: Report) -> int:
    """A unit as a map call reads it: its payload's JSON (ids and keys included), plus its place in the list."""
    from ...models.budget import ITEM_CHARS

    return len(canonical_json(unit.payload())) + ITEM_CHARS

def _prior(name: str, units: list[Report], query: str) -> dict[str, float]:
    if name == "findings":
        return finding_prior(units, query)
    return report_prior(units, query) if name == "reports" else {}


def _check_binding(context: StepContext) -> None:
    if context.communities is None:
        raise RetrievalRunError(NEEDS_COMMUNITIES, code="missing_communities")


def _view(context: StepContext) -> dict | None:
    view = getattr(context.communities, "view", (None, None))
    return None if view[0] is None else {"id": view[0], "view_revision": view[1]}


def _admit(context: StepContext, preflight: Preflight, max_calls: int) -> None:
    admit = context.request.admit
    if admit is not None:
        if admit(preflight.to_dict()) is False:
            raise RetrievalRunError("global_search() was rejected by the request admission hook before map calls.",
                                    code="admission_rejected")
        return
    if preflight.calls > max_calls:
        raise RetrievalRunError(
            f"global_search() estimated {preflight.calls} map calls for {preflight.reports} reports, above the "
            f"{max_calls} call ceiling. Remedies: use detail='overview', use scan='adaptive', or search a narrower view.",
            code="call_ceiling", hint="or pass admit=lambda estimate: True to accept the cost.")


def global_search(*, model: Any, scan: Literal["all", "adaptive"] = "all",
                  detail: Literal["auto", "overview", "detailed"] = "auto", limit: int = 20,
                  threshold: float = THRESHOLD, max_calls: int = MAX_CALLS, budget: float | int | None = BUDGET,
                  fallback: str = FALLBACK, prior: str = PRIOR, min_support: float = MIN_SUPPORT,
                  id: str = "global-search", batch_chars: int | None = None) -> GlobalSearchStep:
    """Map community reports to finding hits for a question about the whole corpus (or a view).

    Parameters
    ----------
    model : KnowledgeModel
        Rates communities (adaptive scan) and maps report batches to findings.
    scan : {"all", "adaptive"}
        Map every report of the chosen detail, or run the best-first rated descent.
    detail : {"auto", "overview", "detailed"}
        Parent reports and the leaves no report one level up covers (see :func:`~.units.select_detail`),
        leaf reports, or a choice from the query and the hierarchy.
    limit : int
        Finding hits returned.
    threshold : float
        Adaptive: the rating (0-100) a community needs to be visited (50, upstream's value).
    max_calls : int
        Ceiling on map calls before a run needs ``admit=``, and on rating calls of one descent (32).
    budget : float, int or None
        Adaptive: input characters the run may spend on rating and mapping together; a float in (0, 1] is
        a share of scan all's map input, an int is characters, ``None`` is no budget (default 0.5). Rating
        calls spend at most 0.3 of it. Reaching it stops the descent with a truncation in the trace.
    fallback : {"budget", "best", "next-level", "none"}
        Adaptive: what happens when no child of a visited community passes. ``"best"`` follows the best
        child anyway; ``"next-level"`` is GraphRAG's rule (rate every grandchild); ``"budget"`` (default)
        does what ``"best"`` does, then spends what is left of the budget mapping the best remaining
        reports (passed first, then by prior; a report with a prior of 0 that no rating passed is not
        filled in). Every fallback choice is marked in the trace; any fallback but ``"none"`` maps at
        least one report, even past the budget.
    prior : {"findings", "reports", "none"}
        Adaptive: the cheap order among unrated communities (no model call): ``"findings"`` (default), the
        BM25 score of the report's best finding statement against the query; ``"reports"``, BM25 of the
        query against the whole report; ``"none"`` (level, then id).
    min_support : float
        The best finding score (0..1) a search needs for its support to be ``"strong"``; below it (or with no
        finding) ``KnowledgeTrace.support`` says ``"weak"`` (``"none"``), names the query terms no chunk
        holds, and the step warns that the corpus may not answer the question (default 0.25).
    id : str
        The step id in traces (default ``"global-search"``).
    batch_chars : int, optional
        Input characters per map call and per rating call (each report as the call reads it: its JSON).
        Default: the model's budget (a ``ChatModel``'s follows the server's context window and
        ``max_tokens``, at most 24,000), or upstream's 24,000 characters of report text for a model that
        declares none (the offline model). Set it when you know better than the estimate.

    Examples
    --------
    >>> from crux_nb.models import OfflineModel
    >>> global_search(model=OfflineModel(), scan="adaptive", limit=12)
    global_search(model='offline', scan='adaptive', detail='auto', limit=12)
    >>> global_search(model=OfflineModel(), scan="adaptive", budget=0.3, fallback="next-level")
    global_search(model='offline', scan='adaptive', detail='auto', limit=20, budget=0.3, fallback='next-level')
    >>> global_search(model=OfflineModel(), scan="adaptive", threshold=60).to_dict()["config"]["threshold"]
    60
    """
    return GlobalSearchStep(model=model, scan=scan, detail=detail, limit=limit, threshold=threshold,
                            max_calls=max_calls, budget=budget, fallback=fallback, prior=prior,
                            min_support=min_support, id=id, batch_chars=batch_chars)
