"""What the community explorer shows, read from a communities surface (``kb.communities`` or ``view.communities``).

Pure data, no widgets. Reading never builds: a surface that was never prepared shows no
communities, and a stale one shows its current (older) generation with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable, Mapping

import pandas as pd

from ..community import Finding
from ..errors import ParameterError
from ..refs import encode_ref, is_ref
from ._coverage_read import chunk_texts
from .layout import TreeNode, plural, tree_layout

__all__ = ["ExplorerData", "CommunityInfo", "explorer_data", "EXPLORER_COLUMNS"]

OWNER = "CommunityExplorer()"
KINDS = ("root", "parent", "leaf")  # the node roles the drawing colours
EXPLORER_COLUMNS = ["community_id", "level", "kind", "parent_id", "children", "n_chunks", "n_entities", "title",
                    "findings", "evidence"]


@dataclass(frozen=True)
class CommunityInfo:
    """One community of the current generation with its report (empty title/summary when it has none).

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import explorer_data
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> leaf = explorer_data(kb.communities).order()[1]
    >>> leaf.level, leaf.kind, leaf.title, leaf.n_chunks, leaf.has_report
    (0, 'leaf', 'Platform and Atlas', 2, True)
    >>> [f.statement for f in leaf.findings], leaf.evidence
    (['The Platform team runs Atlas.', 'Priya Raman leads the Platform team.'], ('chunk:ops.md:c0000', 'chunk:team.md:c0000'))
    """

    community_id: str
    level: int
    kind: str
    parent_id: str | None
    child_ids: tuple[str, ...]
    n_chunks: int
    n_entities: int
    title: str
    summary: str
    findings: tuple[Finding, ...]  # the report's findings, evidence as encoded refs
    has_report: bool = True

    @property
    def evidence(self) -> tuple[str, ...]:
        """Every chunk ref the report's findings cite, in finding order."""
        return tuple(dict.fromkeys(r for f in self.findings for r in f.evidence))


