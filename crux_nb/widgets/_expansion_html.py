"""Static HTML and SVG for the expansion view: deterministic, CSS only, every user string escaped.

The SVG is a layered drawing: seeds in the first column, then every node in the column of
its earliest position on a shown path (intermediate entities and chunks, added hits).
Arrowheads are drawn as polygons, so the SVG needs no ids.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from ..display.html import STYLE, clip, esc, warnings_html
from ..retrieval.expand import Expansion
from ._expansion_data import ARROW_LEFT, ARROW_RIGHT, ExpansionData, reason_text, score_parts

__all__ = ["EXPANSION_STYLE", "expansion_svg", "paths_html", "detail_html", "header_html", "static_html"]

EXPANSION_STYLE = """<style>
.crux.crux-expansion-part{max-width:100%}
.crux .crux-legend .crux-key{display:inline-block;padding:0 6px;margin-right:6px;border-radius:4px;border:1px solid}
.crux .crux-key-seed{background:#dbeafe;border-color:#2563eb!important}
.crux .crux-key-entity{background:#fef3c7;border-color:#d97706!important}
.crux .crux-key-chunk{background:#f3f4f6;border-color:#6b7280!important}
.crux .crux-key-hit{background:#dcfce7;border-color:#16a34a!important}
.crux .crux-key-on{background:#fff;border-color:#e11d48!important;color:#e11d48}
.crux .crux-path .crux-ref{font-family:var(--jp-code-font-family,monospace);font-size:12px;white-space:nowrap}
.crux .crux-path .crux-edge-type{color:#b45309;font-size:12px;white-space:nowrap}
.crux table.crux-table tr.crux-selected td{background:#fff1f2}
.crux table.crux-table tr.crux-selected td:first-child{box-shadow:inset 3px 0 0 #e11d48}
.crux.crux-graph-box{overflow:auto;max-width:100%}
.crux table.crux-detail-table{border-collapse:collapse}
.crux table.crux-detail-table th{text-align:left;vertical-align:top;padding:1px 12px 1px 0;color:#555;font-weight:600}
.crux table.crux-detail-table td{padding:1px 0;vertical-align:top}
</style>"""

# drawing constants (pixels)
NODE_W, NODE_H, COL_GAP, ROW_GAP, MARGIN, LABEL_CHARS = 160, 28, 72, 16, 16, 22
COLORS = {  # role: (fill, stroke)
    "seed": ("#dbeafe", "#2563eb"),
    "entity": ("#fef3c7", "#d97706"),
    "chunk": ("#f3f4f6", "#6b7280"),
    "hit": ("#dcfce7", "#16a34a"),
}
ON, EDGE = "#e11d48", "#94a3b8"


def _fmt(v: float) -> str:
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _role(ref: str, seeds: set[str], hits: set[str]) -> str:
    if ref in seeds:
        return "seed"
    if ref in hits:
        return "hit"
    return "entity" if ref.startswith("entity:") else "chunk"


def _layout(data: ExpansionData, shown: tuple[Expansion, ...]) -> tuple[list[list[str]], dict[str, int]]:
    """Columns of node refs: seeds first, then by earliest path position; rows ordered by barycentre."""
    seeds = list(dict.fromkeys(data.seeds + tuple(x.path[0] for x in shown)))
    seed_set = set(seeds)
    layer: dict[str, int] = {s: 0 for s in seeds}
    order: dict[str, int] = {s: i for i, s in enumerate(seeds)}
    for x in shown:
        for i, ref in enumerate(x.path):
            if ref not in seed_set:
                layer[ref] = min(layer.get(ref, i), i)
            order.setdefault(ref, len(order))
    preds: dict[str, list[str]] = {}
    for x in shown:
        for a, b in zip(x.path, x.path[1:]):
            if layer[a] < layer[b]:
                preds.setdefault(b, []).append(a)
    depth = max(layer.values(), default=0)
    columns: list[list[str]] = [[] for _ in range(depth + 1)]
    columns[0] = seeds
    row: dict[str, int] = {s: i for i, s in enumerate(seeds)}
    for c in range(1, depth + 1):
        members = [r for r in order if layer.get(r) == c]

        def centre(ref: str) -> tuple[float, int]:
            ps = [row[p] for p in preds.get(ref, ()) if p in row]
            return (sum(ps) / len(ps) if ps else math.inf, order[ref])

        columns[c] = sorted(members, key=centre)
        row.update({r: i for i, r in enumerate(columns[c])})
    return columns, layer


def _arrow(x: float, y: float, dx: float, dy: float, colour: str) -> str:
    n = math.hypot(dx, dy) or 1.0
    ux, uy = dx / n, dy / n
    bx, by = x - 8 * ux, y - 8 * uy
    pts = [(x, y), (bx - 4 * uy, by + 4 * ux), (bx + 4 * uy, by - 4 * ux)]
    return f'<polygon points="{" ".join(f"{_fmt(px)},{_fmt(py)}" for px, py in pts)}" fill="{colour}"/>'


def expansion_svg(data: ExpansionData, shown: Iterable[Expansion], selected: Expansion | None = None) -> str:
    """The expansion subgraph of ``shown`` as an SVG string; ``selected``'s path highlighted.

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
    >>> svg = expansion_svg(data, data.expansions, selected=near)
    >>> svg.startswith("<svg"), svg.count('<g class="crux-edge crux-on"'), "Project X" in svg
    (True, 2, True)
    """
    shown = tuple(shown)
    if selected is not None and selected not in shown:
        selected = None
    columns, _ = _layout(data, shown)
    pos, width, height = _positions(columns)
    col_of = {ref: c for c, members in enumerate(columns) for ref in members}
    seeds = set(columns[0]) if columns else set()
    used_seeds = {x.path[0] for x in shown}
    hits = {x.ref for x in shown}
    on_nodes = set(selected.path) if selected else set()
    on_edges = set(zip(selected.path, selected.path[1:], selected.edges)) if selected else set()

    edges: dict[tuple[str, str, str], None] = {}
    for x in shown:
        for a, b, t in zip(x.path, x.path[1:], x.edges):
            edges.setdefault((a, b, t), None)
    # draw highlighted edges last so they sit on top
    ordered = sorted(edges, key=lambda e: e in on_edges)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="crux-expansion-svg" width="{_fmt(width)}" '
           f'height="{_fmt(height)}" viewBox="0 0 {_fmt(width)} {_fmt(height)}" style="max-width:100%;height:auto" '
           f'role="img" '
           f'aria-label="expansion subgraph" font-family="sans-serif" font-size="12">']
    for a, b, t in ordered:
        out.append(_edge_svg(a, b, t, pos, col_of, on=(a, b, t) in on_edges, faded=selected is not None))
    for ref, (x, y) in pos.items():
        role = _role(ref, seeds, hits)
        out.append(_node_svg(ref, x, y, role, data.label(ref), on=ref in on_nodes, selected=selected is not None,
                             idle=role == "seed" and ref not in used_seeds))
    out.append("</svg>")
    return "".join(out)


def _positions(columns: list[list[str]]) -> tuple[dict[str, tuple[float, float]], float, float]:
    """Each node's top-left corner (columns left to right, each centred vertically), and the drawing's size."""
    tallest = max((len(c) for c in columns), default=0)
    width = MARGIN * 2 + len(columns) * NODE_W + (len(columns) - 1) * COL_GAP + 60
    height = MARGIN * 2 + max(tallest, 1) * (NODE_H + ROW_GAP) - ROW_GAP
    pos: dict[str, tuple[float, float]] = {}
    for c, members in enumerate(columns):
        offset = (tallest - len(members)) * (NODE_H + ROW_GAP) / 2
        for r, ref in enumerate(members):
            pos[ref] = (MARGIN + c * (NODE_W + COL_GAP), MARGIN + offset + r * (NODE_H + ROW_GAP))
    return pos, width, height


def _edge_svg(a: str, b: str, t: str, pos: dict[str, tuple[float, float]], col_of: dict[str, int], *, on: bool,
              faded: bool) -> str:
    """One edge as a cubic Bézier from ``a`` to ``b`` with an arrow head and its type at the midpoint."""
    (xa, ya), (xb, yb) = pos[a], pos[b]
    ya, yb = ya + NODE_H / 2, yb + NODE_H / 2
    ca, cb = col_of[a], col_of[b]
    if cb > ca:
        x0, x3 = xa + NODE_W, xb
        mid = (x3 - x0) / 2
        p = [(x0, ya), (x0 + mid, ya), (x3 - mid, yb), (x3, yb)]
    elif cb == ca:  # within a column: a loop out to the right
        x0 = xa + NODE_W
        bend = 36 + abs(yb - ya) / 6
        p = [(x0, ya), (x0 + bend, ya), (x0 + bend, yb), (x0, yb)]
    else:
        x0, x3 = xa, xb + NODE_W
        p = [(x0, ya), (x0 - 40, ya), (x3 + 40, yb), (x3, yb)]
    cls = "crux-edge crux-on" if on else ("crux-edge crux-off" if faded else "crux-edge")
    colour, sw = (ON, "3") if on else (EDGE, "1.5")
    opacity = "" if on or not faded else ' opacity="0.35"'
    d = "M{} C{} {} {}".format(*(f"{_fmt(px)},{_fmt(py)}" for px, py in p))
    lx = (p[0][0] + 3 * p[1][0] + 3 * p[2][0] + p[3][0]) / 8  # the Bézier midpoint
    ly = (p[0][1] + 3 * p[1][1] + 3 * p[2][1] + p[3][1]) / 8
    return (f'<g class="{cls}" data-from="{esc(a)}" data-to="{esc(b)}" data-type="{esc(t)}"{opacity}>'
            f'<title>{esc(a)} {ARROW_LEFT}{esc(t)}{ARROW_RIGHT} {esc(b)}</title>'
            f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{sw}"/>'
            + _arrow(p[3][0], p[3][1], p[3][0] - p[2][0], p[3][1] - p[2][1], colour)
            + f'<text x="{_fmt(lx)}" y="{_fmt(ly - 3)}" text-anchor="middle" font-size="11" '
              f'fill="{"#9f1239" if on else "#92400e"}" stroke="#fff" stroke-width="3" '
              f'paint-order="stroke">{esc(t)}</text></g>')


def _node_svg(ref: str, x: float, y: float, role: str, label: str, *, on: bool, selected: bool, idle: bool) -> str:
    """One node: a box (a pill for entities) with its label; faded when another path is selected."""
    fill, stroke = COLORS[role]
    classes = ["crux-node", f"crux-node-{role}"]
    if on:
        classes.append("crux-on")
    if idle:
        classes.append("crux-idle")
    faded = (selected and not on) or idle
    opacity = ' opacity="0.4"' if faded else ""
    dash = ' stroke-dasharray="4 3"' if idle else ""
    rx = NODE_H / 2 if role == "entity" else 4
    return (f'<g class="{" ".join(classes)}" data-ref="{esc(ref)}"{opacity}><title>{esc(ref)}</title>'
            f'<rect x="{_fmt(x)}" y="{_fmt(y)}" width="{NODE_W}" height="{NODE_H}" rx="{_fmt(rx)}" '
            f'fill="{fill}" stroke="{ON if on else stroke}" stroke-width="{"2.5" if on else "1.2"}"{dash}/>'
            f'<text x="{_fmt(x + NODE_W / 2)}" y="{_fmt(y + NODE_H / 2 + 4)}" text-anchor="middle" '
            f'fill="#111827">{esc(clip(label, LABEL_CHARS))}</text></g>')


def _path_cell(x: Expansion) -> str:
    parts = [f'<span class="crux-ref">{esc(x.path[0])}</span>']
    for t, ref in zip(x.edges, x.path[1:]):
        parts.append(f'<span class="crux-edge-type">{ARROW_LEFT}{esc(t)}{ARROW_RIGHT}</span>')
        parts.append(f'<span class="crux-ref">{esc(ref)}</span>')
    return f'<span class="crux-path">{" ".join(parts)}</span>'


def _reason_cell(data: ExpansionData, x: Expansion) -> str:
    """Why the relevance ranking placed the hit: the entities on its path with their weights, the score parts."""
    if x.reason is None:
        return '<span class="crux-muted">upstream order</span>'
    r = x.reason
    via = " ".join(f'<span class="crux-ref" title="{esc(ref)}">{esc(clip(data.label(ref), 24))}</span> '
                   f'<span class="crux-muted">1/{round(1 / w):d}</span>' if w > 0 else esc(ref) for ref, w in r.entities)
    parts = f'<span class="crux-score-parts">{esc(score_parts(r))}</span>'
    return (f'<div class="crux-reason-via">{via}</div>' if via else "") + parts


def paths_html(data: ExpansionData, shown: Iterable[Expansion], selected: Expansion | None = None) -> str:
    """The table of shown paths, one ``crux-hit-row`` per added hit."""
    shown = tuple(shown)
    if not shown:
        note = "no added hits" if not data.expansions else "no added hit matches the filters"
        return f'<div class="crux crux-expansion-part crux-paths"><div class="crux-muted">{note}</div></div>'
    rows = []
    for x in shown:
        cls = "crux-hit-row crux-selected" if selected is not None and x.key == selected.key else "crux-hit-row"
        rows.append(f'<tr class="{cls}" data-key="{esc(x.key)}"><td>{data.rank(x)}</td>'
                    f'<td class="crux-hit">{esc(x.ref)}</td><td class="crux-seed">{esc(x.seed)}</td>'
                    f'<td>{_path_cell(x)}</td><td class="crux-distance">{x.distance}</td>'
                    f'<td class="crux-score">{x.score:.4f}</td>'
                    f'<td class="crux-reason">{_reason_cell(data, x)}</td>'
                    f'<td class="crux-content">{esc(clip(data.contents.get(x.key, ""), 80))}</td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ("#", "added hit", "seed", "path", "distance", "score", "reason",
                                              "content"))
    return (f'<div class="crux crux-expansion-part crux-paths"><table class="crux-table crux-path-table">'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def detail_html(data: ExpansionData, selected: Expansion | None) -> str:
    """The selected hit in full: seed, path, distance, score, supporting seeds, text."""
    if selected is None:
        return '<div class="crux crux-expansion-part crux-detail"><div class="crux-muted">no hit selected</div></div>'
    x = selected
    text = data.contents.get(x.key)
    rows = [("hit", esc(x.key)), ("seed", esc(x.seed)), ("path", _path_cell(x)),
            ("distance", str(x.distance)), ("score", f"{x.score:.4f}"),
            ("supports", esc(", ".join(x.supports)))]
    if x.reason is not None:
        rows.insert(5, ("why", esc(reason_text(x.reason, data.label))))
    if text is not None:
        rows.append(("text", f'<div class="crux-text">{esc(clip(text, 600))}</div>'))
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return (f'<div class="crux crux-expansion-part crux-detail" data-key="{esc(x.key)}">'
            f'<div class="crux-title">selected: {esc(x.ref)}</div>'
            f'<table class="crux-detail-table"><tbody>{body}</tbody></table></div>')


def header_html(data: ExpansionData, shown: Iterable[Expansion]) -> str:
    shown = tuple(shown)
    n, s = len(data.expansions), len(data.seeds)
    title = (f"{data.step_id}: {n} added hit{'s' if n != 1 else ''} from {s} seed{'s' if s != 1 else ''}"
             f" for {clip(data.query, 80)!r}")
    if len(shown) != n:
        title += f" ({len(shown)} shown)"
    legend = "".join(f'<span class="crux-key crux-key-{k}">{k}</span>' for k in ("seed", "entity", "chunk", "hit"))
    legend += '<span class="crux-key crux-key-on">selected path</span>'
    warn = warnings_html(data.warnings)
    if data.filled:  # added without a graph route: say so, since they have no path to draw
        f = len(data.filled)
        warn += (f'<div class="crux-muted">+ {f} hit{"s" if f != 1 else ""} from the retrieve step\'s next candidates '
                 f'(they outranked the remaining graph candidates): {esc(", ".join(data.filled))}</div>')
    return (f'{STYLE}{EXPANSION_STYLE}<div class="crux crux-expansion-part crux-header">'
            f'<div class="crux-title">{esc(title)}</div><div class="crux-legend">{legend}</div>{warn}</div>')


def graph_html(data: ExpansionData, shown: Iterable[Expansion], selected: Expansion | None) -> str:
    return (f'<div class="crux crux-expansion-part crux-graph-box">{expansion_svg(data, shown, selected)}</div>')


def static_html(data: ExpansionData, *, shown: Iterable[Expansion] | None = None,
                selected: Expansion | None = None) -> str:
    """The whole view as static HTML (for outputs rendered without a widget manager)."""
    shown = data.expansions if shown is None else tuple(shown)
    parts = [header_html(data, shown), graph_html(data, shown, selected), paths_html(data, shown, selected),
             detail_html(data, selected)]
    return f'<div class="crux-expansion crux-expansion-static">{"".join(parts)}</div>'


def expansion_html(result: Any, *, step: str | None = None, kb: Any = None, types: Iterable[str] | None = None,
                   max_distance: int | None = None, selected: str | None = None) -> str:
    """Static HTML of a result's expansion step (what :class:`ExpansionView` shows, without widgets).

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import expansion_html
    >>> kb = crux_nb.datasets.load_tiny(entities=True)
    >>> steps = [crux_nb.retrieve(limit=1), crux_nb.expand_relations(types=["mentions"], depth=2)]
    >>> result = kb.recipe(steps=steps).retrieve_with_trace("When does Beacon launch?")
    >>> html = expansion_html(result, max_distance=1)
    >>> html.startswith('<div class="crux-expansion crux-expansion-static">'), "chunk:ops.md:c0000" in html
    (True, False)
    """
    from ._expansion_data import expansion_data

    data = expansion_data(result, step=step, kb=kb)
    shown = data.visible(types, max_distance)
    chosen = data.find(selected) if selected is not None else (shown[0] if shown else None)
    return static_html(data, shown=shown, selected=chosen)
