"""Static HTML and SVG for the coverage view: deterministic, CSS only, every user string escaped.

The community hierarchy is a tidy tree drawn left to right: one column per level (roots at the
left, leaves at the right), one row per leaf, each parent centred on its children. The tree
drawing (:func:`tree_layout`, :func:`tree_svg`) is shared with the community explorer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..display.html import STYLE, clip, esc
from ._coverage_data import STATUS_LABELS, STATUSES, CoverageData, CoverageFinding

__all__ = ["COVERAGE_STYLE", "TreeNode", "tree_layout", "tree_svg", "coverage_svg", "header_html", "overview_html",
           "graph_html", "batches_html", "findings_html", "detail_html", "static_html", "coverage_html"]

COVERAGE_STYLE = """<style>
.crux.crux-coverage-part{max-width:100%}
.crux .crux-legend .crux-key{display:inline-block;padding:0 6px;margin:0 6px 2px 0;border-radius:4px;border:1px solid}
.crux .crux-key-mapped{background:#dcfce7;border-color:#16a34a!important}
.crux .crux-key-visited{background:#dbeafe;border-color:#2563eb!important}
.crux .crux-key-skipped{background:#fef3c7;border-color:#d97706!important}
.crux .crux-key-truncated{background:#ffedd5;border-color:#ea580c!important}
.crux .crux-key-excluded{background:#e5e7eb;border-color:#374151!important;border-style:dashed!important}
.crux .crux-key-unread{background:#fff;border-color:#cbd5e1!important}
.crux .crux-key-on{background:#fff;border-color:#e11d48!important;color:#e11d48}
.crux .crux-cards{display:flex;flex-wrap:wrap;gap:8px 28px;align-items:flex-start}
.crux .crux-card .crux-title{font-size:12px;color:#374151}
.crux .crux-basis{margin:0 0 4px}
.crux .crux-bar{display:inline-block;height:8px;background:#e5e7eb;width:80px;vertical-align:middle;border-radius:2px}
.crux .crux-bar>span{display:block;height:8px;background:#16a34a;border-radius:2px}
.crux td.crux-mismatch{background:#fff7ed;color:#9a3412;font-weight:600}
.crux .crux-cut{color:#9a3412}
.crux .crux-none{color:#166534}
.crux .crux-ref{font-family:var(--jp-code-font-family,monospace);font-size:12px}
.crux table.crux-table tr.crux-selected td{background:#fff1f2}
.crux table.crux-table tr.crux-selected td:first-child{box-shadow:inset 3px 0 0 #e11d48}
.crux.crux-graph-box{overflow:auto;max-width:100%;max-height:560px}
.crux table.crux-detail-table{border-collapse:collapse}
.crux table.crux-detail-table th{text-align:left;vertical-align:top;padding:1px 12px 1px 0;color:#555;font-weight:600}
.crux table.crux-detail-table td{padding:1px 0;vertical-align:top}
.crux .crux-cited,.crux .crux-chunk{margin:4px 0 6px;padding-left:8px;border-left:3px solid #e5e7eb}
.crux .crux-chunk .crux-text{font-size:12px}
</style>"""

# drawing constants (pixels)
NODE_W, NODE_H, COL_GAP, ROW_GAP, MARGIN, BADGE_CHARS = 240, 28, 56, 8, 12, 9
STATUS_COLORS = {  # status: (fill, stroke)
    "mapped": ("#dcfce7", "#16a34a"),
    "visited": ("#dbeafe", "#2563eb"),
    "skipped": ("#fef3c7", "#d97706"),
    "truncated": ("#ffedd5", "#ea580c"),
    "excluded": ("#e5e7eb", "#374151"),
    "unread": ("#ffffff", "#cbd5e1"),
}
ON, EDGE = "#e11d48", "#94a3b8"
RESOLUTION_TEXT = {
    "recorded": "cites (ids recorded on the hit)",
    "verified": "cites (verified against the finding target)",
    "inferred": "probably cites (matched by statement and supports; not verified against the finding target)",
    "unresolved": "cites report findings that are not among the searched units",
}


def _fmt(v: float) -> str:
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


# ------------------------------------------------------------------------------------ tree drawing
@dataclass(frozen=True)
class TreeNode:
    """A node to draw: ``role`` picks its colours, ``badge`` is a short right-aligned text."""

    id: str
    parent_id: str | None
    level: int
    label: str
    role: str
    badge: str = ""
    tooltip: str = ""
    dashed: bool = False


def tree_layout(nodes: Iterable[TreeNode]) -> tuple[dict[str, tuple[int, float]], list[str]]:
    """``{id: (column, row)}`` and the ids in drawing (depth-first) order.

    Columns follow levels (the highest level at the left); a child sits at least one column right
    of its parent. Leaves take consecutive rows; a parent is centred on its first and last child.
    A node whose parent is not drawn is a root.
    """
    nodes = list(nodes)
    ids = {n.id for n in nodes}
    children: dict[str, list[TreeNode]] = {}
    roots = []
    for n in nodes:
        if n.parent_id is not None and n.parent_id in ids and n.parent_id != n.id:
            children.setdefault(n.parent_id, []).append(n)
        else:
            roots.append(n)
    top = max((n.level for n in nodes), default=0)
    key = (lambda n: (-n.level, n.id))
    pos: dict[str, tuple[int, float]] = {}
    order: list[str] = []
    next_row = 0

    def place(node: TreeNode, min_col: int) -> float:
        nonlocal next_row
        col = max(top - node.level, min_col)
        pos[node.id] = (col, 0.0)
        order.append(node.id)
        kids = sorted((c for c in children.get(node.id, ()) if c.id not in pos), key=key)
        rows = [place(c, col + 1) for c in kids]
        if rows:
            row = (rows[0] + rows[-1]) / 2
        else:
            row = float(next_row)
            next_row += 1
        pos[node.id] = (col, row)
        return row

    for root in sorted(roots, key=key):
        place(root, 0)
    for node in sorted(nodes, key=key):  # a parent cycle: nothing reached it from a root
        if node.id not in pos:
            place(node, 0)
    return pos, order


def tree_svg(nodes: Iterable[TreeNode], colors: Mapping[str, tuple[str, str]], *, on: Iterable[str] = (),
             on_edges: Iterable[tuple[str, str]] = (), css: str = "crux-tree-svg",
             label: str = "community hierarchy", role_attr: str = "data-role") -> str:
    """The tree as an SVG string; nodes in ``on`` (and edges in ``on_edges``) highlighted."""
    nodes = list(nodes)
    by_id = {n.id: n for n in nodes}
    pos, order = tree_layout(nodes)
    on, on_edges = set(on), set(on_edges)
    cols = max((c for c, _ in pos.values()), default=0) + 1
    rows = max((r for _, r in pos.values()), default=0.0) + 1
    width = MARGIN * 2 + cols * NODE_W + (cols - 1) * COL_GAP
    height = MARGIN * 2 + max(rows, 1) * (NODE_H + ROW_GAP) - ROW_GAP

    def xy(node_id: str) -> tuple[float, float]:
        col, row = pos[node_id]
        return MARGIN + col * (NODE_W + COL_GAP), MARGIN + row * (NODE_H + ROW_GAP)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="{esc(css)}" width="{_fmt(width)}" height="{_fmt(height)}" '
           f'viewBox="0 0 {_fmt(width)} {_fmt(height)}" style="max-width:100%;height:auto" role="img" '
           f'aria-label="{esc(label)}" font-family="sans-serif" font-size="12">']
    edges = [(by_id[i].parent_id, i) for i in order if by_id[i].parent_id in pos and by_id[i].parent_id != i]
    for a, b in sorted(edges, key=lambda e: e in on_edges):  # highlighted edges on top
        (xa, ya), (xb, yb) = xy(a), xy(b)
        x0, y0, x3, y3 = xa + NODE_W, ya + NODE_H / 2, xb, yb + NODE_H / 2
        mid = (x3 - x0) / 2
        hot = (a, b) in on_edges
        colour, sw = (ON, "2.5") if hot else (EDGE, "1.2")
        out.append(f'<path class="crux-link{" crux-on" if hot else ""}" data-from="{esc(a)}" data-to="{esc(b)}" '
                   f'd="M{_fmt(x0)},{_fmt(y0)} C{_fmt(x0 + mid)},{_fmt(y0)} {_fmt(x3 - mid)},{_fmt(y3)} '
                   f'{_fmt(x3)},{_fmt(y3)}" fill="none" stroke="{colour}" stroke-width="{sw}"/>')
    for node_id in order:
        node = by_id[node_id]
        x, y = xy(node_id)
        fill, stroke = colors[node.role]
        hot = node_id in on
        classes = f"crux-node crux-node-{node.role}" + (" crux-on" if hot else "")
        dash = ' stroke-dasharray="4 3"' if node.dashed else ""
        badge = (f'<text class="crux-node-badge" x="{_fmt(x + NODE_W - 6)}" y="{_fmt(y + NODE_H / 2 + 4)}" '
                 f'text-anchor="end" font-size="11" font-weight="600" fill="#374151">'
                 f'{esc(clip(node.badge, BADGE_CHARS))}</text>') if node.badge else ""
        # about 6.6 px a character at 12 px, 7 px for the bold 11 px badge
        room = NODE_W - 16 - (7 * len(clip(node.badge, BADGE_CHARS)) + 8 if node.badge else 0)
        chars = int(room / 6.6)
        out.append(f'<g class="{classes}" data-id="{esc(node_id)}" {role_attr}="{esc(node.role)}">'
                   f'<title>{esc(node.tooltip or node.label)}</title>'
                   f'<rect x="{_fmt(x)}" y="{_fmt(y)}" width="{NODE_W}" height="{NODE_H}" rx="4" fill="{fill}" '
                   f'stroke="{ON if hot else stroke}" stroke-width="{"2.5" if hot else "1.2"}"{dash}/>'
                   f'<text x="{_fmt(x + 8)}" y="{_fmt(y + NODE_H / 2 + 4)}" fill="#111827">'
                   f'{esc(clip(node.label or node_id, max(chars, 8)))}</text>{badge}</g>')
    out.append("</svg>")
    return "".join(out)


def legend_html(keys: Iterable[tuple[str, str]]) -> str:
    return ('<div class="crux-legend">' + "".join(f'<span class="crux-key crux-key-{esc(k)}">{esc(text)}</span>'
                                                  for k, text in keys) + "</div>")


# ------------------------------------------------------------------------------------ coverage parts
def _rating_text(value: float | None) -> str:
    return "" if value is None else _fmt(value)


def coverage_nodes(data: CoverageData) -> list[TreeNode]:
    nodes = []
    drawn = {c for c, _, _ in data.hierarchy()}
    for cid, parent, level in data.hierarchy():
        status = data.status(cid)
        rating, batch = data.rating(cid), data.batch_of(cid)
        title = data.title(cid)
        tip = [f"{title} ({cid})" if title else cid, f"level {level}", STATUS_LABELS[status]]
        if rating is not None and rating.rating is not None:
            tip.append(f"rating {_rating_text(rating.rating)}")
        if batch is not None:
            tip.append(f"batch {batch.index + 1}")
        if parent is not None and parent not in drawn:
            tip.append(f"parent {parent} not drawn")
        nodes.append(TreeNode(cid, parent, level, title or cid, status,
                              _rating_text(rating.rating) if rating is not None else "", " · ".join(tip),
                              dashed=status == "excluded"))
    return nodes


def coverage_svg(data: CoverageData, selected: CoverageFinding | None = None) -> str:
    """The community hierarchy coloured by status, with ratings; ``selected``'s cited reports highlighted."""
    on = set(selected.cited_communities) if selected is not None else set()
    return tree_svg(coverage_nodes(data), STATUS_COLORS, on=on, css="crux-hierarchy-svg",
                    label="community hierarchy by coverage status", role_attr="data-status")


def header_html(data: CoverageData) -> str:
    n = len(data.findings)
    what = _plural(n, "finding") if data.has_hits else "trace only"
    title = f"{data.step_id}: {what} for {clip(data.query, 80)!r}"
    view = data.view
    scope = f"view {view.get('id')}@{view.get('view_revision')}" if view else "whole corpus"
    badges = [("coverage", data.coverage), ("scan", data.scan), ("detail", data.detail), ("reads", scope)]
    badge = "".join(f'<span class="crux-badge crux-badge-{esc(k)}">{esc(k)}: {esc(v)}</span>' for k, v in badges
                    if v is not None)
    gens = ", ".join(data.generations) or "none"
    warn = "".join(f'<div class="crux-muted">⚠ {esc(w)}</div>' for w in data.warnings)
    return (f'{STYLE}{COVERAGE_STYLE}<div class="crux crux-coverage-part crux-header">'
            f'<div class="crux-title">{esc(title)}</div><div>{badge}</div>'
            f'<div class="crux-basis"><b>coverage {esc(data.coverage)}</b>: {esc(data.coverage_basis)}</div>'
            f'<div class="crux-generations crux-muted">{esc(_plural(len(data.generations), "generation"))}: '
            f'<span class="crux-ref">{esc(gens)}</span></div>{warn}</div>')


def _processed_table(data: CoverageData) -> str:
    rows = []
    for kind in ("reports", "findings"):
        avail, done = int(data.available.get(kind, 0)), int(data.processed.get(kind, 0))
        share = done / avail if avail else 0.0
        rows.append(f'<tr class="crux-processed-{kind}"><th>{kind}</th><td>{avail}</td><td>{done}</td>'
                    f'<td>{share:.0%}</td><td><span class="crux-bar"><span style="width:{share * 100:.0f}%">'
                    f'</span></span></td></tr>')
    return ('<div class="crux-card crux-processed"><div class="crux-title">available vs processed</div>'
            '<table class="crux-table"><thead><tr><th></th><th>available</th><th>processed</th><th>share</th><th></th>'
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _preflight_table(data: CoverageData) -> str:
    pre = data.preflight
    if pre is None:
        return ('<div class="crux-card crux-preflight"><div class="crux-title">preflight vs actual</div>'
                '<div class="crux-muted">no preflight recorded</div></div>')
    counts = data.call_counts()
    logged = data.calls is not None
    batches = len(data.batches)
    rows = [("reports", pre.get("reports"), data.processed.get("reports", 0)),
            ("batches", pre.get("batches"), batches),
            ("input chars", pre.get("input_chars"), sum(b.input_chars for b in data.batches)),
            ("map calls", pre.get("calls"), counts["map"] if logged else None)]
    body = []
    for name, planned, actual in rows:
        bad = planned is not None and actual is not None and planned != actual
        shown = "not logged" if actual is None else f"{actual:,}" if isinstance(actual, int) else str(actual)
        cls = ' class="crux-mismatch"' if bad else ""
        body.append(f'<tr data-row="{esc(name)}"><th>{esc(name)}</th>'
                    f'<td>{"—" if planned is None else f"{planned:,}"}</td><td{cls}>{esc(shown)}</td></tr>')
    if logged:
        rated = "not estimated" if data.adaptive else "—"
        body.append(f'<tr data-row="rating calls"><th>rating calls</th><td>{rated}</td><td>{counts["rate"]}</td></tr>')
        repairs = counts["map_repairs"] + counts["rate_repairs"]
        flag = ' class="crux-mismatch"' if repairs else ""
        body.append(f'<tr data-row="repairs"><th>repairs</th><td>—</td><td{flag}>{repairs}</td></tr>')
        if counts["failed"]:
            body.append(f'<tr data-row="failed"><th>failed calls</th><td>—</td>'
                        f'<td class="crux-mismatch">{counts["failed"]}</td></tr>')
        body.append(f'<tr data-row="model calls"><th>model calls</th><td>{pre.get("calls", "—")}</td>'
                    f'<td>{len(data.calls)}</td></tr>')
    note = ""
    if data.adaptive:
        note = '<div class="crux-muted">adaptive: the preflight counts map calls only, not rating calls</div>'
    elif not logged:
        note = '<div class="crux-muted">no call log recorded</div>'
    return ('<div class="crux-card crux-preflight"><div class="crux-title">preflight vs actual</div>'
            '<table class="crux-table"><thead><tr><th></th><th>preflight</th><th>actual</th></tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>{note}</div>')


def _adaptive_card(data: CoverageData) -> str:
    if not data.adaptive:
        return ""
    by = {d: [r for r in data.ratings if r.decision == d] for d in ("visited", "skipped", "truncated")}
    rated = sum(r.rating is not None for r in data.ratings)
    text = (f"threshold {data.threshold} · {_plural(data.rating_calls or 0, 'rating call')} · "
            f"{rated} rated · {len(by['visited'])} visited · {len(by['skipped'])} skipped · "
            f"{len(by['truncated'])} truncated")
    return (f'<div class="crux-card crux-adaptive"><div class="crux-title">adaptive descent</div>'
            f'<div>{esc(text)}</div></div>')


def truncations_html(data: CoverageData) -> str:
    cuts = data.truncations
    if not cuts:
        return ('<div class="crux-card crux-truncations"><div class="crux-title">truncations</div>'
                '<div class="crux-none">Nothing was cut: no truncation was recorded.</div></div>')
    items = []
    for t in cuts:
        ids = [str(c) for c in t.get("community_ids", ()) or ()]
        extra = {k: v for k, v in t.items() if k not in ("kind", "reason", "community_ids")}
        text = f"{t.get('kind', 'cut')}: {t.get('reason', 'no reason recorded')}"
        if ids:
            named = ", ".join(f"{data.title(c) or c} ({c})" for c in ids)
            text += f" — {_plural(len(ids), 'community', 'communities')} not read: {named}"
        if extra:
            text += " · " + ", ".join(f"{k}={v}" for k, v in sorted(extra.items()))
        items.append(f'<li class="crux-cut">{esc(text)}</li>')
    return ('<div class="crux-card crux-truncations"><div class="crux-title">truncations</div>'
            f'<div class="crux-cut"><b>⚠ Something was cut: {esc(_plural(len(cuts), "truncation"))}.</b></div>'
            f'<ul>{"".join(items)}</ul></div>')


def overview_html(data: CoverageData) -> str:
    """Available vs processed, preflight vs actual calls, the adaptive descent and truncations."""
    cards = _processed_table(data) + _preflight_table(data) + _adaptive_card(data) + truncations_html(data)
    return f'<div class="crux crux-coverage-part crux-overview"><div class="crux-cards">{cards}</div></div>'


def graph_html(data: CoverageData, selected: CoverageFinding | None = None) -> str:
    present = {data.status(c) for c, _, _ in data.hierarchy()}
    keys = [(s, STATUS_LABELS[s]) for s in STATUSES if s in present] + [("on", "cited by the selected finding")]
    n = len(data.hierarchy())
    title = f"community hierarchy: {_plural(n, 'community', 'communities')}, {len(data.mapped)} mapped"
    body = coverage_svg(data, selected) if n else '<div class="crux-muted">no communities were searched</div>'
    return (f'<div class="crux crux-coverage-part crux-hierarchy"><div class="crux-title">{esc(title)}</div>'
            f'{legend_html(keys)}<div class="crux crux-graph-box">{body}</div></div>')


def batches_html(data: CoverageData) -> str:
    if not data.batches:
        return ('<div class="crux crux-coverage-part crux-batches"><div class="crux-title">batches</div>'
                '<div class="crux-muted">no map batches</div></div>')
    rows = []
    for b in data.batches:
        calls = data.batch_calls(b)
        if data.calls is None:
            call = "not logged"
        elif not calls:
            call = "no call"
        else:
            call = "ok" if calls[-1].ok else f"failed ({calls[-1].error or 'invalid'})"
            if any(c.repaired for c in calls):
                call += " after repair"
        names = "".join(f'<div><span class="crux-ref">{esc(c)}</span> {esc(clip(data.title(c), 60))}</div>'
                        for c in b.community_ids)
        rows.append(f'<tr class="crux-batch-row" data-batch="{b.index + 1}"><td>{b.index + 1}</td>'
                    f'<td class="crux-ref">{esc(b.prompt_id)}</td><td class="crux-batch-reports">{len(b.community_ids)}'
                    f'</td><td class="crux-batch-communities">{names}</td>'
                    f'<td class="crux-batch-chars">{b.input_chars:,}</td><td>{esc(call)}</td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ("batch", "prompt", "reports", "communities", "input chars", "map call"))
    total = sum(b.input_chars for b in data.batches)
    title = f"batches: {len(data.batches)} map {'call' if len(data.batches) == 1 else 'calls'}, {total:,} input chars"
    return (f'<div class="crux crux-coverage-part crux-batches"><div class="crux-title">{esc(title)}</div>'
            f'<table class="crux-table crux-batch-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
            f'</table></div>')


def findings_html(data: CoverageData, selected: CoverageFinding | None = None) -> str:
    if not data.findings:
        note = ("no findings: the hits are not part of a trace; pass the RetrievalResult to list them"
                if not data.has_hits else "no findings: the map calls found nothing relevant")
        return f'<div class="crux crux-coverage-part crux-findings"><div class="crux-muted">{note}</div></div>'
    rows = []
    for f in data.findings:
        cls = "crux-finding-row crux-selected" if selected is not None and f.target == selected.target else \
            "crux-finding-row"
        cited = " ".join(c.id for c in f.cited) or "—"
        rows.append(f'<tr class="{cls}" data-target="{esc(f.target)}"><td>{f.rank}</td>'
                    f'<td class="crux-score">{f.score:.4f}</td><td class="crux-statement">{esc(clip(f.statement, 140))}'
                    f'</td><td>{esc(clip(data.title(f.community_id) or f.community_id, 40))}</td>'
                    f'<td class="crux-ref crux-cites" data-resolution="{esc(f.resolution)}">{esc(cited)}</td>'
                    f'<td class="crux-ref crux-supports">{esc(" ".join(f.supports))}</td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ("#", "score", "finding", "report", "cites", "supports"))
    return (f'<div class="crux crux-coverage-part crux-findings"><table class="crux-table crux-finding-table">'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _chunk(ref: str, data: CoverageData) -> str:
    text = data.texts.get(ref)
    if text is not None:
        body = f'<div class="crux-text">{esc(clip(text, 600))}</div>'
    elif data.kb_given:
        body = '<div class="crux-muted">not in the knowledge base (removed or changed since the run)</div>'
    else:
        body = '<div class="crux-muted">pass kb= to show the chunk text</div>'
    return f'<div class="crux-chunk" data-ref="{esc(ref)}"><span class="crux-ref">{esc(ref)}</span>{body}</div>'


def detail_html(data: CoverageData, selected: CoverageFinding | None) -> str:
    """The selected finding: its citation resolved to report findings, and the chunks they cite."""
    if selected is None:
        note = "no finding selected" if data.findings or data.has_hits else \
            "trace only: pass the RetrievalResult to list and select findings"
        return f'<div class="crux crux-coverage-part crux-detail"><div class="crux-muted">{note}</div></div>'
    f = selected
    rows = [("score", f"{f.score:.4f}"), ("target", f'<span class="crux-ref">{esc(f.target)}</span>'),
            ("report", esc(f"{data.title(f.community_id) or '—'} ({f.community_id})")),
            ("generation", f'<span class="crux-ref">{esc(f.generation)}</span>')]
    if f.assertion_refs:
        rows.append(("assertions", esc(", ".join(f.assertion_refs))))
    table = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    cited = []
    for c in f.cited:
        unit = data.unit(c.community_id)
        where = f"{unit.title} ({c.community_id}, level {unit.level})" if unit else c.community_id
        cited.append(f'<div class="crux-cited" data-finding="{esc(c.id)}"><div class="crux-muted">{esc(where)} · '
                     f'<span class="crux-ref">{esc(c.id)}</span></div><div>{esc(clip(c.statement, 400))}</div>'
                     f'<div class="crux-muted">supports: <span class="crux-ref">{esc(" ".join(c.supports) or "none")}'
                     f'</span></div></div>')
    head = f"{RESOLUTION_TEXT[f.resolution]}: {_plural(len(f.cited), 'report finding')}"
    chunks = "".join(_chunk(ref, data) for ref in f.supports) or '<div class="crux-muted">no supports</div>'
    return (f'<div class="crux crux-coverage-part crux-detail" data-target="{esc(f.target)}" '
            f'data-resolution="{esc(f.resolution)}"><div class="crux-title">selected: {esc(clip(f.statement, 200))}'
            f'</div><table class="crux-detail-table"><tbody>{table}</tbody></table>'
            f'<div class="crux-title crux-resolution">{esc(head)}</div>{"".join(cited)}'
            f'<div class="crux-title">{esc(_plural(len(f.supports), "chunk"))} cited</div>{chunks}</div>')


def static_html(data: CoverageData, *, selected: CoverageFinding | None = None) -> str:
    """The whole view as static HTML (for outputs rendered without a widget manager)."""
    parts = [header_html(data), overview_html(data), graph_html(data, selected), batches_html(data),
             findings_html(data, selected), detail_html(data, selected)]
    return f'<div class="crux-coverage crux-coverage-static">{"".join(parts)}</div>'


def coverage_html(result: Any, *, kb: Any = None, selected: str | None = None) -> str:
    """Static HTML of a result's global-search step (what :class:`CoverageView` shows, without widgets)."""
    from ._coverage_data import coverage_data

    data = coverage_data(result, kb=kb)
    chosen = data.find(selected) if selected is not None else (data.findings[0] if data.findings else None)
    return static_html(data, selected=chosen)
