"""Global search: batch packing (map calls) and, re-exported from :mod:`.best_first`, the adaptive scan's
model-rated best-first descent (DESIGN 4.2, 4.10)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .best_first import (BUDGET, FALLBACK, FALLBACKS, MAX_CALLS, THRESHOLD, AdaptiveTrace, Rating, budget_chars,
                         descend, finding_prior, report_prior)
from ...community import Report
from .units import BATCH_BUDGET

__all__ = ["Batch", "pack", "prompt_id", "THRESHOLD", "MAX_CALLS", "BUDGET", "FALLBACK", "FALLBACKS", "AdaptiveTrace",
           "Rating", "budget_chars", "descend", "finding_prior", "report_prior"]


def prompt_id(task: str, index: int) -> str:
    """The prompt id of a global-search call: ``globalSearch:<task>:<n>``, n counting from 1 (upstream's ids).

    >>> prompt_id("batch", 0), prompt_id("rate", 2)
    ('globalSearch:batch:1', 'globalSearch:rate:3')
    """
    return f"globalSearch:{task}:{index + 1}"


@dataclass(frozen=True)
class Batch:
    """One map call's reports: ``index`` counts from 0, its prompt id from 1."""

    index: int
    units: tuple[Report, ...]
    input_chars: int

    @property
    def community_ids(self) -> tuple[str, ...]:
        return tuple(u.community_id for u in self.units)

    @property
    def prompt_id(self) -> str:
        return prompt_id("batch", self.index)


def pack(units: list[Report], budget: int | None = None, *, rating: bool = False,
         size: Callable[[Report], int] | None = None) -> list[Batch]:
    """Greedy packing in (level, id) order; a unit over the budget gets a batch of its own.

    Units are measured by ``size`` when given (e.g. a unit's JSON as a chat prompt shows it), else
    upstream's measure: ``rating`` measures units as rating calls see them (title and summary only).

    >>> from crux_nb.community import Report
    >>> units = [Report(f"c{i}", 0, None, "T", "x" * 100) for i in range(5)]
    >>> [len(b.units) for b in pack(units, 250)], [len(b.units) for b in pack(units, 250, size=lambda u: 120)]
    ([2, 2, 1], [2, 2, 1])
    """
    budget = BATCH_BUDGET if budget is None else budget
    batches: list[Batch] = []
    current: list[Report] = []
    used = 0
    for unit in sorted(units, key=lambda u: (u.level, u.community_id)):
        chars = size(unit) if size is not None else unit.rating_chars if rating else unit.chars
        if current and used + chars > budget:
            batches.append(Batch(len(batches), tuple(current), used))
            current, used = [], 0
        current.append(unit)
        used += chars
    if current:
        batches.append(Batch(len(batches), tuple(current), used))
    return batches
