"""The ``retrieve`` producer step: BM25 (and any other legs) over chunks, fused by reciprocal rank."""

from __future__ import annotations

import warnings as _warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import ParameterError
from ...graph.hydrate import chunk_hit
from ...hits import Provenance, SourceScore
from ...validation import check_int, check_name
from ..base import Step, changed
from ..filters import filter_mask, members_mask, unknown_field_warnings
from ..types import CHUNK_RANKING, CHUNK_RELEVANCE, QUERY_VECTOR, StepContext, StepInput, StepOutput
from .lexical import RRF_K, BM25Leg, Leg, fusion_depth, ranked, ranks_of, rrf, top_order

__all__ = ["RetrieveStep", "retrieve", "HEAD_SLACK"]

#: rows ranked past the limit and kept for a later step (``CHUNK_RANKING``: expand_relations' default limit is 20):
#: the partial sort costs the same
HEAD_SLACK = 50


@dataclass(frozen=True, repr=False)
class RetrieveStep(Step):
    """The ``retrieve`` producer: lexical (BM25) retrieval over chunks, fused with extra legs by RRF."""

    limit: int = 10
    legs: tuple[Leg, ...] = field(default_factory=lambda: (BM25Leg(),))
    id: str = "retrieve"
    kind: str = "retrieve"
    phase: tuple[str, str] = ("queries", "hits")
    factory = "retrieve"

    def __post_init__(self) -> None:
        object.__setattr__(self, "limit", check_int("retrieve()", "limit", self.limit, minimum=1))
        check_name("retrieve()", "id", self.id)
        legs = tuple(self.legs) if hasattr(self.legs, "__iter__") and not isinstance(self.legs, (str, bytes)) else ()
        if not legs or not all(isinstance(leg, Leg) for leg in legs):
            raise ParameterError("retrieve()", "legs", "a non-empty sequence of retrieval legs (id + scores())", self.legs)
        if len({leg.id for leg in legs}) != len(legs):
            raise ParameterError("retrieve()", "legs", "legs with distinct ids", [leg.id for leg in legs])
        object.__setattr__(self, "legs", legs)

    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"limit": self.limit}
        if [leg.id for leg in self.legs] != ["bm25"]:
            config["legs"] = [leg.id for leg in self.legs]
        return {**config, **changed(self, {"id": "retrieve"})}

    def run(self, input: StepInput, context: StepContext) -> StepOutput:
        state = context.state
        groups, warnings = [], []
        for planned in input.queries:
            merged = {**(context.request.filter or {}), **(planned.filter or {})}
            warnings += unknown_field_warnings(state, merged)
            mask = filter_mask(state, context.namespace, merged)
            if context.members is not None:
                mask &= members_mask(state, context.members)
            for leg in self.legs:
                explain = getattr(leg, "query_warning", None)  # a query no term of which can match (BM25Leg)
                message = explain(state, planned.query) if callable(explain) else None
                if message:
                    warnings.append(message)
                scores = leg.scores(state, planned.query)
                groups.append((planned, leg, scores, mask))
        n = len(state.chunks)
        if len(groups) == 1:  # one ranking: only its head is needed (a little deeper than the hits, for a later step)
            planned, leg, scores, mask = groups[0]
            head = ranked(scores, mask, top=self.limit + HEAD_SLACK)
            hits = self._single((planned, leg, head[:self.limit], scores), context)
            deeper = lambda top: head[:top] if top <= len(head) or len(head) < self.limit + HEAD_SLACK else \
                ranked(scores, mask, top=top)  # noqa: E731
        else:
            hits = self._fused(groups, context)
            deeper = lambda top: ranked(_relevance(groups, n), None, top=top)  # noqa: E731
        if isinstance(context.extras, dict):
            # computed only if a later step asks (expand_relations): the multi-leg case ranks every leg in full,
            # which a plain retrieve never needs
            context.extras[CHUNK_RELEVANCE] = lambda: _relevance(groups, n)
            context.extras[CHUNK_RANKING] = deeper
            dense = next((leg for leg in self.legs if callable(getattr(leg, "query_unit", None))), None)
            if dense is not None:  # the request's own query, as expand_relations' name matching uses
                query = context.request.query
                context.extras[QUERY_VECTOR] = lambda: (dense.embedder, dense.query_unit(query))
        for message in dict.fromkeys(warnings):  # kb.recipe().retrieve() returns hits only: say it out loud too
            _warnings.warn(message, UserWarning, stacklevel=2)
        return StepOutput(hits=tuple(hits), warnings=tuple(warnings))

    def _single(self, group, context: StepContext):
        planned, leg, rows, scores = group
        out = []
        for rank, row in enumerate(rows[: self.limit].tolist(), start=1):
            score = float(scores[row])
            prov = Provenance(raw_score=score, per_source=(SourceScore(leg.id, score, rank),),
                              matched_queries=(planned.query,), ranks={leg.id: rank})
            out.append(chunk_hit(context.state, row, namespace=context.namespace, score=score, provenance=prov))
        return out

    def _fused(self, groups, context: StepContext):
        # a leg's own weight (DenseLeg(weight=...)) scales its RRF term, as a planned query's weight does
        weights = [(planned.weight or 1.0) * float(getattr(leg, "weight", 1.0)) for planned, leg, _, _ in groups]
        # only the head of each ranking can reach the fused top (fusion_depth); the candidates' exact
        # ranks in every ranking then give their exact fused scores without sorting whole rankings
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
            prov = Provenance(per_source=tuple(per_source), matched_queries=tuple(matched), ranks=ranks,
                              fused_score=score)
            out.append(chunk_hit(context.state, row, namespace=context.namespace, score=score, provenance=prov))
        return out


def _relevance(groups, n: int) -> np.ndarray:
    """The query's relevance per chunk row, scaled so the best visible chunk is 1: the leg's scores for one
    leg, the fused reciprocal-rank scores for several (what ranked the hits, reused by ``expand_relations``)."""
    if len(groups) == 1:
        _, _, scores, mask = groups[0]
        values = np.where((scores > 0) & mask, scores, 0.0)  # every visible chunk the leg scored
    else:
        # the same weights as the fused ranking: a planned query's weight times its leg's own
        rows, fused = rrf([(ranked(scores, mask), (planned.weight or 1.0) * float(getattr(leg, "weight", 1.0)))
                           for planned, leg, scores, mask in groups])
        values = np.zeros(n)
        values[rows] = fused
    top = values.max() if n else 0.0
    return values / top if top > 0 else values


def retrieve(*, limit: int = 10, legs: tuple[Leg, ...] | None = None, id: str = "retrieve") -> RetrieveStep:
    """The ``retrieve`` producer step: the top ``limit`` chunks for the query by BM25 (and any other legs).

    Parameters
    ----------
    limit : int
        Hits returned (at least 1).
    legs : sequence of Leg, optional
        Retrieval legs fused by reciprocal rank (default: one BM25 leg).
    id : str
        The step id in traces (default ``"retrieve"``).

    Examples
    --------
    >>> retrieve(limit=5)
    retrieve(limit=5)
    >>> retrieve(id="lexical").to_dict()["id"]
    'lexical'
    """
    if legs is None:
        return RetrieveStep(limit=limit, id=id)
    return RetrieveStep(limit=limit, legs=legs, id=id)
