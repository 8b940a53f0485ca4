"""What the expansion view shows, read from a run trace (and optionally a knowledge base).

Pure data, no widgets: :func:`expansion_data` finds the ``expand_relations`` step of
a :class:`~crux_nb.retrieval.RetrievalResult` (or a :class:`~crux_nb.retrieval.RecipeTrace`)
and returns an :class:`ExpansionData` that both the widget and the static HTML use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Iterable

import pandas as pd

from ..errors import ParameterError
from ..refs import decode_ref
from ..retrieval.expand import Expansion, ExpansionReason
from ..hits import EvidenceHit, hit_key

__all__ = ["ExpansionData", "expansion_data", "path_text", "reason_text", "ARROW_LEFT", "ARROW_RIGHT", "FRAME_COLUMNS"]

STEP_ID = "expand-relations"
ARROW_LEFT, ARROW_RIGHT = "—", "→"
FRAME_COLUMNS = ["position", "key", "ref", "seed", "path", "edges", "hops", "distance", "score", "supports", "content",
                 "reason"]
_FIELDS = ("key", "ref", "seed", "path", "edges", "distance", "score", "position", "supports")


def path_text(path: Iterable[str], edges: Iterable[str]) -> str:
    """``chunk:a:c1 —mentions→ entity:x —mentions→ chunk:b:c3``.

    Examples
    --------
    >>> path_text(["chunk:a:c1", "entity:x", "chunk:b:c3"], ["mentions", "mentions"])
    'chunk:a:c1 —mentions→ entity:x —mentions→ chunk:b:c3'
    >>> path_text(["chunk:a:c1"], [])
    'chunk:a:c1'
    """
    path, edges = list(path), list(edges)
    parts = [path[0]] if path else []
    for edge, ref in zip(edges, path[1:]):
        parts += [f"{ARROW_LEFT}{edge}{ARROW_RIGHT}", ref]
    return " ".join(parts)


def score_parts(reason: ExpansionReason) -> str:
    """How a relevance-ranked hit's score adds up (``score = relevance + graph term + source-name term``; the graph
    term is ``graph_weight x sqrt(mass)``, read off the score so the parts always sum to it).

    >>> score_parts(ExpansionReason(entities=(), graph=0.49, relevance=0.35, score=0.525))
    'relevance 0.350 + graph 0.175 (mass 0.4900) = 0.525'
    >>> score_parts(ExpansionReason(entities=(), graph=0.0, relevance=0.5, score=0.8, title=0.3))
    'relevance 0.500 + graph 0.000 (mass 0.0000) + source name 0.300 = 0.800'
    """
    graph = reason.score - reason.relevance - reason.title
    text = f"relevance {reason.relevance:.3f} + graph {max(graph, 0.0):.3f} (mass {reason.graph:.4f})"
    return text + (f" + source name {reason.title:.3f}" if reason.title else "") + f" = {reason.score:.3f}"


def reason_text(reason: ExpansionReason | None, label: Any = str) -> str:
    """``relevance 0.350 + graph 0.175 (mass 0.4900) = 0.525 via Scrooge (1/4)``; empty without a reason
    (upstream)."""
    if reason is None:
        return ""
    via = ", ".join(f"{label(ref)} (1/{round(1 / w):d})" if w > 0 else label(ref) for ref, w in reason.entities)
    return score_parts(reason) + (f" via {via}" if via else "")


def _reason(value: Any) -> ExpansionReason | None:
    if value is None or isinstance(value, ExpansionReason):
        return value
    if isinstance(value, Mapping):
        return ExpansionReason(entities=tuple((str(r), float(w)) for r, w in value.get("entities", ())),
                               graph=float(value["graph"]), relevance=float(value["relevance"]),
                               score=float(value["score"]), title=float(value.get("title", 0.0)))
    raise ParameterError("ExpansionView()", "result", "expansion reasons as recorded by expand_relations()", value)


def _record(value: Any) -> Expansion:
    """An :class:`Expansion`, also from its plain-dict form (a trace saved with ``to_dict()``)."""
    if isinstance(value, Expansion):
        return value
    if isinstance(value, Mapping) and all(k in value for k in _FIELDS):
        return Expansion(key=str(value["key"]), ref=str(value["ref"]), seed=str(value["seed"]),
                         path=tuple(map(str, value["path"])), edges=tuple(map(str, value["edges"])),
                         distance=int(value["distance"]), score=float(value["score"]),
                         position=int(value["position"]), supports=tuple(map(str, value["supports"])),
                         reason=_reason(value.get("reason")), via=str(value.get("via", "graph")))
    raise ParameterError("ExpansionView()", "result", "a result whose expand_relations() details hold Expansion "
                         "records", value)


@dataclass(frozen=True)
class ExpansionData:
    """The expansion step of one run: seeds, added hits (in step order) and texts to show.

    What ``ExpansionView(result).data`` holds; ``expansion_data(result)`` reads it without a widget.

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import expansion_data
    >>> kb = crux_nb.datasets.load_tiny(entities=True)
    >>> steps = [crux_nb.retrieve(limit=1), crux_nb.expand_relations(types=["mentions"], depth=2)]
    >>> result = kb.recipe(steps=steps).retrieve_with_trace("When does Beacon launch?")
    >>> data = expansion_data(result, kb=kb)
    >>> data.seeds, data.edge_types, data.max_distance
    (('chunk:plan.md:c0000', 'entity:beacon'), ('mentions',), 2)
    >>> data.label("entity:priya-raman"), data.contents["docs:team.md:c0000"]
    ('Priya Raman', 'Priya Raman leads the Platform team.')
    """

    step_id: str
    query: str
    seeds: tuple[str, ...]
    expansions: tuple[Expansion, ...]
    contents: Mapping[str, str] = field(default_factory=dict)   # hit key -> chunk text
    names: Mapping[str, str] = field(default_factory=dict)      # entity ref -> canonical name
    warnings: tuple[str, ...] = ()
    #: hits the step took from the retrieve step's next candidates (no graph route: they outranked the graph's)
    filled: tuple[str, ...] = ()

    @property
    def edge_types(self) -> tuple[str, ...]:
        """Every edge type on any path, sorted."""
        return tuple(sorted({e for x in self.expansions for e in x.edges}))

    @property
    def max_distance(self) -> int:
        return max((x.distance for x in self.expansions), default=0)

    def rank(self, expansion: Expansion) -> int:
        """1-based rank of an added hit among the added hits (step order).

        Examples
        --------
        >>> from crux_nb.widgets import ExpansionData
        >>> from crux_nb.retrieval.expand import Expansion
        >>> near = Expansion(key="kb:b:c1", ref="chunk:b:c1", seed="chunk:a:c1", path=("chunk:a:c1", "entity:x", "chunk:b:c1"),
        ...                  edges=("mentions", "mentions"), distance=1, score=0.5, position=1, supports=("chunk:a:c1",))
        >>> far = Expansion(key="kb:c:c1", ref="chunk:c:c1", seed="chunk:a:c1", path=("chunk:a:c1", "chunk:c:c1"),
        ...                 edges=("related",), distance=2, score=0.75, position=2, supports=("chunk:a:c1",))
        >>> data = ExpansionData(step_id="expand-relations", query="q", seeds=("chunk:a:c1",), expansions=(near, far),
        ...                      names={"entity:x": "Project X"})
        >>> data.rank(far), data.rank(near)
        (2, 1)
        """
        return self.expansions.index(expansion) + 1

    def find(self, key: str | None) -> Expansion | None:
        """The added hit with hit key ``key`` (None when there is none).

        Examples
        --------
        >>> from crux_nb.widgets import ExpansionData
        >>> from crux_nb.retrieval.expand import Expansion
        >>> near = Expansion(key="kb:b:c1", ref="chunk:b:c1", seed="chunk:a:c1", path=("chunk:a:c1", "entity:x", "chunk:b:c1"),
        ...                  edges=("mentions", "mentions"), distance=1, score=0.5, position=1, supports=("chunk:a:c1",))
        >>> far = Expansion(key="kb:c:c1", ref="chunk:c:c1", seed="chunk:a:c1", path=("chunk:a:c1", "chunk:c:c1"),
        ...                 edges=("related",), distance=2, score=0.75, position=2, supports=("chunk:a:c1",))
        >>> data = ExpansionData(step_id="expand-relations", query="q", seeds=("chunk:a:c1",), expansions=(near, far),
        ...                      names={"entity:x": "Project X"})
        >>> data.find("kb:c:c1").ref, data.find("kb:zzz:c1")
        ('chunk:c:c1', None)
        """
        for x in self.expansions:
            if x.key == key:
                return x
        return None

    def visible(self, types: Iterable[str] | None = None, max_distance: int | None = None) -> tuple[Expansion, ...]:
        """The added hits whose whole path uses only ``types`` and whose distance is at most ``max_distance``,
        best score first (step order among equal scores).

        Examples
        --------
        >>> from crux_nb.widgets import ExpansionData
        >>> from crux_nb.retrieval.expand import Expansion
        >>> near = Expansion(key="kb:b:c1", ref="chunk:b:c1", seed="chunk:a:c1", path=("chunk:a:c1", "entity:x", "chunk:b:c1"),
        ...                  edges=("mentions", "mentions"), distance=1, score=0.5, position=1, supports=("chunk:a:c1",))
        >>> far = Expansion(key="kb:c:c1", ref="chunk:c:c1", seed="chunk:a:c1", path=("chunk:a:c1", "chunk:c:c1"),
        ...                 edges=("related",), distance=2, score=0.75, position=2, supports=("chunk:a:c1",))
        >>> data = ExpansionData(step_id="expand-relations", query="q", seeds=("chunk:a:c1",), expansions=(near, far),
        ...                      names={"entity:x": "Project X"})
        >>> [x.ref for x in data.visible()]  # best score first
        ['chunk:c:c1', 'chunk:b:c1']
        >>> [x.ref for x in data.visible(types=["mentions"])], [x.ref for x in data.visible(max_distance=0)]
        (['chunk:b:c1'], [])
        """
        allowed = None if types is None else set(types)
        kept = [x for x in self.expansions
                if (allowed is None or set(x.edges) <= allowed) and (max_distance is None or x.distance <= max_distance)]
        return tuple(sorted(kept, key=lambda x: -x.score))

    def label(self, ref: str) -> str:
        """A short node label: the entity's name, or the ref without its kind.

        Examples
        --------
        >>> data = ExpansionData(step_id="e", query="q", seeds=(), expansions=(), names={"entity:x": "Project X"})
        >>> data.label("entity:x"), data.label("chunk:plan.md:c0000"), data.label("not a ref")
        ('Project X', 'plan.md:c0000', 'not a ref')
        """
        if ref in self.names:
            return self.names[ref]
        decoded = decode_ref(ref)
        if decoded is None:
            return ref
        return ":".join(decoded.segments())

    def to_frame(self, expansions: Iterable[Expansion] | None = None) -> pd.DataFrame:
        """One row per added hit (``expansions``, default all) in the columns of :data:`FRAME_COLUMNS`.

        Examples
        --------
        >>> from crux_nb.widgets import ExpansionData
        >>> from crux_nb.retrieval.expand import Expansion
        >>> near = Expansion(key="kb:b:c1", ref="chunk:b:c1", seed="chunk:a:c1", path=("chunk:a:c1", "entity:x", "chunk:b:c1"),
        ...                  edges=("mentions", "mentions"), distance=1, score=0.5, position=1, supports=("chunk:a:c1",))
        >>> far = Expansion(key="kb:c:c1", ref="chunk:c:c1", seed="chunk:a:c1", path=("chunk:a:c1", "chunk:c:c1"),
        ...                 edges=("related",), distance=2, score=0.75, position=2, supports=("chunk:a:c1",))
        >>> data = ExpansionData(step_id="expand-relations", query="q", seeds=("chunk:a:c1",), expansions=(near, far),
        ...                      names={"entity:x": "Project X"})
        >>> data.to_frame()[["ref", "edges", "hops", "distance", "score"]]
                  ref                edges  hops  distance  score
        0  chunk:b:c1  mentions > mentions     2         1   0.50
        1  chunk:c:c1              related     1         2   0.75
        >>> data.to_frame()["path"][1]
        'chunk:a:c1 —related→ chunk:c:c1'
        >>> len(data.to_frame(data.visible(max_distance=1)))
        1
        """
        rows = [{"position": x.position, "key": x.key, "ref": x.ref, "seed": x.seed,
                 "path": path_text(x.path, x.edges), "edges": " > ".join(x.edges), "hops": len(x.edges),
                 "distance": x.distance, "score": x.score, "supports": " ".join(x.supports),
                 "content": self.contents.get(x.key), "reason": reason_text(x.reason, self.label)}
                for x in (self.expansions if expansions is None else expansions)]
        frame = pd.DataFrame(rows, columns=FRAME_COLUMNS)
        for column in ("position", "hops", "distance"):
            frame[column] = frame[column].astype("int64")
        frame["score"] = frame["score"].astype("float64")
        for column in ("key", "ref", "seed", "path", "edges", "supports", "content", "reason"):
            frame[column] = frame[column].astype("str")
        return frame


def _find_step(trace: Any, step: str | None) -> Any:
    steps = list(getattr(trace, "steps", ()))

    def is_expansion(s: Any) -> bool:
        details = s.details
        contributor = getattr(s.knowledge, "contributor", None)
        return (s.step_id == STEP_ID or contributor == STEP_ID
                or (isinstance(details, Mapping) and "expansions" in details))

    if step is not None:
        matches = [s for s in steps if s.step_id == step]
    else:
        matches = [s for s in steps if is_expansion(s)]
    if not matches:
        ran = ", ".join(repr(s.step_id) for s in steps) or "none"
        wanted = f"a step with id {step!r}" if step is not None else "an expand_relations() step"
        raise ParameterError(
            "ExpansionView()", "result", f"a retrieval result whose recipe ran {wanted} (steps run: {ran})",
            getattr(trace, "recipe_id", trace),
            hint="run a recipe with expansion, e.g. kb.recipe(steps=[retrieve(limit=5), "
                 "expand_relations(types=['mentions'], depth=2)]).retrieve_with_trace(query), and pass its result.")
    found = matches[0]
    if found.status != "success":
        message = (found.error or {}).get("message", "")
        raise ParameterError("ExpansionView()", "result", "a result whose expansion step succeeded",
                             f"step {found.step_id!r} failed: {message}",
                             hint="fix the step error shown in result.trace.to_frame() and run the recipe again.")
    details = found.details
    # an expansion step that did nothing (depth=0, limit=0) records no details; any other step is wrong
    empty_expansion = details is None and (is_expansion(found) or found.kind == "custom")
    if not empty_expansion and not (isinstance(details, Mapping) and "expansions" in details):
        raise ParameterError("ExpansionView()", "step", "the id of an expand_relations() step", step,
                             hint="result.trace.to_frame() lists the step ids.")
    return found


def expansion_data(result: Any, *, step: str | None = None, kb: Any = None) -> ExpansionData:
    """Read the expansion step of ``result`` (a RetrievalResult or a RecipeTrace).

    ``step`` picks a step id when a recipe expands more than once; ``kb`` (optional) adds
    entity names and chunk texts the result does not carry.

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.datasets.load_tiny(entities=True)
    >>> steps = [crux_nb.retrieve(limit=1), crux_nb.expand_relations(types=["mentions"], depth=2)]
    >>> result = kb.recipe(steps=steps).retrieve_with_trace("When does Beacon launch?")
    >>> data = expansion_data(result)
    >>> data.step_id, [x.ref for x in data.expansions]
    ('expand-relations', ['chunk:team.md:c0000', 'chunk:ops.md:c0000'])
    >>> data.names, len(expansion_data(result, kb=kb).names)  # names come with the kb
    ({}, 4)
    """
    from ..retrieval.results import RetrievalResult
    from ..retrieval.trace import RecipeTrace

    if isinstance(result, RetrievalResult):
        trace, hits = result.trace, list(result.hits)
    elif isinstance(result, RecipeTrace):
        trace, hits = result, []
    else:
        raise ParameterError("ExpansionView()", "result",
                             "a RetrievalResult (from recipe.retrieve_with_trace()) or a RecipeTrace", result,
                             hint="call recipe.retrieve_with_trace(query), not recipe.retrieve(query).")
    if step is not None and not isinstance(step, str):
        raise ParameterError("ExpansionView()", "step", "a step id (str) or None", step)
    found = _find_step(trace, step)
    details = found.details or {}
    expansions = tuple(_record(x) for x in details.get("expansions", ()))
    seeds = tuple(map(str, details.get("seeds", ())))
    contents = {hit_key(h): h.content for h in hits if isinstance(h, EvidenceHit)}
    names: dict[str, str] = {}
    if kb is not None:
        chunks = kb.chunks
        by_ref = dict(zip(chunks["ref"], chunks["content"]))
        for x in expansions:
            if x.key not in contents and x.ref in by_ref:
                contents[x.key] = by_ref[x.ref]
        entities = kb.entities
        names = dict(zip(entities["ref"], entities["canonical_name"]))
    filled = tuple(str(_record(x).ref) for x in details.get("filled", ()))
    return ExpansionData(step_id=found.step_id, query=trace.query, seeds=seeds, expansions=expansions,
                         contents=contents, names=names, warnings=tuple(found.warnings), filled=filled)
