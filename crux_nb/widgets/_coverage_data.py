"""What the coverage view shows, read from a global-search run trace (and optionally a knowledge base).

Pure data, no widgets: :func:`coverage_data` finds the ``global_search`` step of a
:class:`~crux_nb.retrieval.RetrievalResult` (or a :class:`~crux_nb.retrieval.RecipeTrace`, or the
plain data of ``trace.to_dict()``) and returns a :class:`CoverageData` that both the widget and the
static HTML use.

Each finding hit is resolved to the report findings it cites. A hit records the union of the
cited findings' supports and a ``finding_target`` hashed from its statement and the cited ids, not
the ids themselves; so the cited ids are found among the findings of the mapped reports whose
supports the hit carries, and checked against the target (``resolution="verified"``). When no
candidate set hashes to the target the closest candidates are shown as ``"inferred"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations
from typing import Any, Iterable

import pandas as pd

from .._hashing import stable_hash
from ..errors import ParameterError
from ..refs import encode_ref, is_ref
from .layout import TreeNode, fmt, tree_layout

__all__ = ["CoverageData", "CoverageFinding", "CitedFinding", "SearchUnit", "BatchInfo", "RatingInfo",
           "CallInfo", "coverage_data", "STATUSES", "FRAME_COLUMNS"]

STEP_KIND = "global-search"
OWNER = "CoverageView()"
# community status in the hierarchy, in legend order
STATUSES = ("mapped", "visited", "skipped", "truncated", "excluded", "unread")
STATUS_LABELS = {"mapped": "mapped", "visited": "visited, not mapped", "skipped": "skipped (rated below threshold)",
                 "truncated": "truncated (rating budget)", "excluded": "excluded (compensation)",
                 "unread": "not read"}
RESOLUTIONS = ("recorded", "verified", "inferred", "unresolved")
FRAME_COLUMNS = {
    "finding": ["rank", "finding_target", "score", "statement", "community_id", "generation", "resolution",
                "cited_findings", "cited_communities", "supports", "n_supports", "assertion_refs"],
    "support": ["rank", "finding_target", "support", "cited_findings", "text"],
    "community": ["community_id", "level", "parent_id", "title", "status", "rating", "decision", "batch",
                  "findings", "chars"],
    "batch": ["batch", "prompt_id", "community_ids", "reports", "findings", "input_chars", "calls", "repaired", "ok"],
}
SEARCH_LIMIT = 4096  # candidate id sets hashed per hit, at most


def _get(value: Any, name: str, default: Any = None) -> Any:
    """An attribute of a record, or a key of its plain-data form."""
    if isinstance(value, Mapping):
        return value.get(name, default)
    return getattr(value, name, default)


def _ref(value: Any) -> str:
    return encode_ref(value) if is_ref(value) else str(value)


def _natural(text: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


@dataclass(frozen=True)
class CitedFinding:
    """One finding of a searched report: ``id`` is ``<community_id>:<finding_id>``; supports are encoded refs."""

    id: str
    community_id: str
    statement: str
    supports: tuple[str, ...]
    assertion_refs: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchUnit:
    """A searched unit: one community report (or, for raw coverage, one chunk)."""

    community_id: str
    generation_id: str
    level: int
    parent_id: str | None
    title: str
    summary: str
    findings: tuple[CitedFinding, ...]

    @property
    def chars(self) -> int:
        """Upstream's measure: title + summary + every finding statement."""
        return len(self.title) + len(self.summary) + sum(len(f.statement) for f in self.findings)


@dataclass(frozen=True)
class BatchInfo:
    index: int  # 0-based; its map call's prompt id counts from 1
    community_ids: tuple[str, ...]
    input_chars: int

    @property
    def prompt_id(self) -> str:
        return f"globalSearch:batch:{self.index + 1}"


@dataclass(frozen=True)
class RatingInfo:
    community_id: str
    level: int
    rating: float | None
    decision: str  # "visited" | "skipped" | "truncated"


@dataclass(frozen=True)
class CallInfo:
    task: str
    prompt_id: str
    input_chars: int
    output_chars: int
    repaired: bool
    ok: bool
    error: str | None = None


