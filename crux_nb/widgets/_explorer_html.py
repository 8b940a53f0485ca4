"""Static HTML and SVG for the community explorer: deterministic, CSS only, every user string escaped."""

from __future__ import annotations

from typing import Any

from ..display.html import STYLE, clip, esc
from ._coverage_html import COVERAGE_STYLE
from ._explorer_data import CommunityInfo, ExplorerData, explorer_nodes
from .layout import legend_html, plural as _plural, tree_svg

__all__ = ["EXPLORER_STYLE", "explorer_nodes", "explorer_svg", "header_html", "tree_html", "table_html",
           "detail_html", "static_html", "explorer_html"]

EXPLORER_STYLE = """<style>
.crux .crux-key-root{background:#ede9fe;border-color:#7c3aed!important}
.crux .crux-key-parent{background:#dbeafe;border-color:#2563eb!important}
.crux .crux-key-leaf{background:#f0fdf4;border-color:#16a34a!important}
.crux .crux-report-finding{margin:6px 0 8px;padding-left:8px;border-left:3px solid #e5e7eb}
</style>"""

KIND_COLORS = {"root": ("#ede9fe", "#7c3aed"), "parent": ("#dbeafe", "#2563eb"), "leaf": ("#f0fdf4", "#16a34a")}


def explorer_svg(data: ExplorerData, selected: CommunityInfo | None = None) -> str:
    """The community tree; ``selected`` and the links up to its root highlighted.

    Examples
    --------
    >>> from crux_nb.widgets import CommunityInfo, ExplorerData
    >>> def info(cid, level, parent, children=()):
    ...     return CommunityInfo(cid, level, "leaf" if not children else "parent", parent, children, 1, 1, cid.title(), "", ())
    >>> data = ExplorerData(scope="corpus", config_id="c", status="ready", generation_id="g1", view=(None, None),
    ...                     communities=(info("top", 2, None, ("mid",)), info("mid", 1, "top", ("leaf",)), info("leaf", 0, "mid")))
    >>> svg = explorer_svg(data, data.find("leaf"))
    >>> svg.startswith("<svg"), svg.count('data-kind="leaf"'), svg.count('data-kind="parent"')
    (True, 1, 2)
    """
    on, on_edges = set(), set()
    if selected is not None:
        chain = (selected.community_id, *data.ancestors(selected.community_id))
        on = {selected.community_id}
        on_edges = set(zip(chain[1:], chain))
    return tree_svg(explorer_nodes(data), KIND_COLORS, on=on, on_edges=on_edges, css="crux-community-svg",
                    label="community tree", role_attr="data-kind")


def header_html(data: ExplorerData) -> str:
    n = len(data.communities)
    where = data.scope if data.view[0] is None else f"view {data.view[0]}@{data.view[1]}"
    title = (f"communities {data.config_id!r} ({where}): {_plural(n, 'community', 'communities')} in "
             f"{_plural(len(data.levels), 'level')}")
    badges = "".join(f'<span class="crux-badge">{esc(k)}: {esc(v)}</span>'
                     for k, v in (("status", data.status), ("generation", data.generation_id or "none")))
    note = ""
    if not n:
        note = '<div class="crux-muted">not built yet: call prepare()</div>'
    elif data.status != "ready":
        note = (f'<div class="crux-muted crux-stale">⚠ {esc(data.status)}: this generation was built from older '
                f'input; call prepare() to rebuild</div>')
    legend = ""
    if n:
        legend = (legend_html([("root", "root"), ("parent", "parent"), ("leaf", "leaf"), ("on", "selected")])
                  + '<div class="crux-muted">the number in a node: its chunks</div>')
    return (f'{STYLE}{COVERAGE_STYLE}{EXPLORER_STYLE}<div class="crux crux-coverage-part crux-header">'
            f'<div class="crux-title">{esc(title)}</div><div>{badges}</div>{note}{legend}</div>')


def tree_html(data: ExplorerData, selected: CommunityInfo | None = None) -> str:
    if not data.communities:
        return '<div class="crux crux-coverage-part crux-tree"></div>'
    return (f'<div class="crux crux-coverage-part crux-tree"><div class="crux crux-graph-box">'
            f'{explorer_svg(data, selected)}</div></div>')


