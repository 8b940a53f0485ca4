"""Global search: batch packing (map and rating calls) and the adaptive scan's model-rated descent from the
root (DESIGN 4.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .units import BATCH_BUDGET, Unit

THRESHOLD = 50
MAX_CALLS = 32


@dataclass(frozen=True)
class Batch:
    index: int
    units: tuple[Unit, ...]
    input_chars: int

    @property
    def community_ids(self) -> tuple[str, ...]:
        return tuple(u.community_id for u in self.units)


def pack(units: list[Unit], budget: int | None = None, *, rating: bool = False) -> list[Batch]:
    """Greedy packing in (level, id) order; a unit over the budget gets a batch of its own.

    ``rating`` measures units as rating calls see them (title and summary only)."""
    budget = BATCH_BUDGET if budget is None else budget
    batches: list[Batch] = []
    current: list[Unit] = []
    size = 0
    for unit in sorted(units, key=lambda u: (u.level, u.community_id)):
        chars = unit.rating_chars if rating else unit.chars
        if current and size + chars > budget:
            batches.append(Batch(len(batches), tuple(current), size))
            current, size = [], 0
        current.append(unit)
        size += chars
    if current:
        batches.append(Batch(len(batches), tuple(current), size))
    return batches


@dataclass(frozen=True)
class Rating:
    community_id: str
    level: int
    rating: float | None  # None: not rated (the root, cut by the call budget, or omitted by the model)
    decision: str  # "visited" | "skipped" | "truncated"


@dataclass(frozen=True)
class AdaptiveTrace:
    threshold: float
    visited: tuple[Rating, ...]
    skipped: tuple[Rating, ...]
    rating_calls: int


def descend(units: list[Unit], rate: Any, *, max_calls: int = MAX_CALLS, threshold: float = THRESHOLD,
            leaves: bool = True) -> tuple[set[str], AdaptiveTrace, list[dict]]:
    """Model-rated descent from the roots: rate children, descend into those rated >= ``threshold``.

    ``rate(batch_units) -> {community_id: rating}`` makes one call per batch. With ``leaves=False``
    (overview, which never maps leaves) leaves are not rated. Returns the visited community ids,
    the trace and any truncation (the call budget cut the descent).
    """
    by_parent: dict[str | None, list[Unit]] = {}
    for u in units:
        by_parent.setdefault(u.parent_id, []).append(u)
    if not leaves:
        parents = set(by_parent) - {None}
        by_parent = {p: [u for u in kids if u.community_id in parents] for p, kids in by_parent.items() if p is not None} | {
            None: by_parent.get(None, [])}
    roots = sorted(by_parent.get(None, []), key=lambda u: u.community_id)
    visited = [Rating(r.community_id, r.level, None, "visited") for r in roots]
    skipped: list[Rating] = []
    truncations: list[dict] = []
    frontier = sorted((c for r in roots for c in by_parent.get(r.community_id, [])), key=lambda u: (u.level, u.community_id))
    calls = 0
    while frontier:
        batches = pack(frontier, rating=True)
        ratings: dict[str, float] = {}
        cut_ids: set[str] = set()
        for k, batch in enumerate(batches):
            if calls >= max_calls:
                cut = [u for b in batches[k:] for u in b.units]
                cut_ids = {u.community_id for u in cut}
                skipped += [Rating(u.community_id, u.level, None, "truncated") for u in cut]
                truncations.append({"kind": "adaptive-descent", "reason": f"rating call budget of {max_calls} reached",
                                    "community_ids": [u.community_id for u in cut]})
                break
            ratings.update(rate(list(batch.units), calls))
            calls += 1
        nxt = []
        for u in frontier:
            if u.community_id not in ratings:
                if u.community_id not in cut_ids:  # rated batch, but the model gave it no rating: not descended
                    skipped.append(Rating(u.community_id, u.level, None, "skipped"))
                continue
            score = float(ratings[u.community_id])
            if score >= threshold:
                visited.append(Rating(u.community_id, u.level, score, "visited"))
                nxt += by_parent.get(u.community_id, [])
            else:
                skipped.append(Rating(u.community_id, u.level, score, "skipped"))
        frontier = sorted(nxt, key=lambda u: (u.level, u.community_id))
    trace = AdaptiveTrace(threshold, tuple(visited), tuple(skipped), calls)
    return {r.community_id for r in visited}, trace, truncations
