"""Global search: adaptive descent, batch packing, map calls and the deterministic reduce."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._hashing import stable_hash
from .gs_units import BATCH_BUDGET, Unit
from .hits import AssertionRef, FindingCitation, FindingHit, Lineage

THRESHOLD = 50
MAX_CALLS = 32
MIN_SCORE = 0.000001


@dataclass(frozen=True)
class Batch:
    index: int
    units: tuple[Unit, ...]
    input_chars: int

    @property
    def community_ids(self) -> tuple[str, ...]:
        return tuple(u.community_id for u in self.units)


@dataclass(frozen=True)
class Rating:
    community_id: str
    level: int
    rating: float | None  # None: not rated (the root, cut by the call budget, or omitted by the model)
    decision: str  # "visited" | "skipped" | "truncated"


@dataclass(frozen=True)
class AdaptiveTrace:
    threshold: int
    visited: tuple[Rating, ...]
    skipped: tuple[Rating, ...]
    rating_calls: int


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


def descend(units: list[Unit], rate: Any, *, max_calls: int, leaves: bool = True) -> tuple[set[str], AdaptiveTrace, list[dict]]:
    """Model-rated descent from the roots: rate children, descend into those rated >= 50.

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
            if score >= THRESHOLD:
                visited.append(Rating(u.community_id, u.level, score, "visited"))
                nxt += by_parent.get(u.community_id, [])
            else:
                skipped.append(Rating(u.community_id, u.level, score, "skipped"))
        frontier = sorted(nxt, key=lambda u: (u.level, u.community_id))
    trace = AdaptiveTrace(THRESHOLD, tuple(visited), tuple(skipped), calls)
    return {r.community_id for r in visited}, trace, truncations


def candidates(output: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for f in output.get("findings", []):
        ids = [str(i) for i in f["finding_ids"]]
        out.append({"statement": f["statement"], "finding_ids": tuple(sorted(ids)), "score": float(f["score"]),
                    "community_id": ids[0].split(":", 1)[0]})
    return out


def reduce(cands: list[dict[str, Any]], units: list[Unit], *, namespace: str, limit: int,
           cited: dict[str, tuple[str, ...]] | None = None) -> list[FindingHit]:
    """Merge by cited id set (max score, ties to the smaller community id), sort, cut, cite.

    ``cited`` (if given) receives each hit's finding target → the unit finding ids it cites."""
    merged: dict[str, dict[str, Any]] = {}
    for c in cands:
        key = "|".join(c["finding_ids"])
        have = merged.get(key)
        if have is None or c["score"] > have["score"] or (c["score"] == have["score"] and c["community_id"] < have["community_id"]):
            merged[key] = c
    ordered = sorted(merged.items(), key=lambda kv: (-kv[1]["score"], kv[1]["community_id"], kv[0]))[:limit]
    findings = {f.id: (f, u) for u in units for f in u.findings}
    hits = []
    for _, c in ordered:
        supports, assertions, lineage = [], [], None
        for fid in c["finding_ids"]:
            if fid not in findings:
                continue
            finding, unit = findings[fid]
            supports += [s for s in finding.supports if s not in supports]
            assertions += [a for a in finding.assertion_refs if a not in assertions]
            lineage = lineage or unit.lineage

        citation = FindingCitation(
            finding_target="finding:" + stable_hash({"statement": c["statement"], "ids": list(c["finding_ids"])}),
            supports=tuple(supports), assertion_refs=tuple(AssertionRef(a) for a in assertions),
            lineage=lineage or Lineage(None, "unknown", c["community_id"]))
        if cited is not None:
            cited[citation.finding_target] = c["finding_ids"]
        hits.append(FindingHit(namespace=namespace, content=c["statement"],
                               score=min(1.0, max(MIN_SCORE, c["score"] / 100)), citation=citation))
    return hits
