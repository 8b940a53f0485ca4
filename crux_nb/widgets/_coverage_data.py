"""What the coverage view shows, read from a global-search run trace (and optionally a knowledge base).

Pure data, no widgets: :func:`~crux_nb.widgets._coverage_read.coverage_data` finds the ``global_search`` step of a
:class:`~crux_nb.retrieval.RetrievalResult` (or a :class:`~crux_nb.retrieval.RecipeTrace`, or the plain data of
``trace.to_dict()``) and returns a :class:`CoverageData` that both the widget and the static HTML use.

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
from typing import Any

import pandas as pd

from ..community import Finding, Report
from ..retrieval.globalsearch.descent import Batch, Rating
from ..refs import encode_ref, is_ref
from ._coverage_rows import coverage_frame, coverage_nodes
from .layout import tree_layout

__all__ = ["CoverageData", "CoverageFinding", "CallInfo"]

STEP_KIND = "global-search"
OWNER = "CoverageView()"
RESOLUTIONS = ("recorded", "verified", "inferred", "unresolved")
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


# A searched unit is the one report model: a Report whose findings have qualified ids
# ("<community_id>:<finding_id>") and encoded evidence refs; a raw unit is a one-finding report.


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
    """A finding hit with its citation resolved to report findings (``cited``) and chunk refs (``supports``).

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import coverage_data
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
    >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
    >>> finding = coverage_data(result).findings[1]
    >>> finding.rank, finding.statement, finding.resolution
    (2, 'The Platform team runs Atlas.', 'verified')
    >>> [c.statement for c in finding.cited], finding.cited_communities == (finding.community_id,)
    (['The Platform team runs Atlas.'], True)
    """

    rank: int
    target: str
    statement: str
    score: float
    supports: tuple[str, ...]
    assertion_refs: tuple[str, ...]
    community_id: str
    generation: str
    cited: tuple[Finding, ...]
    resolution: str  # see RESOLUTIONS
    hit: Any = field(default=None, compare=False, repr=False)

    @property
    def cited_communities(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.community_id for f in self.cited))


@dataclass(frozen=True)
class CoverageData:
    """The global-search step of one run: coverage, what was read, what was mapped, and the findings.

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import coverage_data
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
    >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
    >>> data = coverage_data(result)
    >>> data.coverage, data.available["reports"], data.processed["reports"], len(data.batches)
    ('exact', 1, 1, 1)
    >>> [data.status(cid) for cid in data.tree_order()], data.call_counts()["map"]
    (['mapped', 'unread', 'unread'], 1)
    """

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
    units: tuple[Report, ...]
    batches: tuple[Batch, ...]
    excluded: tuple[str, ...]
    mapped: tuple[str, ...]
    threshold: int | None = None  # adaptive scan only
    ratings: tuple[Rating, ...] = ()
    rating_calls: int | None = None
    budget_chars: int | None = None  # adaptive: the character budget (None: no budget)
    spent_chars: int | None = None  # adaptive: rating + map characters the descent spent
    input_chars: int = 0  # the run's input chars (crux_nb.retrieval.trace.knowledge_input_chars)
    fallback: str | None = None  # adaptive: the fallback rule
    findings: tuple[CoverageFinding, ...] = ()
    has_hits: bool = True  # False for a trace without its result's hits
    texts: Mapping[str, str] = field(default_factory=dict)  # encoded chunk ref -> text (kb given)
    kb_given: bool = False
    others: Mapping[str, tuple[str | None, str, int]] = field(default_factory=dict)  # excluded id -> parent, title, level
    warnings: tuple[str, ...] = ()
    support: Mapping[str, Any] | None = None  # KnowledgeTrace.support: status, best, threshold, absent_terms

    # ------------------------------------------------------------------ lookups
    @property
    def adaptive(self) -> bool:
        return self.threshold is not None

    def find(self, target: str | None) -> CoverageFinding | None:
        """The finding hit with this finding target (None when there is none).

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
        >>> data = coverage_data(result)
        >>> data.find(result.hits[1].citation.finding_target).statement, data.find("finding:0000")
        ('The Platform team runs Atlas.', None)
        """
        for f in self.findings:
            if f.target == target:
                return f
        return None

    def unit(self, community_id: str) -> Report | None:
        """The searched report (unit) with this community id, or None.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> root, leaf, _ = data.tree_order()
        >>> data.unit(root), data.unit("c-unknown")
        (Report('c-...', level=1, title='Platform and Atlas; Beacon and Priya Raman', findings=4), None)
        """
        return self._by_id.get(community_id)

    @cached_property
    def _by_id(self) -> dict[str, Report]:
        return {u.community_id: u for u in self.units}

    @cached_property
    def _lookup(self) -> dict[str, Any]:
        ratings: dict[str, Rating] = {}
        for r in self.ratings:
            ratings.setdefault(r.community_id, r)
        batches: dict[str, Batch] = {}
        for b in self.batches:
            for c in b.community_ids:
                batches.setdefault(c, b)
        return {"ratings": ratings, "batches": batches, "mapped": set(self.mapped), "excluded": set(self.excluded)}

    def rating(self, community_id: str) -> Rating | None:
        """The adaptive descent's rating of this community (the first one), or None when it was not rated.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), scan="adaptive", detail="overview")
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> root, leaf, _ = data.tree_order()
        >>> data.rating(root).decision, data.rating(root).fallback, data.rating(leaf)
        ('visited', True, None)
        """
        return self._lookup["ratings"].get(community_id)

    def batch_of(self, community_id: str) -> Batch | None:
        """The map batch that read this community, or None when no batch did.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> root, leaf, other = data.tree_order()
        >>> data.batch_of(root).index, data.batch_of(leaf), data.batch_of(other)  # overview: the root's report
        (0, None, None)
        """
        return self._lookup["batches"].get(community_id)

    def title(self, community_id: str) -> str:
        """The community's report title (also of an excluded one); empty when it is unknown.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> [data.title(c) for c in data.tree_order()] + [data.title("c-unknown")]
        ['Platform and Atlas; Beacon and Priya Raman', 'Platform and Atlas', 'Beacon and Priya Raman', '']
        """
        unit = self.unit(community_id)
        if unit is not None:
            return unit.title
        return self.others.get(community_id, (None, "", 0))[1]

    def status(self, community_id: str) -> str:
        """mapped | visited | skipped | truncated | excluded | unread (see ``STATUS_LABELS``).

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> [(data.title(c), data.status(c)) for c in data.tree_order()][:2]
        [('Platform and Atlas; Beacon and Priya Raman', 'mapped'), ('Platform and Atlas', 'unread')]
        """
        if community_id in self._lookup["excluded"]:
            return "excluded"
        if community_id in self._lookup["mapped"]:
            return "mapped"
        rating = self.rating(community_id)
        if rating is not None:
            return rating.decision if rating.decision in ("visited", "skipped", "truncated") else "unread"
        return "unread"

    def hierarchy(self) -> tuple[tuple[str, str | None, int], ...]:
        """Every community drawn: ``(community_id, parent_id, level)``; searched units, then excluded reports.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> root = data.tree_order()[0]
        >>> [(parent == root, level) for _, parent, level in data.hierarchy()]
        [(True, 0), (True, 0), (False, 1)]
        """
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
        """Calls in the log by task: ``map``/``rate`` first attempts, their repairs, failures, others.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> data.call_counts()
        {'map': 1, 'map_repairs': 0, 'rate': 0, 'rate_repairs': 0, 'other': 0, 'failed': 0}
        """
        counts = dict.fromkeys(("map", "map_repairs", "rate", "rate_repairs", "other", "failed"), 0)
        for c in self.calls or ():
            kind = {"map_findings": "map", "rate": "rate"}.get(c.task, "other")
            if kind != "other" and c.repaired:
                kind += "_repairs"
            counts[kind] += 1
            counts["failed"] += not c.ok
        return counts

    def batch_calls(self, batch: Batch) -> tuple[CallInfo, ...]:
        """The logged ``map_findings`` calls of one batch (first attempt, then any repairs).

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> [(c.task, c.prompt_id, c.repaired, c.ok) for c in data.batch_calls(data.batches[0])]
        [('map_findings', 'globalSearch:batch:1', False, True)]
        """
        return tuple(c for c in self.calls or () if c.task == "map_findings" and c.prompt_id == batch.prompt_id)

    # ------------------------------------------------------------------- frames
    def to_frame(self, by: str = "finding") -> pd.DataFrame:
        """One row per finding, support, community or batch (``by``; see :meth:`CoverageView.to_frame`).

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
        >>> coverage_data(result).to_frame("batch")[["batch", "prompt_id", "reports", "findings", "calls", "ok"]]
           batch             prompt_id  reports  findings  calls    ok
        0      1  globalSearch:batch:1        1         4      1  True
        """
        return coverage_frame(self, by)

    def tree_order(self) -> tuple[str, ...]:
        """Community ids in depth-first drawing order.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> [data.unit(c).level for c in data.tree_order()]
        [1, 0, 0]
        """
        return tuple(tree_layout(coverage_nodes(self))[1])

