"""Reading a global-search run into :class:`~crux_nb.widgets._coverage_data.CoverageData`.

:func:`coverage_data` finds the ``global_search`` step of a :class:`~crux_nb.retrieval.RetrievalResult`
(or a :class:`~crux_nb.retrieval.RecipeTrace`, or the plain data of ``trace.to_dict()``); each finding
hit is resolved to the report findings it cites (:func:`resolve_citation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any, Iterable

from .._hashing import stable_hash
from ..errors import ParameterError
from ..community import Finding, Report
from ..retrieval.globalsearch.descent import Batch, Rating
from ..retrieval.trace import knowledge_input_chars
from ._coverage_data import OWNER, SEARCH_LIMIT, STEP_KIND, CallInfo, CoverageData, CoverageFinding, _get, _natural, _ref

__all__ = ["coverage_data", "resolve_citation", "chunk_texts"]


def _finding(value: Any, community_id: str) -> Finding:
    # "supports": the name traces saved before the one report model used for a finding's evidence
    evidence = _get(value, "evidence", None) or _get(value, "supports", ()) or ()
    return Finding(id=str(_get(value, "id")), community_id=community_id, statement=str(_get(value, "statement", "")),
                   evidence=tuple(_ref(s) for s in evidence),
                        assertion_refs=tuple(map(str, _get(value, "assertion_refs", ()) or ())))


def _unit(value: Any) -> Report:
    cid = _get(value, "community_id")
    if cid is None:
        raise ParameterError(OWNER, "result", "a result whose global_search() details hold search units", value)
    cid = str(cid)
    parent = _get(value, "parent_id")
    return Report(community_id=cid, generation_id=str(_get(value, "generation_id", "")),
                  level=int(_get(value, "level", 0)), parent_id=None if parent is None else str(parent),
                  title=str(_get(value, "title", "")), summary=str(_get(value, "summary", "")),
                  findings=tuple(_finding(f, cid) for f in _get(value, "findings", ()) or ()))


def _batch(value: Any) -> Batch:
    return Batch(index=int(_get(value, "index", 0)), units=tuple(_unit(u) for u in _get(value, "units", ()) or ()),
                 input_chars=int(_get(value, "input_chars", 0)))


def _rating(value: Any) -> Rating:
    rating, prior = _get(value, "rating"), _get(value, "prior")
    return Rating(str(_get(value, "community_id")), int(_get(value, "level", 0)),
                  None if rating is None else float(rating), str(_get(value, "decision", "")),
                  bool(_get(value, "fallback", False)), None if prior is None else float(prior),
                  bool(_get(value, "selected", False)))


def _calls(log: Any) -> tuple[CallInfo, ...] | None:
    if log is None:
        return None
    records = getattr(log, "records", None)
    records = list(log) if records is None else records
    calls = [CallInfo(task=str(_get(r, "task", "")), prompt_id=str(_get(r, "prompt_id", "")),
                      input_chars=int(_get(r, "input_chars", 0) or 0), output_chars=int(_get(r, "output_chars", 0) or 0),
                      repaired=bool(_get(r, "repaired", False)), ok=bool(_get(r, "ok", True)), error=_get(r, "error"))
             for r in records]
    # map batches may run concurrently: order by task and prompt, never by arrival
    order = {"rate": 0, "map_findings": 1}
    return tuple(sorted(calls, key=lambda c: (order.get(c.task, 2), c.task, _natural(c.prompt_id), c.repaired)))


# --------------------------------------------------------------------- citation resolution
def _target(statement: str, ids: Iterable[str]) -> str:
    """gs_map.reduce's finding target: a hash of the statement and the sorted cited ids."""
    return "finding:" + stable_hash({"statement": statement, "ids": sorted(ids)})


def _union(findings: Iterable[Finding]) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for f in findings:
        out.update(dict.fromkeys(f.evidence))
    return tuple(out)


