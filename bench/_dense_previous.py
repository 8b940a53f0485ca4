"""The dense query path as it was before the latency work (commit 06a77bc), for ``bench/dense.py`` to time
against in the same run: the leg's ``einsum`` product widened to float64, the row-by-row request filter,
and ``ranks_of`` with a whole sort of each leg's scores. :func:`previous_retrieve` is the retrieve step
with those two (a :class:`~crux_nb.retrieval.retriever.RetrieveStep` whose ``run`` is a snapshot of the
step's, copied here with the helpers it needs: the benchmark reaches into no crux_nb internals)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from crux_nb.embeddings import chunk_matrix
from crux_nb.hits import EvidenceHit, HitParent, Provenance, Source, SourceScore
from crux_nb.retrieval import DenseLeg, StepOutput
from crux_nb.retrieval.retriever import RetrieveStep

RRF_K = 60
_MISSING = object()


class PreviousDenseLeg(DenseLeg):
    def scores(self, state, query):
        matrix = chunk_matrix(state, self.embedder)
        if not len(matrix):
            return np.zeros(0)
        vector = np.asarray(self.embedder.embed([query]), dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            return np.zeros(len(matrix))
        cosine = np.einsum("ij,j->i", matrix, (vector / norm).astype(np.float32))
        return np.maximum(cosine, 0.0).astype(np.float64)


# ------------------------------------------------------------ the row-by-row request filter
def _is_scalar(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int)):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return type(a) is type(b) and a == b or (
        isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b)


def record_matches(record: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    if not filter:
        return True
    for key, want in filter.items():
        have = record.get(key, _MISSING)
        if have is _MISSING or not _is_scalar(have) or not _same(have, want):
            return False
    return True


def hit_record(namespace: str, source_id: str, chunk_id: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    record = {k: v for k, v in metadata.items() if _is_scalar(v)}
    record.update(namespace=namespace, source_id=source_id, chunk_id=chunk_id)
    return record


def filter_mask(state, namespace, filter):
    cols = state.lookup.columns
    n = len(cols["source_id"])
    if not filter:
        return np.ones(n, dtype=bool)
    return np.fromiter((record_matches(hit_record(namespace, s, c, m), filter)
                        for s, c, m in zip(cols["source_id"], cols["chunk_id"], cols["metadata"])),
                       dtype=bool, count=n)


def members_mask(state, members) -> np.ndarray:
    wanted = set(members)
    return np.fromiter((s in wanted for s in state.lookup.columns["source_id"]), dtype=bool,
                       count=len(state.lookup.columns["source_id"]))


# ------------------------------------------------------------ ranking (whole sort in ranks_of)
def top_order(values: np.ndarray, rows: np.ndarray, top: int | None) -> np.ndarray:
    if top is None or top >= len(rows):
        return rows[np.lexsort((rows, -values))]
    if top <= 0:
        return rows[:0]
    cut = np.partition(values, len(values) - top)[len(values) - top]
    above = values > cut
    tied = np.flatnonzero(values == cut)
    tied = tied[np.argsort(rows[tied], kind="stable")][: top - int(above.sum())]
    keep = np.concatenate([np.flatnonzero(above), tied])
    return rows[keep[np.lexsort((rows[keep], -values[keep]))]]


def ranked(scores: np.ndarray, mask: np.ndarray | None = None, *, top: int | None = None) -> np.ndarray:
    keep = scores > 0
    if mask is not None:
        keep &= mask
    rows = np.flatnonzero(keep)
    return top_order(scores[rows], rows, top)


def fusion_depth(weights: list[float], top: int, *, k: int = RRF_K) -> int:
    return max(top, int(np.ceil(sum(weights) / max(weights) * (k + top))) - k + 1)


def ranks_of(scores, valid, rows):
    values = np.sort(scores[valid])  # ascending
    own = scores[rows]
    above = len(values) - np.searchsorted(values, own, side="right")
    out = above + 1
    ties = np.flatnonzero(np.searchsorted(values, own, side="right") - np.searchsorted(values, own, side="left") > 1)
    if len(ties) > 8:
        order = ranked(scores, valid)
        position = np.zeros(len(scores), dtype=np.int64)
        position[order] = np.arange(1, len(order) + 1)
        return position[rows]
    for i in ties.tolist():
        out[i] += int(np.count_nonzero(valid[: rows[i]] & (scores[: rows[i]] == own[i])))
    out[~valid[rows]] = 0
    return out


def chunk_hit(state: Any, row: int, *, namespace: str, score: float = 0.0) -> EvidenceHit:
    lookup = state.lookup
    col = lookup.columns
    source_id, parent_id = col["source_id"][row], col["parent_id"][row]
    parent = None
    if isinstance(parent_id, str):
        parent = HitParent(parent_id=parent_id, title=lookup.parent_title.get((source_id, parent_id)))
    return EvidenceHit(namespace=namespace, source=Source(id=source_id, path=lookup.document_path.get(source_id)),
                       chunk_id=col["chunk_id"][row], content=col["content"][row], metadata=col["metadata"][row],
                       score=score, parent=parent)


# ------------------------------------------------------------ the step
@dataclass(frozen=True, repr=False)
class PreviousRetrieveStep(RetrieveStep):
    """The retrieve step with the previous filter and rank code (hits, scores and provenance as the step's)."""

    def run(self, input, context):
        state = context.state
        groups = []
        for planned in input.queries:
            merged = {**(context.request.filter or {}), **(planned.filter or {})}
            mask = filter_mask(state, context.namespace, merged)
            if context.members is not None:
                mask &= members_mask(state, context.members)
            for leg in self.legs:
                groups.append((planned, leg, leg.scores(state, planned.query), mask))
        if len(groups) == 1:
            planned, leg, scores, mask = groups[0]
            hits = self.single(planned, leg, ranked(scores, mask, top=self.limit), scores, context)
        else:
            hits = self.fused(groups, context)
        return StepOutput(hits=tuple(hits))

    def single(self, planned, leg, rows, scores, context):
        out = []
        for rank, row in enumerate(rows[: self.limit].tolist(), start=1):
            score = float(scores[row])
            hit = chunk_hit(context.state, row, namespace=context.namespace, score=score)
            prov = Provenance(raw_score=score, per_source=(SourceScore(leg.id, score, rank),),
                              matched_queries=(planned.query,), ranks={leg.id: rank})
            out.append(replace(hit, provenance=prov))
        return out

    def fused(self, groups, context):
        weights = [(planned.weight or 1.0) * float(getattr(leg, "weight", 1.0)) for planned, leg, _, _ in groups]
        depth = fusion_depth(weights, self.limit)
        valids = [(scores > 0) & mask for _, _, scores, mask in groups]
        heads = [top_order(scores[valid], np.flatnonzero(valid), depth) for (_, _, scores, _), valid in zip(groups, valids)]
        candidates = np.unique(np.concatenate(heads)) if heads else np.zeros(0, dtype=np.int64)
        all_ranks = [ranks_of(scores, valid, candidates) for (_, _, scores, _), valid in zip(groups, valids)]
        fused = sum(np.where(r > 0, w / (RRF_K + np.maximum(r, 1)), 0.0) for r, w in zip(all_ranks, weights))
        order = top_order(np.asarray(fused, dtype=float), np.arange(len(candidates)), self.limit)
        out = []
        for i in order.tolist():
            row, score = int(candidates[i]), float(fused[i])
            per_source, ranks, matched = [], {}, []
            for (planned, leg, _, _), leg_ranks, weight in zip(groups, all_ranks, weights):
                rank = int(leg_ranks[i])
                if rank:
                    shown = planned.weight if float(getattr(leg, "weight", 1.0)) == 1.0 else weight
                    per_source.append(SourceScore(leg.id, 1.0 / rank, rank, shown))
                    ranks[leg.id] = rank
                    if planned.query not in matched:
                        matched.append(planned.query)
            hit = chunk_hit(context.state, row, namespace=context.namespace, score=score)
            out.append(replace(hit, provenance=Provenance(per_source=tuple(per_source), matched_queries=tuple(matched),
                                                          ranks=ranks, fused_score=score)))
        return out


def previous_retrieve(*, limit: int = 10, legs: tuple) -> PreviousRetrieveStep:
    """The retrieve step as it was: ``kb.recipe(steps=[previous_retrieve(limit=10, legs=(...,))])``."""
    return PreviousRetrieveStep(limit=limit, legs=legs)
