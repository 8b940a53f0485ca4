"""Adaptive descent: best-first over the community tree, with a fallback and a budget (DESIGN 4.2, 4.10).

The descent rates communities in small batches, best first: an unrated community waits in a queue
ordered by its parent's rating (the root counts as 100), then by a cheap lexical prior (no model call; by default
:func:`finding_prior`, the BM25 score of the report's best finding statement, idf over every statement
of the tree), then by level and id. A community rated at or above ``threshold`` is *visited*: its children join the queue,
and if it is one of the units the detail maps (:func:`~.units.select_detail`: leaves for ``detailed``,
parents and uncovered leaves for ``overview``) it is
*selected* for mapping. When every child of a visited community has been rated and none passed, the
fallback decides (``"best"``: follow the best child anyway, by rating then prior; ``"next-level"``:
GraphRAG's dynamic-selection rule, queue every grandchild; ``"none"``: stop there). If the descent
ends with nothing selected, any fallback but ``"none"`` selects the best-rated (then best-prior)
mappable unit, even past the budget, so an adaptive scan never comes back empty by accident. The
``"budget"`` fallback then fills what is left of the budget by prior, skipping reports with a prior of 0
that no rating passed (nothing of the question in their findings).

``budget`` caps the input characters of the whole adaptive run, rating and mapping together, in
upstream's measure (a rating reads title + summary, a map reads title + summary + findings); the
``max_calls`` ceiling caps rating calls. Rating calls spend at most ``RATING_SHARE`` of the budget (the
rest is kept for mapping). The first call is always made but rates only as many communities as that
share allows, at least one (so a budget smaller than one rating still gets a model-rated choice; the
trace's ``spent_chars`` then exceeds ``budget_chars``). When either stops the descent, every community still queued
is recorded as ``truncated`` and the truncation names the budget. Every rating, decision, prior and
fallback choice is in the :class:`AdaptiveTrace`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Callable

from ...community import Report
from .units import select_detail

THRESHOLD = 50
MAX_CALLS = 32
BUDGET = 0.5
FALLBACKS = ("budget", "best", "next-level", "none")
FALLBACK = "budget"
FOREST = ""  # the virtual parent of a forest's roots
RATING_BATCH = 8  # communities per rating call: small enough to stay best-first, large enough for few calls
RATING_SHARE = 0.3  # rating calls spend at most this share of the budget; the rest is kept for mapping


@dataclass(frozen=True)
class Rating:
    """One community the descent considered: its rating and what the descent did with it."""

    community_id: str
    level: int
    rating: float | None  # None: not rated (a root, cut by a budget, or omitted by the model)
    decision: str  # "visited" | "skipped" | "truncated"
    fallback: bool = False  # chosen by the fallback, not by its rating
    prior: float | None = None  # the lexical prior that ordered it in the queue (0..100)
    selected: bool = False  # mapped


@dataclass(frozen=True)
class AdaptiveTrace:
    """What the adaptive descent rated, visited, skipped and cut, and what it spent."""

    threshold: int | float
    visited: tuple[Rating, ...]
    skipped: tuple[Rating, ...]
    rating_calls: int
    budget_chars: int | None = None
    spent_chars: int = 0
    fallback: str = FALLBACK
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        def row(r: Rating) -> dict[str, Any]:
            return {"community_id": r.community_id, "level": r.level, "rating": r.rating, "decision": r.decision,
                    "fallback": r.fallback, "prior": r.prior, "selected": r.selected}

        return {"threshold": self.threshold, "rating_calls": self.rating_calls, "budget_chars": self.budget_chars,
                "spent_chars": self.spent_chars, "fallback": self.fallback, "truncated": self.truncated,
                "visited": [row(r) for r in self.visited], "skipped": [row(r) for r in self.skipped]}


def budget_chars(budget: float | int | None, units: list[Report]) -> int | None:
    """``None``: no budget; a float in (0, 1]: that share of scan all's map input; an int: characters."""
    if budget is None:
        return None
    if isinstance(budget, float):
        return int(budget * sum(u.chars for u in units))
    return int(budget)