def resolve_citation(statement: str, target: str, supports: tuple[str, ...], assertion_refs: tuple[str, ...],
                     community_id: str, pool: Iterable[Finding],
                     recorded: Iterable[str] | None = None) -> tuple[tuple[Finding, ...], str]:
    """The report findings a finding hit cites, and how they were found (see ``RESOLUTIONS``).

    ``pool``: the findings the map calls were shown. ``recorded``: cited ids, when the hit records them.
    """
    pool = sorted(pool, key=lambda f: f.id)
    if recorded is not None:
        by_id = {f.id: f for f in pool}
        ids = sorted(map(str, recorded))
        cited = tuple(by_id[i] for i in ids if i in by_id)
        # the recorded ids are authoritative; they are "verified" when they also reproduce the target
        return cited, "verified" if _target(statement, ids) == target else "recorded"
    wanted, asserted = set(supports), set(assertion_refs)
    candidates = [f for f in pool if set(f.evidence) <= wanted and set(f.assertion_refs) <= asserted
                  and (f.evidence or f.statement == statement)]
    same = [f for f in candidates if f.statement == statement]
    if same and _target(statement, (f.id for f in same)) == target:
        return tuple(same), "verified"
    tried = 0
    for size in range(1, len(candidates) + 1):
        for combo in combinations(candidates, size):
            tried += 1
            if tried > SEARCH_LIMIT:
                break
            # reduce() takes supports in cited-id order and the lineage from the first cited finding
            if combo[0].community_id != community_id or _union(combo) != supports:
                continue
            if _target(statement, (f.id for f in combo)) == target:
                return combo, "verified"
        if tried > SEARCH_LIMIT:
            break
    guess = same or [f for f in candidates if f.community_id == community_id and f.evidence]
    return (tuple(guess), "inferred") if guess else ((), "unresolved")


# ------------------------------------------------------------------------------- reading
def _find_step(trace: Any) -> Any:
    steps = list(_get(trace, "steps", ()) or ())

    def is_search(s: Any) -> bool:
        knowledge = _get(s, "knowledge")
        return _get(s, "kind") == STEP_KIND or _get(knowledge, "contributor") == STEP_KIND

    matches = [s for s in steps if is_search(s)]
    if not matches:
        ran = ", ".join(repr(_get(s, "step_id")) for s in steps) or "none"
        raise ParameterError(
            OWNER, "result", f"a retrieval result whose recipe ran a global_search() step (steps run: {ran})",
            _get(trace, "recipe_id", trace),
            hint="run a recipe with global search, e.g. kb.recipe(steps=[global_search(model=OfflineModel())])"
                 ".retrieve_with_trace(query), and pass its result.")
    found = matches[0]
    if _get(found, "status") != "success":
        message = (_get(found, "error") or {}).get("message", "")
        raise ParameterError(OWNER, "result", "a result whose global_search() step succeeded",
                             f"step {_get(found, 'step_id')!r} failed: {message}",
                             hint="fix the step error shown in result.trace.to_frame() and run the recipe again.")
    if _get(found, "knowledge") is None or not isinstance(_get(found, "details"), Mapping):
        raise ParameterError(OWNER, "result", "a global_search() step trace with its knowledge trace and details",
                             _get(found, "step_id"))
    return found


def _check_kb(kb: Any) -> None:
    if kb is not None and not callable(getattr(getattr(kb, "reader", None), "hydrate", None)):
        raise ParameterError(OWNER, "kb", "a KnowledgeBase (whose reader hydrates chunk refs) or None", kb,
                             hint="pass the knowledge base the recipe ran on, e.g. CoverageView(result, kb=kb).")


def chunk_texts(kb: Any, refs: Iterable[str]) -> dict[str, str]:
    """Encoded chunk ref -> text, through ``kb.reader.hydrate`` (refs the kb no longer holds are left out)."""
    if kb is None:
        return {}
    reader = kb.reader
    out: dict[str, str] = {}
    for ref in dict.fromkeys(refs):
        try:
            hit = reader.hydrate(ref)
        except Exception:  # a ref of a kind the reader does not hydrate, or not a valid encoding
            hit = None
        if hit is not None:
            out[ref] = hit.content
    return out


def _others(kb: Any, excluded: tuple[str, ...], generations: tuple[str, ...]) -> dict[str, tuple[str | None, str, int]]:
    """Parent, title and level of excluded reports, from the kb's stored generations when it still holds them."""
    if kb is None or not excluded:
        return {}
    reports = kb.state.reports
    rows = reports[reports["community_id"].isin(excluded) & reports["generation_id"].isin(generations)]
    out = {}
    for row in rows.sort_values(["community_id", "scope"]).itertuples(index=False):
        parent = row.parent_id if isinstance(row.parent_id, str) else None
        out.setdefault(row.community_id, (parent, str(row.title), int(row.level)))
    return out


