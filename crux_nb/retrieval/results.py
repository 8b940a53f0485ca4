"""Result containers: :class:`HitList` (a list of hits that converts to a DataFrame) and
:class:`RetrievalResult` (hits plus the run trace)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import pandas as pd

from ..refs import encode_ref
from ..hits import EvidenceHit, FindingHit, hit_key
from .trace import RecipeTrace

HIT_COLUMNS = ["rank", "kind", "key", "score", "namespace", "source_id", "chunk_id", "ref", "section", "content",
               "seed", "path", "edges", "distance", "finding_target", "supports"]


def _row(rank: int, hit: Any) -> dict[str, Any]:
    row = dict.fromkeys(HIT_COLUMNS)
    row.update(rank=rank, kind=hit.kind, key=hit_key(hit), score=float(hit.score), namespace=hit.namespace,
               content=hit.content)
    if isinstance(hit, EvidenceHit):
        row.update(source_id=hit.source.id, chunk_id=hit.chunk_id, ref=encode_ref(hit.ref),
                   section=hit.parent.title if hit.parent else None)
        graph = hit.provenance.graph if hit.provenance else None
        if graph is not None:
            row.update(seed=graph.seed, path=" > ".join(graph.path), edges=" > ".join(graph.edges),
                       distance=graph.distance)
    elif isinstance(hit, FindingHit):
        row.update(finding_target=hit.citation.finding_target,
                   supports=" ".join(encode_ref(r) for r in hit.citation.supports))
    return row


class HitList(list):
    """A list of hits with ``to_frame()`` and notebook reprs.

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Release planning starts in March.")
    >>> hits, trace = kb.recipe(steps=[crux_nb.retrieve(), crux_nb.expand_relations()]).retrieve_with_trace("release")
    >>> hits
    HitList(1 hits)
       1. 0.1151  chunk:a.md:c0000  Release planning starts in March.
    """

    def to_frame(self) -> pd.DataFrame:
        """One row per hit (rank from 1); graph provenance and citations flattened to text.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Release planning starts in March.")
        >>> hits, trace = kb.recipe(steps=[crux_nb.retrieve(), crux_nb.expand_relations()]).retrieve_with_trace("release")
        >>> hits.to_frame()[["rank", "ref", "source_id", "content"]]
           rank               ref source_id                            content
        0     1  chunk:a.md:c0000      a.md  Release planning starts in March.
        """
        frame = pd.DataFrame([_row(i, h) for i, h in enumerate(self, start=1)], columns=HIT_COLUMNS)
        frame["distance"] = frame["distance"].astype("Int64")
        return frame.dropna(axis=1, how="all") if len(frame) else frame

    def __repr__(self) -> str:
        if not self:
            return "HitList([])"
        lines = [f"HitList({len(self)} hits)"]
        for i, hit in enumerate(self, start=1):
            where = encode_ref(hit.ref) if isinstance(hit, EvidenceHit) else f"finding:{hit.citation.finding_target}"
            text = " ".join(hit.content.split())
            lines.append(f"  {i:>2}. {hit.score:.4f}  {where}  {text[:60]}{'…' if len(text) > 60 else ''}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from ..display.html import hits_html

        return hits_html(self)


@dataclass(frozen=True)
class RetrievalResult:
    """Hits and the trace of the run that produced them; unpacks as ``hits, trace``.

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Release planning starts in March.")
    >>> result = kb.recipe().retrieve_with_trace("release")
    >>> len(result.hits), result.trace.steps[0].status
    (1, 'success')
    """

    hits: HitList
    trace: RecipeTrace

    def __iter__(self) -> Iterator[Any]:
        return iter((self.hits, self.trace))

    def __repr__(self) -> str:
        return f"RetrievalResult(hits={len(self.hits)}, trace={self.trace!r})"

    def _repr_html_(self) -> str:
        return self.hits._repr_html_() + self.trace._repr_html_()