@dataclass(frozen=True)
class CoverageFinding:
    """A finding hit with its citation resolved to report findings (``cited``) and chunk refs (``supports``)."""

    rank: int
    target: str
    statement: str
    score: float
    supports: tuple[str, ...]
    assertion_refs: tuple[str, ...]
    community_id: str
    generation: str
    cited: tuple[CitedFinding, ...]
    resolution: str  # see RESOLUTIONS
    hit: Any = field(default=None, compare=False, repr=False)

    @property
    def cited_communities(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.community_id for f in self.cited))


@dataclass(frozen=True)
class CoverageData:
    """The global-search step of one run: coverage, what was read, what was mapped, and the findings."""

    step_id: str
    query: str
    coverage: str
    coverage_basis: str
    generations: tuple[str, ...]
    view: Mapping[str, Any] | None
    scan: str | None
    detail: str | None
    available: Mapping[str, int]
    processed: Mapping[str, int]
    preflight: Mapping[str, Any] | None
    truncations: tuple[Mapping[str, Any], ...]
    calls: tuple[CallInfo, ...] | None  # None: no call log recorded
    units: tuple[SearchUnit, ...]
    batches: tuple[BatchInfo, ...]
    excluded: tuple[str, ...]
    mapped: tuple[str, ...]
    threshold: int | None = None  # adaptive scan only
    ratings: tuple[RatingInfo, ...] = ()
    rating_calls: int | None = None
    findings: tuple[CoverageFinding, ...] = ()
    has_hits: bool = True  # False for a trace without its result's hits
    texts: Mapping[str, str] = field(default_factory=dict)  # encoded chunk ref -> text (kb given)
    kb_given: bool = False
    others: Mapping[str, tuple[str | None, str, int]] = field(default_factory=dict)  # excluded id -> parent, title, level
    warnings: tuple[str, ...] = ()

    # ------------------------------------------------------------------ lookups
    @property
    def adaptive(self) -> bool:
        return self.threshold is not None

    def find(self, target: str | None) -> CoverageFinding | None:
        for f in self.findings:
            if f.target == target:
                return f
        return None

    def unit(self, community_id: str) -> SearchUnit | None:
        return self._by_id.get(community_id)

    @cached_property
    def _by_id(self) -> dict[str, SearchUnit]:
        return {u.community_id: u for u in self.units}

    @cached_property
    def _lookup(self) -> dict[str, Any]:
        ratings: dict[str, RatingInfo] = {}
        for r in self.ratings:
            ratings.setdefault(r.community_id, r)
        batches: dict[str, BatchInfo] = {}
        for b in self.batches:
            for c in b.community_ids:
                batches.setdefault(c, b)
        return {"ratings": ratings, "batches": batches, "mapped": set(self.mapped), "excluded": set(self.excluded)}

    def rating(self, community_id: str) -> RatingInfo | None:
        return self._lookup["ratings"].get(community_id)

    def batch_of(self, community_id: str) -> BatchInfo | None:
        return self._lookup["batches"].get(community_id)

    def title(self, community_id: str) -> str:
        unit = self.unit(community_id)
        if unit is not None:
            return unit.title
        return self.others.get(community_id, (None, "", 0))[1]

    def status(self, community_id: str) -> str:
        """mapped | visited | skipped | truncated | excluded | unread (see ``STATUS_LABELS``)."""
        if community_id in self._lookup["excluded"]:
            return "excluded"
        if community_id in self._lookup["mapped"]:
            return "mapped"
        rating = self.rating(community_id)
        if rating is not None:
            return rating.decision if rating.decision in ("visited", "skipped", "truncated") else "unread"
        return "unread"

    def hierarchy(self) -> tuple[tuple[str, str | None, int], ...]:
        """Every community drawn: ``(community_id, parent_id, level)``; searched units, then excluded reports."""
        rows = [(u.community_id, u.parent_id, u.level) for u in self.units]
        known = {u.community_id for u in self.units}
        for cid in self.excluded:
            if cid not in known:
                parent, _, level = self.others.get(cid, (None, "", self._guess_level(cid)))
                rows.append((cid, parent, level))
        return tuple(rows)

    def _guess_level(self, community_id: str) -> int:
        """An excluded report's level when the knowledge base no longer holds it: one above its children."""
        levels = [u.level for u in self.units if u.parent_id == community_id]
        return max(levels) + 1 if levels else 0

    def call_counts(self) -> dict[str, int]:
        """Calls in the log by task: ``map``/``rate`` first attempts, their repairs, failures, others."""
        counts = dict.fromkeys(("map", "map_repairs", "rate", "rate_repairs", "other", "failed"), 0)
        for c in self.calls or ():
            kind = {"map_findings": "map", "rate": "rate"}.get(c.task, "other")
            if kind != "other" and c.repaired:
                kind += "_repairs"
            counts[kind] += 1
            counts["failed"] += not c.ok
        return counts

    def batch_calls(self, batch: BatchInfo) -> tuple[CallInfo, ...]:
        return tuple(c for c in self.calls or () if c.task == "map_findings" and c.prompt_id == batch.prompt_id)

    # ------------------------------------------------------------------- frames
    def to_frame(self, by: str = "finding") -> pd.DataFrame:
        if by not in FRAME_COLUMNS:
            raise ParameterError("CoverageView.to_frame()", "by", f"one of {list(FRAME_COLUMNS)}", by)
        rows = getattr(self, f"_rows_{by}")()
        frame = pd.DataFrame(rows, columns=FRAME_COLUMNS[by])
        types = {"finding": {"rank": "int64", "score": "float64", "n_supports": "int64"},
                 "support": {"rank": "int64"},
                 "community": {"level": "int64", "rating": "float64", "batch": "Int64", "findings": "int64",
                               "chars": "int64"},
                 "batch": {"batch": "int64", "reports": "int64", "findings": "int64", "input_chars": "int64",
                           "calls": "int64", "repaired": "int64", "ok": "bool"}}[by]
        frame = frame.astype(types)
        for column in FRAME_COLUMNS[by]:
            if column not in types:
                frame[column] = frame[column].astype("str")
        return frame

    def _rows_finding(self) -> list[dict]:
        return [{"rank": f.rank, "finding_target": f.target, "score": f.score, "statement": f.statement,
                 "community_id": f.community_id, "generation": f.generation, "resolution": f.resolution,
                 "cited_findings": " ".join(c.id for c in f.cited),
                 "cited_communities": " ".join(f.cited_communities), "supports": " ".join(f.supports),
                 "n_supports": len(f.supports), "assertion_refs": " ".join(f.assertion_refs)} for f in self.findings]

    def _rows_support(self) -> list[dict]:
        return [{"rank": f.rank, "finding_target": f.target, "support": ref,
                 "cited_findings": " ".join(c.id for c in f.cited if ref in c.supports), "text": self.texts.get(ref)}
                for f in self.findings for ref in f.supports]

    def tree_order(self) -> tuple[str, ...]:
        """Community ids in depth-first drawing order."""
        return tuple(tree_layout(coverage_nodes(self))[1])

    def _rows_community(self) -> list[dict]:
        rows = []
        places = {cid: (parent, level) for cid, parent, level in self.hierarchy()}
        for cid in self.tree_order():
            parent, level = places[cid]
            rating, unit, batch = self.rating(cid), self.unit(cid), self.batch_of(cid)
            rows.append({"community_id": cid, "level": level, "parent_id": parent, "title": self.title(cid),
                         "status": self.status(cid), "rating": None if rating is None else rating.rating,
                         "decision": None if rating is None else rating.decision,
                         "batch": None if batch is None else batch.index + 1,
                         "findings": len(unit.findings) if unit else 0, "chars": unit.chars if unit else 0})
        return rows

    def _rows_batch(self) -> list[dict]:
        rows = []
        for b in self.batches:
            calls = self.batch_calls(b)
            rows.append({"batch": b.index + 1, "prompt_id": b.prompt_id, "community_ids": " ".join(b.community_ids),
                         "reports": len(b.community_ids),
                         "findings": sum(len(u.findings) for c in b.community_ids if (u := self.unit(c))),
                         "input_chars": b.input_chars, "calls": len(calls),
                         "repaired": sum(c.repaired for c in calls), "ok": bool(calls) and calls[-1].ok})
        return rows


