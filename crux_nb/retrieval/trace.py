"""Run traces: one :class:`StepTrace` per step inside a :class:`RecipeTrace`, and the
:class:`KnowledgeTrace` a connected-knowledge step records on its step trace.

Durations are kept for analysis (``to_frame()``) but never shown in reprs, so
notebook outputs stay deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

import pandas as pd

from ..hits import to_data


def collapse_warnings(warnings: Any) -> tuple[str, ...]:
    """Each distinct warning once, in first-seen order; a repeated one says how often it came.

    >>> collapse_warnings(["a", "b", "a", "a"])
    ('a (3 times)', 'b')
    """
    warnings = tuple(warnings)
    if len(set(warnings)) == len(warnings):  # nothing repeats (the common case): each stays as it is
        return warnings
    counts: dict[str, int] = {}
    for warning in warnings:
        counts[warning] = counts.get(warning, 0) + 1
    return tuple(w if n == 1 else f"{w} ({n} times)" for w, n in counts.items())


@dataclass(frozen=True)
class StepTrace:
    """What one step of a run did: status, query and hit counts, warnings, what it read (``knowledge``).

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Release planning starts in March.")
    >>> hits, trace = kb.recipe(steps=[crux_nb.retrieve(), crux_nb.expand_relations()]).retrieve_with_trace("release")
    >>> trace.steps[0]
    StepTrace('retrieve', status='success', queries 1->0, hits 0->1, warnings=0)
    """

    step_id: str
    kind: str
    status: str  # "success" | "error"
    duration_ms: float
    input_queries: int
    input_hits: int
    output_queries: int
    output_hits: int
    warnings: tuple[str, ...] = ()
    knowledge: Any = None
    details: Any = None
    error: dict[str, str] | None = None

    def __repr__(self) -> str:
        return (f"StepTrace({self.step_id!r}, status={self.status!r}, queries {self.input_queries}->{self.output_queries}, "
                f"hits {self.input_hits}->{self.output_hits}, warnings={len(self.warnings)})")


@dataclass(frozen=True)
class RecipeTrace:
    """The trace of one recipe run: every step's :class:`StepTrace`, warnings and errors.

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Release planning starts in March.")
    >>> hits, trace = kb.recipe(steps=[crux_nb.retrieve(), crux_nb.expand_relations()]).retrieve_with_trace("release")
    >>> trace
    RecipeTrace(recipe_id='docs-recipe-...', query='release', steps=[retrieve:success, expand-relations:success], results=1, warnings=1)
    >>> trace.warnings  # a step that adds fewer hits than its limit says why
    ('expand_relations added 0 of 20 hits: 0 candidates in all; the retrieve step ranked no further chunk.',)
    """

    id: str
    recipe_id: str
    fingerprint: str
    query: str
    steps: tuple[StepTrace, ...]
    result_count: int
    duration_ms: float
    warnings: tuple[str, ...] = ()
    errors: tuple[dict[str, str], ...] = field(default_factory=tuple)

    def step(self, step_id: str) -> StepTrace:
        """The trace of the first step with this id.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Release planning starts in March.")
        >>> hits, trace = kb.recipe(steps=[crux_nb.retrieve(), crux_nb.expand_relations()]).retrieve_with_trace("release")
        >>> trace.step("expand-relations").status
        'success'
        """
        for trace in self.steps:
            if trace.step_id == step_id:
                return trace
        raise KeyError(step_id)

    def to_frame(self) -> pd.DataFrame:
        """One row per step: id, kind, status, counts, warnings, duration.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Release planning starts in March.")
        >>> hits, trace = kb.recipe(steps=[crux_nb.retrieve(), crux_nb.expand_relations()]).retrieve_with_trace("release")
        >>> trace.to_frame()[["step_id", "kind", "status", "output_hits"]]
                    step_id      kind   status  output_hits
        0          retrieve  retrieve  success            1
        1  expand-relations    custom  success            1
        """
        rows = [{"step_id": s.step_id, "kind": s.kind, "status": s.status, "input_queries": s.input_queries,
                 "input_hits": s.input_hits, "output_queries": s.output_queries, "output_hits": s.output_hits,
                 "warnings": len(s.warnings), "error": (s.error or {}).get("message"),
                 "duration_ms": round(s.duration_ms, 3)} for s in self.steps]
        return pd.DataFrame(rows, columns=["step_id", "kind", "status", "input_queries", "input_hits",
                                           "output_queries", "output_hits", "warnings", "error", "duration_ms"])

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (knowledge payloads included).

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Release planning starts in March.")
        >>> hits, trace = kb.recipe(steps=[crux_nb.retrieve(), crux_nb.expand_relations()]).retrieve_with_trace("release")
        >>> import json
        >>> json.loads(json.dumps(trace.to_dict()))["steps"][0]["step_id"]
        'retrieve'
        """
        return to_data(self)

    def __repr__(self) -> str:
        steps = ", ".join(f"{s.step_id}:{s.status}" for s in self.steps)
        return (f"RecipeTrace(recipe_id={self.recipe_id!r}, query={self.query!r}, steps=[{steps}], "
                f"results={self.result_count}, warnings={len(self.warnings)})")

    def _repr_html_(self) -> str:
        from ..display.html import trace_html

        return trace_html(self)


