"""Recipe steps as data: small frozen dataclasses with validated config.

Each step has ``id``, ``kind``, ``phase`` (input, output), ``needs_model`` and a
public ``config()``; ``to_dict()`` is its data form and ``repr`` its factory
call. Factories (``retrieve``, ``custom_step``) are the public constructors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from .hydrate import chunk_hit
from .filters import filter_mask
from .hits import Provenance, SourceScore
from .lexical import BM25Leg, Leg, ranked, rrf
from .types import PHASES, StepContext, StepInput, StepOutput

__all__ = ["Step", "RetrieveStep", "CustomStep", "retrieve", "custom_step", "check_int"]

PRODUCER_KINDS = ("retrieve", "global-search")
RESERVED_IDS = ("retrieve", "fusion")


def check_int(owner: str, name: str, value: Any, *, minimum: int) -> int:
    """A whole number (ints, or floats with no fraction) at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ParameterError(owner, name, f"an integer >= {minimum}", value)
    if isinstance(value, float) and (not value.is_integer()):
        raise ParameterError(owner, name, f"an integer >= {minimum}", value)
    if value < minimum:
        raise ParameterError(owner, name, f"an integer >= {minimum}", value)
    return int(value)


class Step:
    """Shared behaviour of recipe steps (subclasses are frozen dataclasses)."""

    id: str
    kind: str
    phase: tuple[str, str]
    needs_model: bool = False
    builtin: bool = True
    factory: str = "step"

    @property
    def model(self) -> Any:
        return None

    def config(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "phase": list(self.phase), "needs_model": self.needs_model,
                "config": self.config()}

    def run(self, input: StepInput, context: StepContext) -> StepOutput:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{self.factory}({args})"

    def _repr_html_(self) -> str:
        from ..display.html import step_html

        return step_html(self)


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
        return config

    def run(self, input: StepInput, context: StepContext) -> StepOutput:
        state = context.state
        groups = []
        for planned in input.queries:
            merged = {**(context.request.filter or {}), **(planned.filter or {})}
            mask = filter_mask(state, context.namespace, merged)
            if context.members is not None:
                mask &= state.chunks["source_id"].isin(context.members).to_numpy()
            for leg in self.legs:
                scores = leg.scores(state, planned.query)
                groups.append((planned, leg, ranked(scores, mask), scores))
        hits = self._single(groups[0], context) if len(groups) == 1 else self._fused(groups, context)
        return StepOutput(hits=tuple(hits))

    def _single(self, group, context: StepContext):
        planned, leg, rows, scores = group
        out = []
        for rank, row in enumerate(rows[: self.limit].tolist(), start=1):
            score = float(scores[row])
            hit = chunk_hit(context.state, row, namespace=context.namespace, score=score)
            prov = Provenance(raw_score=score, per_source=(SourceScore(leg.id, score, rank),),
                              matched_queries=(planned.query,), ranks={leg.id: rank})
            out.append(_with_provenance(hit, prov))
        return out

    def _fused(self, groups, context: StepContext):
        rankings = [(rows, planned.weight or 1.0) for planned, _, rows, _ in groups]
        rows, fused = rrf(rankings)
        out = []
        for row, score in zip(rows[: self.limit].tolist(), fused[: self.limit].tolist()):
            per_source, ranks, matched = [], {}, []
            for planned, leg, leg_rows, _ in groups:
                hit_rank = np.flatnonzero(leg_rows == row)
                if len(hit_rank):
                    rank = int(hit_rank[0]) + 1
                    per_source.append(SourceScore(leg.id, 1.0 / rank, rank, planned.weight))
                    ranks[leg.id] = rank
                    if planned.query not in matched:
                        matched.append(planned.query)
            hit = chunk_hit(context.state, row, namespace=context.namespace, score=score)
            out.append(_with_provenance(hit, Provenance(per_source=tuple(per_source), matched_queries=tuple(matched),
                                                        ranks=ranks, fused_score=score)))
        return out


def _with_provenance(hit, provenance):
    from dataclasses import replace

    return replace(hit, provenance=provenance)


@dataclass(frozen=True, repr=False)
class CustomStep(Step):
    """A user step: ``fn(input, context)`` returns a ``StepOutput`` or a list of hits."""

    id: str
    fn: Callable[[StepInput, StepContext], Any]
    phase: tuple[str, str] = ("hits", "hits")
    kind: str = "custom"
    needs_model: bool = False
    step_model: Any = None
    builtin: bool = False
    factory = "custom_step"

    def __post_init__(self) -> None:
        owner = "custom_step()"
        if not isinstance(self.id, str) or not self.id.strip():
            raise ParameterError(owner, "id", "a non-empty string", self.id)
        if not callable(self.fn):
            raise ParameterError(owner, "fn", "a callable (input, context) -> hits", self.fn)
        phase = tuple(self.phase)
        if len(phase) != 2 or not all(p in PHASES for p in phase):
            raise ParameterError(owner, "phase", "a pair of 'queries'/'hits'", self.phase)
        object.__setattr__(self, "phase", phase)

    @property
    def model(self) -> Any:
        return self.step_model

    def config(self) -> dict[str, Any]:
        return {"id": self.id, "phase": self.phase, "fn": getattr(self.fn, "__name__", "fn")}

    def run(self, input: StepInput, context: StepContext) -> StepOutput:
        result = self.fn(input, context)
        if isinstance(result, StepOutput):
            return result
        if self.phase[1] == "queries":
            return StepOutput(queries=tuple(result))
        return StepOutput(hits=tuple(result))


def retrieve(*, limit: int = 10, legs: tuple[Leg, ...] | None = None) -> RetrieveStep:
    """The ``retrieve`` producer step: the top ``limit`` chunks for the query by BM25.

    >>> retrieve(limit=5)
    retrieve(limit=5)
    """
    return RetrieveStep(limit=limit) if legs is None else RetrieveStep(limit=limit, legs=legs)


def custom_step(fn: Callable[[StepInput, StepContext], Any], *, id: str, phase: tuple[str, str] = ("hits", "hits"),
                needs_model: bool = False, model: Any = None) -> CustomStep:
    """Wrap a function as a recipe step (kind ``custom``)."""
    return CustomStep(id=id, fn=fn, phase=phase, needs_model=needs_model, step_model=model)