@dataclass(frozen=True)
class ExplorerData:
    """The current generation of a communities surface, as plain data (what :class:`CommunityExplorer` shows).

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import explorer_data
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> data = explorer_data(kb.communities)
    >>> data.status, data.levels, len(data.communities)
    ('ready', (1, 0), 3)
    >>> data.texts["chunk:ops.md:c0000"]
    'The Platform team runs Atlas.'
    """

    scope: str
    config_id: str
    status: str
    generation_id: str | None
    view: tuple[str | None, str | None]
    communities: tuple[CommunityInfo, ...]  # sorted by (level desc, id)
    texts: Mapping[str, str] = field(default_factory=dict)  # encoded chunk ref -> text
    kb_given: bool = False

    @cached_property
    def _by_id(self) -> dict[str, CommunityInfo]:
        return {c.community_id: c for c in self.communities}

    def find(self, community_id: str | None) -> CommunityInfo | None:
        """The community with this id (None when there is none).

        Examples
        --------
        >>> from crux_nb.widgets import CommunityInfo, ExplorerData
        >>> def info(cid, level, parent, children=()):
        ...     return CommunityInfo(cid, level, "leaf" if not children else "parent", parent, children, 1, 1, cid.title(), "", ())
        >>> data = ExplorerData(scope="corpus", config_id="c", status="ready", generation_id="g1", view=(None, None),
        ...                     communities=(info("top", 2, None, ("mid",)), info("mid", 1, "top", ("leaf",)), info("leaf", 0, "mid")))
        >>> data.find("mid").title, data.find("gone"), data.find(None)
        ('Mid', None, None)
        """
        return self._by_id.get(community_id) if community_id is not None else None

    @property
    def levels(self) -> tuple[int, ...]:
        return tuple(sorted({c.level for c in self.communities}, reverse=True))

    def ancestors(self, community_id: str) -> tuple[str, ...]:
        """The parent chain from the community up to its root (the community itself excluded).

        Examples
        --------
        >>> from crux_nb.widgets import CommunityInfo, ExplorerData
        >>> def info(cid, level, parent, children=()):
        ...     return CommunityInfo(cid, level, "leaf" if not children else "parent", parent, children, 1, 1, cid.title(), "", ())
        >>> data = ExplorerData(scope="corpus", config_id="c", status="ready", generation_id="g1", view=(None, None),
        ...                     communities=(info("top", 2, None, ("mid",)), info("mid", 1, "top", ("leaf",)), info("leaf", 0, "mid")))
        >>> data.ancestors("leaf"), data.ancestors("top")
        (('mid', 'top'), ())
        """
        out: list[str] = []
        node = self.find(community_id)
        while node is not None and node.parent_id is not None and node.parent_id not in out:
            out.append(node.parent_id)
            node = self.find(node.parent_id)
        return tuple(out)

    def depth(self, community_id: str) -> int:
        """How many of the community's ancestors are drawn (0 for a root).

        Examples
        --------
        >>> from crux_nb.widgets import CommunityInfo, ExplorerData
        >>> def info(cid, level, parent, children=()):
        ...     return CommunityInfo(cid, level, "leaf" if not children else "parent", parent, children, 1, 1, cid.title(), "", ())
        >>> data = ExplorerData(scope="corpus", config_id="c", status="ready", generation_id="g1", view=(None, None),
        ...                     communities=(info("top", 2, None, ("mid",)), info("mid", 1, "top", ("leaf",)), info("leaf", 0, "mid")))
        >>> [data.depth(c) for c in ("top", "mid", "leaf")]
        [0, 1, 2]
        """
        return len([a for a in self.ancestors(community_id) if a in self._by_id])

    def order(self) -> tuple[CommunityInfo, ...]:
        """Depth-first tree order (what the drawing and the picker list).

        Examples
        --------
        >>> from crux_nb.widgets import CommunityInfo, ExplorerData
        >>> def info(cid, level, parent, children=()):
        ...     return CommunityInfo(cid, level, "leaf" if not children else "parent", parent, children, 1, 1, cid.title(), "", ())
        >>> data = ExplorerData(scope="corpus", config_id="c", status="ready", generation_id="g1", view=(None, None),
        ...                     communities=(info("top", 2, None, ("mid",)), info("mid", 1, "top", ("leaf",)), info("leaf", 0, "mid")))
        >>> [c.community_id for c in data.order()]
        ['top', 'mid', 'leaf']
        """
        _, order = tree_layout(explorer_nodes(self))
        return tuple(self._by_id[i] for i in order)

    def to_frame(self) -> pd.DataFrame:
        """One row per community in tree order (the columns of :data:`EXPLORER_COLUMNS`).

        Examples
        --------
        >>> from crux_nb.widgets import CommunityInfo, ExplorerData
        >>> def info(cid, level, parent, children=()):
        ...     return CommunityInfo(cid, level, "leaf" if not children else "parent", parent, children, 1, 1, cid.title(), "", ())
        >>> data = ExplorerData(scope="corpus", config_id="c", status="ready", generation_id="g1", view=(None, None),
        ...                     communities=(info("top", 2, None, ("mid",)), info("mid", 1, "top", ("leaf",)), info("leaf", 0, "mid")))
        >>> data.to_frame()[["community_id", "level", "kind", "parent_id", "children"]]
          community_id  level    kind parent_id  children
        0          top      2  parent       NaN         1
        1          mid      1  parent       top         1
        2         leaf      0    leaf       mid         0
        """
        rows = [{"community_id": c.community_id, "level": c.level, "kind": c.kind, "parent_id": c.parent_id,
                 "children": len(c.child_ids), "n_chunks": c.n_chunks, "n_entities": c.n_entities, "title": c.title,
                 "findings": len(c.findings), "evidence": " ".join(c.evidence)} for c in self.order()]
        frame = pd.DataFrame(rows, columns=EXPLORER_COLUMNS)
        frame = frame.astype({"level": "int64", "children": "int64", "n_chunks": "int64", "n_entities": "int64",
                              "findings": "int64"})
        for column in ("community_id", "kind", "parent_id", "title", "evidence"):
            frame[column] = frame[column].astype("str")
        return frame


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _refs(values: Iterable[Any]) -> tuple[str, ...]:
    return tuple(encode_ref(v) if is_ref(v) else str(v) for v in values)