# ----------------------------------------------------------------------- reading records
def _finding(value: Any, community_id: str) -> CitedFinding:
    return CitedFinding(id=str(_get(value, "id")), community_id=community_id, statement=str(_get(value, "statement", "")),
                        supports=tuple(_ref(s) for s in _get(value, "supports", ()) or ()),
                        assertion_refs=tuple(map(str, _get(value, "assertion_refs", ()) or ())))


def _unit(value: Any) -> SearchUnit:
    cid = _get(value, "community_id")
    if cid is None:
        raise ParameterError(OWNER, "result", "a result whose global_search() details hold search units", value)
    cid = str(cid)
    parent = _get(value, "parent_id")
    return SearchUnit(community_id=cid, generation_id=str(_get(value, "generation_id", "")),
                      level=int(_get(value, "level", 0)), parent_id=None if parent is None else str(parent),
                      title=str(_get(value, "title", "")), summary=str(_get(value, "summary", "")),
                      findings=tuple(_finding(f, cid) for f in _get(value, "findings", ()) or ()))


def _batch(value: Any) -> BatchInfo:
    units = _get(value, "units", ()) or ()
    return BatchInfo(index=int(_get(value, "index", 0)),
                     community_ids=tuple(str(_get(u, "community_id")) for u in units),
                     input_chars=int(_get(value, "input_chars", 0)))