Coverage = Literal["exact", "compensated", "raw-fallback", "materialization-wait"]


@dataclass(frozen=True)
class KnowledgeTrace:
    """What a step read and how completely: upstream's ``KnowledgeStepTrace``, in snake_case.

    A step that reads communities (``global_search``) records one in ``StepTrace.knowledge``;
    the other steps leave it None.

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.datasets.load_tiny(communities=True)
    >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel())
    >>> knowledge = kb.recipe(steps=[search]).retrieve_with_trace("Who runs Atlas?").trace.steps[0].knowledge
    >>> knowledge
    KnowledgeTrace(contributor='global-search', coverage='exact', available={'reports': 2, 'findings': 4},
                   processed={'reports': 2, 'findings': 4})
    >>> knowledge.scan, knowledge.detail, knowledge.preflight["calls"]
    ('all', 'detailed', 1)
    >>> print(kb.recipe().retrieve_with_trace("Who runs Atlas?").trace.steps[0].knowledge)
    None
    """

    contributor: str
    coverage: Coverage
    coverage_basis: str
    generations: tuple[str, ...] = ()
    view: Mapping[str, Any] | None = None
    scan: str | None = None
    detail: str | None = None
    available: Mapping[str, int] = field(default_factory=dict)
    processed: Mapping[str, int] = field(default_factory=dict)
    adaptive: Any = None
    preflight: Mapping[str, int] | None = None
    truncations: tuple[Any, ...] = ()
    calls: Any = None
    #: whether the corpus answers the question: {"status": "strong" | "weak" | "none", "best", "threshold",
    #: "absent_terms"} (global search; see :func:`crux_nb.retrieval.globalsearch.support.support`)
    support: Mapping[str, Any] | None = None

    @property
    def input_chars(self) -> int:
        """The run's input characters: see :func:`knowledge_input_chars` (the one definition)."""
        return knowledge_input_chars(self)

    def __repr__(self) -> str:
        return (f"KnowledgeTrace(contributor={self.contributor!r}, coverage={self.coverage!r}, "
                f"available={dict(self.available)}, processed={dict(self.processed)})")


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def knowledge_input_chars(knowledge: Any) -> int:
    """The input characters of a step that read community reports: the one definition the trace, the
    demo and the views show as "input chars".

    The report text sent to the model, in the unit the budgets use: every map batch's reports (title,
    summary, findings) plus, in an adaptive run, every rated report's title and summary -- the descent's
    ``spent_chars``, which the character budget (``budget_chars``) bounds. The prompts' fixed wording and
    JSON framing are not counted (the call log's ``input_chars`` per call includes them).
    ``knowledge`` is a :class:`KnowledgeTrace` or its saved (mapping) form; 0 when nothing was read.

    Examples
    --------
    >>> import crux_nb
    >>> from crux_nb.retrieval.trace import knowledge_input_chars
    >>> kb = crux_nb.datasets.load_tiny(communities=True)
    >>> model = crux_nb.models.OfflineModel()
    >>> def knowledge(scan):
    ...     steps = [crux_nb.global_search(model=model, scan=scan)]
    ...     return kb.recipe(steps=steps).retrieve_with_trace("Who runs Atlas?").trace.steps[0].knowledge
    >>> scan_all, adaptive = knowledge("all"), knowledge("adaptive")
    >>> scan_all.input_chars == scan_all.preflight["input_chars"]  # scan all: the map batches
    True
    >>> adaptive.input_chars == adaptive.adaptive.spent_chars  # adaptive: ratings + map batches
    True
    >>> knowledge_input_chars({"preflight": {"input_chars": 120}}), knowledge_input_chars(None)
    (120, 0)
    """
    if knowledge is None:
        return 0
    adaptive = _field(knowledge, "adaptive")
    if adaptive is not None:
        return int(_field(adaptive, "spent_chars") or 0)
    preflight = _field(knowledge, "preflight")
    return int(_field(preflight, "input_chars") or 0) if preflight is not None else 0
