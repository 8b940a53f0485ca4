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
from ..errors import ParameterError
from ..retrieval.globalsearch.descent import Batch, Rating
from ..refs import encode_ref, is_ref
from .layout import TreeNode, fmt, tree_layout

__all__ = ["CoverageData", "CoverageFinding", 
           "CallInfo", "STATUSES", "FRAME_COLUMNS", "coverage_nodes"]

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
    "community": ["community_id", "level", "parent_id", "title", "status", "rating", "decision", "fallback", "batch",
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
    >>> import crux_nb
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel())
    >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
    >>> from crux_nb.widgets import coverage_data
    >>> finding = coverage_data(result).findings[1]
    >>> finding.rank, finding.statement, finding.resolution
    (2, 'Priya Raman leads the Platform team.', 'verified')
    >>> [c.statement for c in finding.cited], finding.cited_communities == (finding.community_id,)
    (['Priya Raman leads the Platform team.'], True)
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
    >>> import crux_nb
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel())
    >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
    >>> from crux_nb.widgets import coverage_data
    >>> data = coverage_data(result)
    >>> data.coverage, data.available["reports"], data.processed["reports"], len(data.batches)
    ('exact', 2, 2, 1)
    >>> [data.status(cid) for cid in data.tree_order()], data.call_counts()["map"]
    (['unread', 'mapped', 'mapped'], 1)
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
    fallback: str | None = None  # adaptive: the fallback rule
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
        """The finding hit with this finding target (None when there is none).

        Examples
        --------
        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel())
        >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
        >>> from crux_nb.widgets import coverage_data
        >>> data = coverage_data(result)
        >>> data.find(result.hits[1].citation.finding_target).statement, data.find("finding:0000")
        ('Priya Raman leads the Platform team.', None)
        """
        for f in self.findings:
            if f.target == target:
                return f
        return None

    def unit(self, community_id: str) -> Report | None:
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
        return self._lookup["ratings"].get(community_id)

    def batch_of(self, community_id: str) -> Batch | None:
        return self._lookup["batches"].get(community_id)

    def title(self, community_id: str) -> str:
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
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel())
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> [(data.title(c), data.status(c)) for c in data.tree_order()][:2]
        [('Platform and Atlas; Beacon and Priya Raman', 'unread'), ('Platform and Atlas', 'mapped')]
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
        """Calls in the log by task: ``map``/``rate`` first attempts, their repairs, failures, others.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel())
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
        return tuple(c for c in self.calls or () if c.task == "map_findings" and c.prompt_id == batch.prompt_id)

    # ------------------------------------------------------------------- frames
    def to_frame(self, by: str = "finding") -> pd.DataFrame:
        """One row per finding, support, community or batch (``by``; see :meth:`CoverageView.to_frame`).

        Examples
        --------
        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel())
        >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
        >>> from crux_nb.widgets import coverage_data
        >>> coverage_data(result).to_frame("batch")[["batch", "prompt_id", "reports", "findings", "calls", "ok"]]
           batch             prompt_id  reports  findings  calls    ok
        0      1  globalSearch:batch:1        2         4      1  True
        """
        if by not in FRAME_COLUMNS:
            raise ParameterError("CoverageView.to_frame()", "by", f"one of {list(FRAME_COLUMNS)}", by)
        rows = getattr(self, f"_rows_{by}")()
        frame = pd.DataFrame(rows, columns=FRAME_COLUMNS[by])
        types = {"finding": {"rank": "int64", "score": "float64", "n_supports": "int64"},
                 "support": {"rank": "int64"},
                 "community": {"level": "int64", "rating": "float64", "fallback": "bool", "batch": "Int64",
                               "findings": "int64",
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
                 "cited_findings": " ".join(c.id for c in f.cited if ref in c.evidence), "text": self.texts.get(ref)}
                for f in self.findings for ref in f.supports]

    def tree_order(self) -> tuple[str, ...]:
        """Community ids in depth-first drawing order.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import coverage_data
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel())
        >>> data = coverage_data(kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?"))
        >>> [data.unit(c).level for c in data.tree_order()]
        [1, 0, 0]
        """
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
                         "fallback": rating is not None and rating.fallback,
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
        if rating is not None and rating.fallback:
            tip.append("chosen by the fallback")
        if batch is not None:
            tip.append(f"batch {batch.index + 1}")
        if parent is not None and parent not in drawn:
            tip.append(f"parent {parent} not drawn")
        nodes.append(TreeNode(cid, parent, level, title or cid, status,
                              rating_text(rating.rating) if rating is not None else "", " · ".join(tip),
                              dashed=status == "excluded"))
    return nodes
