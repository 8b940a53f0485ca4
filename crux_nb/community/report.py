"""The one report model: a community report, its findings, and the lineage a mapped report carries.

Every layer speaks this model: report writing (:mod:`.reports`) makes a :class:`Report` from the
model's output, the generation frames persist and read it (:func:`~crux_nb.community.frames.read_reports`
adds its generation), the GraphRAG reader builds it from GraphRAG's tables, global search maps it
(a raw chunk is mapped as a one-finding report), and the widgets read it back from a run trace.

Examples
--------
>>> from crux_nb.community import Finding, Report
>>> from crux_nb.refs import ChunkRef
>>> report = Report("c1", 0, None, "Gateway ownership", "Who runs the gateway.",
...                 (Finding("f1", "Platform owns the gateway.", (ChunkRef("doc", "c0001"),)),))
>>> report
Report('c1', level=0, title='Gateway ownership', findings=1)
>>> report.chars  # upstream's measure: title, summary and every finding statement
64
>>> report.qualified().findings[0].id  # the id a global-search map call sees
'c1:f1'
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..hits import Lineage

__all__ = ["Finding", "Report"]


@dataclass(frozen=True)
class Finding:
    """One finding of a report: a statement and the knowledge refs that support it.

    ``evidence`` holds knowledge refs (encoded ref strings when read back from a trace's plain data);
    ``community_id`` names the report the finding belongs to (None until it is placed in one).

    >>> from crux_nb.refs import ChunkRef
    >>> Finding("f1", "Platform owns the gateway.", (ChunkRef("doc", "c0001"),))
    Finding(id='f1', statement='Platform owns the gateway.', evidence=(ChunkRef(source_id='doc', chunk_id='c0001'),), assertion_refs=(), community_id=None)
    """

    id: str
    statement: str
    evidence: tuple[Any, ...] = ()
    assertion_refs: tuple[str, ...] = ()
    community_id: str | None = None


@dataclass(frozen=True)
class Report:
    """A community report. Written reports have no generation yet; persisted ones carry it.

    The generation fields (``generation_id``, ``view_revision``, ``graph_generation``,
    ``strategy_fingerprint``) are set when the report is read from a community generation, and make
    its :attr:`lineage`: what a finding hit mapped from this report records.

    >>> report = Report("c1", 0, None, "Gateway", "Who runs it.", (Finding("f1", "Platform runs it."),))
    >>> report.findings[0].community_id, report.chars, report.rating_chars
    ('c1', 36, 19)
    """

    community_id: str
    level: int
    parent_id: str | None
    title: str
    summary: str
    findings: tuple[Finding, ...] = ()
    member_hash: str = ""
    n_entities: int = 0
    n_chunks: int = 0
    generation_id: str | None = None
    view_revision: str | None = None
    graph_generation: str | None = None
    strategy_fingerprint: str | None = None

    def __post_init__(self) -> None:
        # a finding always knows its report: frames, traces and widgets need not pass it along
        if any(f.community_id is None for f in self.findings):
            placed = tuple(f if f.community_id is not None else replace(f, community_id=self.community_id)
                           for f in self.findings)
            object.__setattr__(self, "findings", placed)

    # ---------------------------------------------------------------- measures
    @property
    def chars(self) -> int:
        """Upstream's measure of a mapped report: title + summary + every finding statement (code points)."""
        return len(self.title) + len(self.summary) + sum(len(f.statement) for f in self.findings)

    @property
    def rating_chars(self) -> int:
        """What a rating call reads: title and summary (findings are for map calls)."""
        return len(self.title) + len(self.summary)

    @property
    def lineage(self) -> Lineage:
        """Where a hit mapped from this report comes from: view revision, generation, community."""
        return Lineage(self.view_revision, self.generation_id or "unknown", self.community_id)

    # ---------------------------------------------------------------- copies
    def in_generation(self, generation_id: str, *, view_revision: str | None, graph_generation: str,
                      strategy_fingerprint: str) -> Report:
        """This report as persisted in one community generation.

        >>> stored = Report("c1", 0, None, "T", "S").in_generation("g1", view_revision=None, graph_generation="i",
        ...                                                         strategy_fingerprint="s")
        >>> stored.generation_id, stored.lineage
        ('g1', Lineage(view_revision=None, community_generation='g1', report_community_id='c1'))
        """
        return replace(self, generation_id=generation_id, view_revision=view_revision,
                       graph_generation=graph_generation, strategy_fingerprint=strategy_fingerprint)

    def qualified(self) -> Report:
        """A copy whose finding ids are ``<community_id>:<finding_id>``: unique across the reports of one search.

        >>> [f.id for f in Report("c1", 0, None, "T", "S", (Finding("f1", "x"),)).qualified().findings]
        ['c1:f1']
        """
        prefix = f"{self.community_id}:"
        return replace(self, findings=tuple(f if f.id.startswith(prefix) else replace(f, id=prefix + f.id)
                                            for f in self.findings))

    # ---------------------------------------------------------------- model payloads
    def payload(self) -> dict[str, Any]:
        """What a map call reads of this report.

        >>> Report("c1", 0, None, "T", "S", (Finding("f1", "x"),)).payload()
        {'community_id': 'c1', 'level': 0, 'title': 'T', 'summary': 'S', 'findings': [{'id': 'f1', 'statement': 'x'}]}
        """
        return {"community_id": self.community_id, "level": self.level, "title": self.title, "summary": self.summary,
                "findings": [{"id": f.id, "statement": f.statement} for f in self.findings]}

    def rating_payload(self) -> dict[str, Any]:
        """What a rating call reads of this report: no findings.

        >>> Report("c1", 0, None, "T", "S", (Finding("f1", "x"),)).rating_payload()
        {'community_id': 'c1', 'title': 'T', 'summary': 'S', 'findings': []}
        """
        return {"community_id": self.community_id, "title": self.title, "summary": self.summary, "findings": []}

    # ---------------------------------------------------------------- display
    def __repr__(self) -> str:
        return (f"Report({self.community_id!r}, level={self.level}, title={self.title!r}, "
                f"findings={len(self.findings)})")

    def _repr_html_(self) -> str:
        from ..display.html import report_html

        return report_html(self)