def report_prior(units: list[Report], query: str) -> dict[str, float]:
    """BM25 of ``query`` against each unit's report text (idf over all units), 0..100 (no model call)."""
    from ...models.text import BM25, terms

    docs = [terms(" ".join([u.title, u.summary, *(f.statement for f in u.findings)])) for u in units]
    return dict(zip((u.community_id for u in units), BM25(docs).scaled(terms(query)))) if units else {}


def finding_prior(units: list[Report], query: str) -> dict[str, float]:
    """How a unit's best finding ranks for ``query``: the highest BM25 score, 0..100, of its finding statements
    against the query, idf over every distinct statement of the tree (no model call).

    A report is worth mapping for the findings it holds, not for its text on average: a long report with one
    finding squarely on the question scores low on the whole text (BM25's length normalisation) but high here
    (LazyGraphRAG's order, communities ranked by how their best chunks rank, with findings for chunks)."""
    from ...models.text import BM25, terms

    holders: dict[str, list[str]] = {}
    for u in units:
        for f in u.findings:
            holders.setdefault(f.statement, []).append(u.community_id)
    statements = sorted(holders)
    prior = {u.community_id: 0.0 for u in units}
    if statements:
        for s, score in zip(statements, BM25([terms(s) for s in statements]).scaled(terms(query))):
            for cid in holders[s]:
                prior[cid] = max(prior[cid], score)
    return prior


@dataclass
class _State:
    """The mutable bookkeeping of one descent (kept off the public trace types)."""

    threshold: float
    budget: int | None
    max_calls: int
    fallback: str
    prior: dict[str, float]
    mappable: set[str]
    children: dict[str, list[Report]]
    spent: int = 0
    rating_spent: int = 0
    calls: int = 0
    queue: list[tuple] = field(default_factory=list)
    rows: dict[str, Rating] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    pending: dict[str, int] = field(default_factory=dict)  # parent -> children not yet rated
    passed: set[str] = field(default_factory=set)  # parents with a child that passed
    truncations: list[dict] = field(default_factory=list)
    rating_budget: int | None = None  # the share of the budget rating calls may spend
    call_chars: int | None = None  # what one rating call may carry (the model's context)
    cost: Callable[[list[Report]], int] = lambda batch: sum(u.rating_chars for u in batch)

    def record(self, unit: Report, rating: float | None, decision: str, *, fallback: bool = False,
               selected: bool = False) -> None:
        if unit.community_id not in self.rows:
            self.order.append(unit.community_id)
        self.rows[unit.community_id] = Rating(unit.community_id, unit.level, rating, decision, fallback,
                                              self.prior.get(unit.community_id), selected)

    def push(self, unit: Report, parent_rating: float, *, fallback: bool = False) -> None:
        key = (-parent_rating, -self.prior.get(unit.community_id, 0.0), unit.level, unit.community_id)
        heapq.heappush(self.queue, (*key, fallback, unit))

    def fits(self, chars: int) -> bool:
        return self.budget is None or self.spent + chars <= self.budget