def table_html(data: ExplorerData, selected: CommunityInfo | None = None) -> str:
    if not data.communities:
        return '<div class="crux crux-coverage-part crux-communities-table"></div>'
    rows = []
    for c in data.order():
        cls = ("crux-community-row crux-selected" if selected is not None and c.community_id == selected.community_id
               else "crux-community-row")
        indent = "\u00a0\u00a0" * data.depth(c.community_id)
        rows.append(f'<tr class="{cls}" data-id="{esc(c.community_id)}"><td>{c.level}</td>'
                    f'<td class="crux-ref">{esc(c.community_id)}</td><td>{indent}{esc(clip(c.title or "—", 80))}</td>'
                    f'<td class="crux-size">{c.n_chunks}</td><td>{c.n_entities}</td><td>{len(c.findings)}</td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ("level", "community", "title", "chunks", "entities", "findings"))
    return (f'<div class="crux crux-coverage-part crux-communities-table"><table class="crux-table">'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _chunk(ref: str, data: ExplorerData) -> str:
    text = data.texts.get(ref)
    body = (f'<div class="crux-text">{esc(clip(text, 400))}</div>' if text is not None
            else '<div class="crux-muted">not a chunk of the knowledge base (or removed since)</div>')
    return f'<div class="crux-chunk" data-ref="{esc(ref)}"><span class="crux-ref">{esc(ref)}</span>{body}</div>'


def detail_html(data: ExplorerData, selected: CommunityInfo | None) -> str:
    """The selected community's report: title, summary, and each finding with the chunks it cites."""
    if selected is None:
        note = "no community selected" if data.communities else "no communities"
        return f'<div class="crux crux-coverage-part crux-detail"><div class="crux-muted">{note}</div></div>'
    c = selected
    meta = [("community", f'<span class="crux-ref">{esc(c.community_id)}</span>'), ("level", str(c.level)),
            ("kind", esc(c.kind)), ("parent", esc(c.parent_id or "—")),
            ("children", esc(", ".join(c.child_ids) or "—")),
            ("size", esc(f"{_plural(c.n_chunks, 'chunk')}, {_plural(c.n_entities, 'entity', 'entities')}"))]
    table = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in meta)
    if not c.has_report:
        body = '<div class="crux-muted">no report was written for this community</div>'
    else:
        items = []
        for f in c.findings:
            chunks = "".join(_chunk(r, data) for r in f.evidence) or '<div class="crux-muted">no evidence</div>'
            items.append(f'<div class="crux-report-finding" data-finding="{esc(f.id)}"><div><span class="crux-ref">'
                         f'{esc(f.id)}</span> {esc(clip(f.statement, 400))}</div>{chunks}</div>')
        body = (f'<div class="crux-text crux-summary">{esc(c.summary)}</div>'
                f'<div class="crux-title">{esc(_plural(len(c.findings), "finding"))}</div>{"".join(items)}')
    return (f'<div class="crux crux-coverage-part crux-detail" data-id="{esc(c.community_id)}">'
            f'<div class="crux-title">selected: {esc(c.title or c.community_id)}</div>'
            f'<table class="crux-detail-table"><tbody>{table}</tbody></table>{body}</div>')


def static_html(data: ExplorerData, *, selected: CommunityInfo | None = None) -> str:
    parts = [header_html(data), tree_html(data, selected), table_html(data, selected), detail_html(data, selected)]
    return f'<div class="crux-explorer crux-explorer-static">{"".join(parts)}</div>'


def explorer_html(surface: Any, *, kb: Any = None, selected: str | None = None) -> str:
    """Static HTML of a communities surface (what :class:`CommunityExplorer` shows, without widgets).

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import explorer_html
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> html = explorer_html(kb.communities)
    >>> html.startswith('<div class="crux-explorer crux-explorer-static">'), "Platform and Atlas" in html
    (True, True)
    """
    from ._explorer_data import explorer_data

    data = explorer_data(surface, kb=kb)
    order = data.order()
    chosen = data.find(selected) if selected is not None else (order[0] if order else None)
    return static_html(data, selected=chosen)