def explorer_data(surface: Any, *, kb: Any = None) -> ExplorerData:
    """Read the current generation of ``surface``; chunk texts through ``kb`` (default: the surface's kb).

    Reading never builds: an unprepared surface gives no communities.

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> [(c.level, c.title) for c in explorer_data(kb.communities).order()]
    [(1, 'Platform and Atlas; Beacon and Priya Raman'), (0, 'Platform and Atlas'), (0, 'Beacon and Priya Raman')]
    >>> fresh = crux_nb.knowledge_base(id="new", communities=crux_nb.communities(model=crux_nb.models.OfflineModel()))
    >>> explorer_data(fresh.communities).communities
    ()
    """
    from ..community.frames import read_reports

    needed = ("kb", "scope", "frame", "status", "config")
    if not all(hasattr(surface, a) for a in needed) or not callable(getattr(surface, "frame", None)):
        hint = ("pass its communities: CommunityExplorer(kb.communities)" if hasattr(surface, "communities")
                else "pass kb.communities (or view.communities) of a knowledge base with communities configured.")
        raise ParameterError(OWNER, "surface", "a communities surface (kb.communities or view.communities)", surface,
                             hint=hint)
    if kb is not None and not callable(getattr(getattr(kb, "reader", None), "hydrate", None)):
        raise ParameterError(OWNER, "kb", "a KnowledgeBase (whose reader hydrates chunk refs) or None", kb)
    reader_kb = kb if kb is not None else surface.kb
    state = surface.kb.state
    frame = surface.frame("communities")
    reports = {r.community_id: r for r in read_reports(state, surface.scope)}
    infos = []
    for row in frame.sort_values(["level", "community_id"], ascending=[False, True]).itertuples(index=False):
        report = reports.get(row.community_id)
        findings = tuple(replace(f, evidence=_refs(f.evidence)) for f in (report.findings if report else ()))
        children = row.child_ids if row.child_ids is not None else ()
        infos.append(CommunityInfo(
            community_id=str(row.community_id), level=int(row.level), kind=str(row.kind),
            parent_id=_text(row.parent_id), child_ids=tuple(map(str, children)), n_chunks=int(row.n_chunks),
            n_entities=int(row.n_entities), title=report.title if report else "",
            summary=report.summary if report else "", findings=findings, has_report=report is not None))
    refs = [r for c in infos for f in c.findings for r in f.evidence]
    generation = frame["generation_id"].iloc[0] if len(frame) else None
    return ExplorerData(scope=str(surface.scope), config_id=str(surface.config.id), status=str(surface.status()),
                        generation_id=generation, view=tuple(getattr(surface, "view", (None, None))),
                        communities=tuple(infos), texts=chunk_texts(reader_kb, refs), kb_given=True)


def _role(c: CommunityInfo) -> str:
    return c.kind if c.kind in KINDS else ("leaf" if not c.child_ids else "parent")


def explorer_nodes(data: ExplorerData) -> list[TreeNode]:
    nodes = []
    for c in data.communities:
        tip = (f"{c.title or '(no report)'} ({c.community_id}) · level {c.level} · {c.kind} · "
               f"{plural(c.n_chunks, 'chunk')} · {plural(c.n_entities, 'entity', 'entities')} · "
               f"{plural(len(c.findings), 'finding')}")
        nodes.append(TreeNode(c.community_id, c.parent_id, c.level, c.title or c.community_id, _role(c),
                              str(c.n_chunks), tip, dashed=not c.has_report))
    return nodes