def descend(units: list[Report], rate: Callable[[list[Report], int], dict[str, float]], *, leaves: bool = True,
            mappable: set[str] | None = None, threshold: float = THRESHOLD, budget: int | None = None, max_calls: int = MAX_CALLS,
            fallback: str = FALLBACK, prior: dict[str, float] | None = None,
            rating_cost: Callable[[list[Report]], int] | None = None,
            call_chars: int | None = None) -> tuple[set[str], AdaptiveTrace, list[dict]]:
    """Best-first rated descent (see the module docstring); returns (selected ids, trace, truncations).

    ``rate(batch_units, call_index) -> {community_id: rating}`` makes one model call per batch. With
    ``leaves=False`` the units overview maps are the mappable ones, else the leaves (both as
    :func:`~.units.select_detail` chooses them); ``mappable`` (ids) overrides that. Only mappable units and their
    ancestors are rated.
    ``rating_cost(batch_units)`` measures a rating call against the budget (default: title + summary
    characters; the step passes the call's real input size); ``call_chars`` caps one rating call's
    ``rating_cost`` (the model's context: a call rates fewer than ``RATING_BATCH`` communities, at least one).
    """
    by_parent: dict[str | None, list[Report]] = {}
    for u in units:
        by_parent.setdefault(u.parent_id, []).append(u)
    if mappable is None:  # what the detail maps: one rule, select_detail's
        mappable = {u.community_id for u in select_detail(units, "detailed" if leaves else "overview")}
    wanted = _with_ancestors(units, mappable)  # only a mappable unit or the way to one is worth a rating
    by_parent = {p: [u for u in kids if u.community_id in wanted] for p, kids in by_parent.items()}
    st = _State(threshold, budget, max_calls, fallback, prior or {}, mappable,
                {p: sorted(k, key=lambda u: u.community_id) for p, k in by_parent.items() if p is not None})
    if rating_cost is not None:
        st.cost = rating_cost
    st.call_chars = call_chars
    if budget is not None:
        st.rating_budget = int(RATING_SHARE * budget)
    roots = sorted(by_parent.get(None, []), key=lambda u: u.community_id)
    if len(roots) == 1:  # one root: visited without a rating (its children are the first question)
        _visit(st, roots[0], None, fallback=False)
    else:  # a forest (e.g. an imported GraphRAG index): the roots are rated like children of a virtual root
        st.children[FOREST] = roots
        st.pending[FOREST] = len(roots)
        for r in roots:
            st.push(r, 100.0)
    while st.queue:
        batch = _next_batch(st)
        if not batch:
            break
        ratings = rate([u for u, _ in batch], st.calls)
        st.calls += 1
        cost = st.cost([u for u, _ in batch])
        st.spent += cost
        st.rating_spent += cost
        _apply(st, batch, ratings)
    if st.queue:
        _truncate(st)
    if fallback == "budget":
        _fill(st, units)
    _guard(st, units)
    for cut in st.truncations:  # a queued community the fill or the guard mapped after all was read
        cut["community_ids"] = [c for c in cut["community_ids"] if not st.rows[c].selected]
    visited = tuple(st.rows[c] for c in st.order if st.rows[c].decision == "visited")
    skipped = tuple(st.rows[c] for c in st.order if st.rows[c].decision != "visited")
    trace = AdaptiveTrace(threshold, visited, skipped, st.calls, budget, st.spent, fallback, bool(st.truncations))
    selected = {c for c, r in st.rows.items() if r.selected}
    return selected, trace, st.truncations


def _with_ancestors(units: list[Report], ids: set[str]) -> set[str]:
    parent = {u.community_id: u.parent_id for u in units}
    out: set[str] = set()
    for cid in ids:
        while cid is not None and cid not in out:
            out.add(cid)
            cid = parent.get(cid)
    return out


def _next_batch(st: _State) -> list[tuple[Report, bool]]:
    """Up to ``RATING_BATCH`` queued communities, best first, that the call and character budgets allow."""
    if st.calls >= st.max_calls:
        st.truncations.append({"kind": "adaptive-descent", "reason": f"rating call budget of {st.max_calls} reached",
                               "community_ids": []})
        return []
    batch: list[tuple[Report, bool]] = []
    while st.queue and len(batch) < RATING_BATCH:
        unit = st.queue[0][-1]
        cost = st.cost([u for u, _ in batch] + [unit])
        if batch and st.call_chars is not None and cost > st.call_chars:
            break  # the call is full: the rest waits for the next one
        over = not st.fits(cost) or st.rating_budget is not None and st.rating_spent + cost > st.rating_budget
        if over and (st.calls > 0 or batch):  # the first call always rates one: a descent that rates nothing is
            break                             # not adaptive, and one that rates past its budget is not budgeted
        *_, flag, unit = heapq.heappop(st.queue)
        batch.append((unit, flag))
    if not batch:
        st.truncations.append({"kind": "adaptive-descent", "reason": f"character budget of {st.budget} reached",
                               "community_ids": []})
    return batch


def _apply(st: _State, batch: list[tuple[Report, bool]], ratings: dict[str, float]) -> None:
    """Record a rated batch, visit what passes, then run the fallback for parents left with no passing child."""
    touched = []

    def best(item: tuple[Report, bool]) -> tuple:  # the best-rated first, so they are the first to be mapped
        rating = ratings.get(item[0].community_id)
        return (-(float(rating) if rating is not None else -1.0), -st.prior.get(item[0].community_id, 0.0),
                item[0].community_id)

    for unit, flag in sorted(batch, key=best):
        rating = ratings.get(unit.community_id)
        score = None if rating is None else float(rating)
        parent = FOREST if unit.parent_id is None else unit.parent_id
        st.pending[parent] -= 1
        touched.append(parent)
        if score is not None and score >= st.threshold:
            st.passed.add(parent)
            _visit(st, unit, score, fallback=flag)
        else:  # below the threshold, or the model gave it no rating
            st.record(unit, score, "skipped", fallback=flag)
    for parent in dict.fromkeys(touched):
        if st.pending[parent] == 0 and parent not in st.passed and st.fallback != "none":
            _fall_back(st, parent)