def coverage_data(result: Any, *, kb: Any = None) -> CoverageData:
    """Read the global-search step of ``result`` (a RetrievalResult, a RecipeTrace or ``trace.to_dict()``).

    ``kb`` (optional) adds the text of every cited chunk and the place of excluded reports.

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
    >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
    >>> data = coverage_data(result, kb=kb)
    >>> data.step_id, data.query, [f.statement for f in data.findings]
    ('global-search', 'What does the Platform team do?', ['Priya Raman leads the Platform team.', 'The Platform team runs Atlas.'])
    >>> coverage_data(result.trace).has_hits, len(coverage_data(result.trace.to_dict()).units)  # a trace: no hits
    (False, 3)
    """
    from ..hits import FindingHit
    from ..retrieval.results import RetrievalResult
    from ..retrieval.trace import RecipeTrace

    if isinstance(result, RetrievalResult):
        trace, hits, has_hits = result.trace, [h for h in result.hits if isinstance(h, FindingHit)], True
    elif isinstance(result, RecipeTrace) or (isinstance(result, Mapping) and "steps" in result):
        trace, hits, has_hits = result, [], False
    else:
        raise ParameterError(OWNER, "result",
                             "a RetrievalResult (from recipe.retrieve_with_trace()) or a RecipeTrace", result,
                             hint="call recipe.retrieve_with_trace(query), not recipe.retrieve(query).")
    _check_kb(kb)
    step = _find_step(trace)
    k, details = _get(step, "knowledge"), _get(step, "details")
    units = tuple(_unit(u) for u in details.get("units", ()) or ())
    batches = tuple(_batch(b) for b in details.get("batches", ()) or ())
    generations = tuple(map(str, _get(k, "generations", ()) or ()))
    adaptive = _get(k, "adaptive")
    ratings: tuple[Rating, ...] = ()
    threshold = rating_calls = budget = spent = fallback = None
    if adaptive is not None:
        threshold, rating_calls = _get(adaptive, "threshold", 0), int(_get(adaptive, "rating_calls", 0))
        budget, spent, fallback = _get(adaptive, "budget_chars"), _get(adaptive, "spent_chars"), _get(adaptive, "fallback")
        ratings = tuple(_rating(r) for r in (*(_get(adaptive, "visited", ()) or ()), *(_get(adaptive, "skipped", ()) or ())))
    excluded = tuple(map(str, details.get("excluded", ()) or ()))
    cited_ids = dict(details.get("cited", {}) or {})  # finding target -> the unit finding ids it cites

    # the map calls saw the batched units' findings (all units when batches are not recorded)
    batched = {c for b in batches for c in b.community_ids}
    pool = [f for u in units if not batches or u.community_id in batched for f in u.findings]
    findings = []
    for rank, hit in enumerate(hits, start=1):
        c = hit.citation
        supports = tuple(_ref(s) for s in c.supports)
        assertions = tuple(str(_get(a, "assertion_id", a)) for a in c.assertion_refs)
        lineage = c.lineage
        cited, how = resolve_citation(hit.content, c.finding_target, supports, assertions,
                                      lineage.report_community_id, pool,
                                      tuple(cited_ids.get(c.finding_target, ())) or None)
        findings.append(CoverageFinding(rank=rank, target=c.finding_target, statement=hit.content,
                                        score=float(hit.score), supports=supports, assertion_refs=assertions,
                                        community_id=lineage.report_community_id,
                                        generation=lineage.community_generation, cited=cited, resolution=how, hit=hit))
    refs = [r for f in findings for r in (*f.supports, *(s for x in f.cited for s in x.evidence))]
    view = _get(k, "view")
    preflight = _get(k, "preflight")
    return CoverageData(
        step_id=str(_get(step, "step_id")), query=str(_get(trace, "query", "")), coverage=str(_get(k, "coverage", "")),
        coverage_basis=str(_get(k, "coverage_basis", "")), generations=generations,
        view=None if view is None else dict(view), scan=_get(k, "scan"), detail=_get(k, "detail"),
        available=dict(_get(k, "available", {}) or {}), processed=dict(_get(k, "processed", {}) or {}),
        preflight=None if preflight is None else dict(preflight),
        truncations=tuple(dict(t) if isinstance(t, Mapping) else {"kind": str(t)} for t in _get(k, "truncations", ()) or ()),
        calls=_calls(_get(k, "calls")), units=units, batches=batches, excluded=excluded,
        mapped=tuple(map(str, details.get("selected", ()) or ())), threshold=threshold, ratings=ratings,
        rating_calls=rating_calls, budget_chars=budget, spent_chars=spent,
        input_chars=knowledge_input_chars(k), fallback=fallback, findings=tuple(findings), has_hits=has_hits, texts=chunk_texts(kb, refs),
        kb_given=kb is not None, others=_others(kb, excluded, generations),
        warnings=tuple(map(str, _get(step, "warnings", ()) or ())),
        support=None if _get(k, "support") is None else dict(_get(k, "support")))
