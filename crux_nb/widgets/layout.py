"""Layout helpers shared by the widgets' static drawings: number formatting, the tidy community tree
(:class:`TreeNode`, :func:`tree_layout`, :func:`tree_svg`) and the colour legend.

The tree is drawn left to right: one column per level (roots at the left, leaves at the right), one
row per leaf, each parent on the row of its first child, so a root is always in the top-left corner
of the scroll box (a parent centred on 500 leaves would sit thousands of pixels down). The SVG keeps its
natural size (12 px text) and the box scrolls: a large tree stays readable instead of being scaled down.
Output is deterministic and every string escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..display.html import clip, esc

__all__ = ["TreeNode", "tree_layout", "tree_svg", "legend_html", "fmt", "plural"]

# drawing constants (pixels)
NODE_W, NODE_H, COL_GAP, ROW_GAP, MARGIN, BADGE_CHARS = 240, 28, 56, 8, 12, 9
ON, EDGE = "#e11d48", "#94a3b8"


def fmt(v: float) -> str:
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


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
    of its parent. Leaves take consecutive rows; a parent sits on its first child's row.
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
            row = rows[0]
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

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="{esc(css)}" width="{fmt(width)}" height="{fmt(height)}" '
           f'viewBox="0 0 {fmt(width)} {fmt(height)}" style="max-width:none" role="img" '
           f'aria-label="{esc(label)}" font-family="sans-serif" font-size="12">']
    edges = [(by_id[i].parent_id, i) for i in order if by_id[i].parent_id in pos and by_id[i].parent_id != i]
    for a, b in sorted(edges, key=lambda e: e in on_edges):  # highlighted edges on top
        (xa, ya), (xb, yb) = xy(a), xy(b)
        x0, y0, x3, y3 = xa + NODE_W, ya + NODE_H / 2, xb, yb + NODE_H / 2
        mid = (x3 - x0) / 2
        hot = (a, b) in on_edges
        colour, sw = (ON, "2.5") if hot else (EDGE, "1.2")
        out.append(f'<path class="crux-link{" crux-on" if hot else ""}" data-from="{esc(a)}" data-to="{esc(b)}" '
                   f'd="M{fmt(x0)},{fmt(y0)} C{fmt(x0 + mid)},{fmt(y0)} {fmt(x3 - mid)},{fmt(y3)} '
                   f'{fmt(x3)},{fmt(y3)}" fill="none" stroke="{colour}" stroke-width="{sw}"/>')
    for node_id in order:
        node = by_id[node_id]
        x, y = xy(node_id)
        fill, stroke = colors[node.role]
        hot = node_id in on
        classes = f"crux-node crux-node-{node.role}" + (" crux-on" if hot else "")
        dash = ' stroke-dasharray="4 3"' if node.dashed else ""
        badge = (f'<text class="crux-node-badge" x="{fmt(x + NODE_W - 6)}" y="{fmt(y + NODE_H / 2 + 4)}" '
                 f'text-anchor="end" font-size="11" font-weight="600" fill="#374151">'
                 f'{esc(clip(node.badge, BADGE_CHARS))}</text>') if node.badge else ""
        # about 6.6 px a character at 12 px, 7 px for the bold 11 px badge
        room = NODE_W - 16 - (7 * len(clip(node.badge, BADGE_CHARS)) + 8 if node.badge else 0)
        chars = int(room / 6.6)
        out.append(f'<g class="{classes}" data-id="{esc(node_id)}" {role_attr}="{esc(node.role)}">'
                   f'<title>{esc(node.tooltip or node.label)}</title>'
                   f'<rect x="{fmt(x)}" y="{fmt(y)}" width="{NODE_W}" height="{NODE_H}" rx="4" fill="{fill}" '
                   f'stroke="{ON if hot else stroke}" stroke-width="{"2.5" if hot else "1.2"}"{dash}/>'
                   f'<text x="{fmt(x + 8)}" y="{fmt(y + NODE_H / 2 + 4)}" fill="#111827">'
                   f'{esc(clip(node.label or node_id, max(chars, 8)))}</text>{badge}</g>')
    out.append("</svg>")
    return "".join(out)


def legend_html(keys: Iterable[tuple[str, str]]) -> str:
    return ('<div class="crux-legend">' + "".join(f'<span class="crux-key crux-key-{esc(k)}">{esc(text)}</span>'
                                                  for k, text in keys) + "</div>")