def _visit(st: _State, unit: Report, score: float | None, *, fallback: bool) -> None:
    selected = unit.community_id in st.mappable and st.fits(unit.chars)
    if selected:
        st.spent += unit.chars
    elif unit.community_id in st.mappable:
        st.truncations.append({"kind": "adaptive-map", "reason": f"character budget of {st.budget} reached",
                               "community_ids": [unit.community_id]})
    st.record(unit, score, "visited", fallback=fallback, selected=selected)
    kids = st.children.get(unit.community_id, [])
    st.pending[unit.community_id] = len(kids)
    for kid in kids:
        st.push(kid, 100.0 if score is None else score)


def _fall_back(st: _State, parent: str) -> None:
    """No child of ``parent`` passed: follow the best one (``best``) or queue every grandchild (``next-level``)."""
    kids = [k for k in st.children.get(parent, []) if k.community_id in st.rows]
    if not kids:
        return
    if st.fallback in ("best", "budget"):
        best = min(kids, key=lambda k: (-(st.rows[k.community_id].rating or 0.0),
                                        -st.prior.get(k.community_id, 0.0), k.community_id))
        _visit(st, best, st.rows[best.community_id].rating, fallback=True)
        return
    for kid in kids:  # next-level: GraphRAG queues every report of the next level
        grandkids = st.children.get(kid.community_id, [])
        st.pending[kid.community_id] = len(grandkids)
        for g in grandkids:
            st.push(g, st.rows[kid.community_id].rating or 0.0, fallback=True)


def _fill(st: _State, units: list[Report]) -> None:
    """Fallback ``budget``: spend what is left on mapping, best first: units that passed but were not mapped,
    then the others by prior, then rating (LazyGraphRAG's order: how the community ranks for the query)."""
    def key(u: Report) -> tuple:
        row = st.rows.get(u.community_id)
        rating = row.rating if row is not None and row.rating is not None else -1.0
        return (rating < st.threshold, -st.prior.get(u.community_id, 0.0), -rating, u.level,
                u.community_id)

    for unit in sorted((u for u in units if u.community_id in st.mappable), key=key):
        row = st.rows.get(unit.community_id)
        if row is not None and row.selected or not st.fits(unit.chars):
            continue
        rated = row is not None and row.rating is not None and row.rating >= st.threshold
        if st.prior and st.prior.get(unit.community_id, 0.0) <= 0 and not rated:
            continue  # no evidence of relevance: nothing of the question in its findings, and not rated to pass
        st.spent += unit.chars
        st.record(unit, None if row is None else row.rating, "visited", fallback=True, selected=True)


def _truncate(st: _State) -> None:
    cut = []
    while st.queue:
        unit = heapq.heappop(st.queue)[-1]
        st.record(unit, None, "truncated")
        cut.append(unit.community_id)
    st.truncations[-1]["community_ids"] = cut


def _guard(st: _State, units: list[Report]) -> None:
    """Nothing selected: map the best-rated, then best-prior, mappable unit (never empty by accident), even
    past the budget: one report is the least an answer needs (``spent_chars`` then shows the overrun)."""
    if st.fallback == "none" or any(r.selected for r in st.rows.values()):
        return
    candidates = [u for u in units if u.community_id in st.mappable]
    if not candidates:
        return

    def key(u: Report) -> tuple:
        row = st.rows.get(u.community_id)
        rating = row.rating if row is not None and row.rating is not None else -1.0
        return (-rating, -st.prior.get(u.community_id, 0.0), u.level, u.community_id)

    best = min(candidates, key=key)
    row = st.rows.get(best.community_id)
    st.spent += best.chars
    st.record(best, None if row is None else row.rating, "visited", fallback=True, selected=True)
