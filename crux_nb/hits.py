"""Hit kinds: the values every retrieval recipe produces.

``EvidenceHit`` is a chunk of the knowledge base; ``FindingHit`` is a statement
mapped from community reports, with a citation back to its evidence. Both are
frozen; steps make changed copies with :func:`dataclasses.replace`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal, Union

from .refs import ChunkRef, KnowledgeRef, encode_ref, is_ref
from .schema import Metadata

__all__ = [
    "Source", "HitParent", "SourceScore", "GraphProvenance", "Provenance", "EvidenceHit",
    "AssertionRef", "Lineage", "FindingCitation", "FindingHit", "RetrieverHit", "hit_key", "evidence_key", "to_data",
]


@dataclass(frozen=True)
class Source:
    """Where a chunk came from. Retrieval never hydrates ``asset_ref``."""

    id: str
    url: str | None = None
    path: str | None = None
    asset_ref: str | None = None
    media_type: str | None = None
    location: str | None = None


@dataclass(frozen=True)
class HitParent:
    parent_id: str | None = None
    key: str | None = None
    title: str | None = None
    summary: str | None = None
    content: str | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class SourceScore:
    retriever_id: str
    score: float
    rank: int
    weight: float | None = None


@dataclass(frozen=True)
class GraphProvenance:
    """How ``expand_relations`` reached a hit: encoded refs from the seed, edge types per hop."""

    seed: str
    path: tuple[str, ...]
    edges: tuple[str, ...]
    distance: int


@dataclass(frozen=True)
class Provenance:
    raw_score: float | None = None
    per_source: tuple[SourceScore, ...] = ()
    matched_queries: tuple[str, ...] = ()
    ranks: Mapping[str, int] | None = None
    fused_score: float | None = None
    rerank_score: float | None = None
    graph: GraphProvenance | None = None


@dataclass(frozen=True)
class EvidenceHit:
    """A hit on a chunk: its source, text, score and how it was found (``provenance``).

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "The launch moved to May.")
    >>> hit = kb.recipe().retrieve("launch")[0]
    >>> hit.ref, hit.content, hit.provenance.ranks
    (ChunkRef(source_id='a.md', chunk_id='c0000'), 'The launch moved to May.', {'bm25': 1})
    """

    namespace: str
    source: Source
    chunk_id: str
    content: str
    metadata: Mapping[str, Any] = field(default_factory=Metadata)
    score: float = 0.0
    parent: HitParent | None = None
    provenance: Provenance | None = None
    kind: Literal["evidence"] = "evidence"

    @property
    def ref(self) -> ChunkRef:
        return ChunkRef(self.source.id, self.chunk_id)

    def _repr_html_(self) -> str:
        from .display.html import evidence_hit_html

        return evidence_hit_html(self)


@dataclass(frozen=True)
class AssertionRef:
    assertion_id: str


@dataclass(frozen=True)
class Lineage:
    view_revision: str | None
    community_generation: str
    report_community_id: str


@dataclass(frozen=True)
class FindingCitation:
    """What a finding hit cites: the chunks supporting it and the report it was mapped from (``lineage``).

    Global search makes them (see :class:`FindingHit`); the target hashes the statement and the cited ids.

    >>> from crux_nb.refs import ChunkRef
    >>> citation = FindingCitation("finding:ab12", (ChunkRef("a.md", "c0000"),), (), Lineage(None, "cg-1", "c1"))
    >>> citation.lineage.report_community_id, [str(r) for r in citation.supports]
    ('c1', ['chunk:a.md:c0000'])
    """

    finding_target: str
    supports: tuple[KnowledgeRef, ...]
    assertion_refs: tuple[AssertionRef, ...]
    lineage: Lineage


@dataclass(frozen=True)
class FindingHit:
    """A hit of global search: a statement mapped from community reports, with its citation.

    >>> import crux_nb
    >>> from crux_nb.models import OfflineModel
    >>> kb = crux_nb.datasets.load_tiny(communities=True)
    >>> search = crux_nb.global_search(model=OfflineModel(), detail="detailed")
    >>> hit = kb.recipe(steps=[search]).retrieve("Who runs Atlas?")[0]
    >>> hit.kind, hit.content
    ('finding', 'The Platform team runs Atlas.')
    """

    namespace: str
    content: str
    score: float
    citation: FindingCitation
    kind: Literal["finding"] = "finding"


RetrieverHit = Union[EvidenceHit, FindingHit]


def hit_key(hit: RetrieverHit) -> str:
    """Identity key: ``ns:source:chunk`` for evidence, ``ns:finding:<target>`` for findings."""
    if isinstance(hit, FindingHit):
        return f"{hit.namespace}:finding:{hit.citation.finding_target}"
    return evidence_key(hit.namespace, hit.source.id, hit.chunk_id)


def evidence_key(namespace: str, source_id: str, chunk_id: str) -> str:
    """:func:`hit_key` of an evidence hit from its parts, for a chunk not (yet) built into a hit.

    >>> evidence_key("docs", "a.md", "c0000")
    'docs:a.md:c0000'
    """
    return f"{namespace}:{source_id}:{chunk_id}"


def to_data(value: Any) -> Any:
    """JSON-ready plain data for hits and their parts (refs become encoded strings)."""
    if is_ref(value):
        return encode_ref(value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    return value