def _rating(value: Any) -> RatingInfo:
    rating = _get(value, "rating")
    return RatingInfo(str(_get(value, "community_id")), int(_get(value, "level", 0)),
                      None if rating is None else float(rating), str(_get(value, "decision", "")))


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


def _union(findings: Iterable[CitedFinding]) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for f in findings:
        out.update(dict.fromkeys(f.supports))
    return tuple(out)


def resolve_citation(statement: str, target: str, supports: tuple[str, ...], assertion_refs: tuple[str, ...],
                     community_id: str, pool: Iterable[CitedFinding],
                     recorded: Iterable[str] | None = None) -> tuple[tuple[CitedFinding, ...], str]:
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
    candidates = [f for f in pool if set(f.supports) <= wanted and set(f.assertion_refs) <= asserted
                  and (f.supports or f.statement == statement)]
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
    guess = same or [f for f in candidates if f.community_id == community_id and f.supports]
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
    ratings: tuple[RatingInfo, ...] = ()
    threshold = rating_calls = None
    if adaptive is not None:
        threshold, rating_calls = int(_get(adaptive, "threshold", 0)), int(_get(adaptive, "rating_calls", 0))
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
    refs = [r for f in findings for r in (*f.supports, *(s for x in f.cited for s in x.supports))]
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
        rating_calls=rating_calls, findings=tuple(findings), has_hits=has_hits, texts=chunk_texts(kb, refs),
        kb_given=kb is not None, others=_others(kb, excluded, generations),
        warnings=tuple(map(str, _get(step, "warnings", ()) or ())))


def rating_text(value: float | None) -> str:
    return "" if value is None else fmt(value)


def coverage_nodes(data: CoverageData) -> list[TreeNode]:
    nodes = []
    drawn = {c for c, _, _ in data.hierarchy()}
    for cid, parent, level in data.hierarchy():
        status = data.status(cid)
        rating, batch = data.rating(cid), data.batch_of(cid)
        title = data.title(cid)
        tip = [f"{title} ({cid})" if title else cid, f"level {level}", STATUS_LABELS[status]]
        if rating is not None and rating.rating is not None:
            tip.append(f"rating {rating_text(rating.rating)}")
        if batch is not None:
            tip.append(f"batch {batch.index + 1}")
        if parent is not None and parent not in drawn:
            tip.append(f"parent {parent} not drawn")
        nodes.append(TreeNode(cid, parent, level, title or cid, status,
                              rating_text(rating.rating) if rating is not None else "", " · ".join(tip),
                              dashed=status == "excluded"))
    return nodes
