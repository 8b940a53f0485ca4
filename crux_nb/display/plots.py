"""matplotlib plots where a picture beats a table: community sizes, the hierarchy, global-search coverage.

Each function draws on ``ax`` (a new figure when omitted) and returns the axes.
"""

from __future__ import annotations

from typing import Any


def _axes(ax: Any, size: tuple[float, float]) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=size)
    return ax


def community_sizes(surface: Any, *, ax: Any = None) -> Any:
    """Chunks per community, one bar group per level."""
    frame = surface.communities.sort_values(["level", "n_chunks"], ascending=[True, False])
    ax = _axes(ax, (8, 3))
    colors = {level: f"C{level}" for level in sorted(frame["level"].unique())}
    from matplotlib.patches import Patch

    ax.bar(range(len(frame)), frame["n_chunks"], color=[colors[lv] for lv in frame["level"]])
    ax.set_xlabel("community (sorted by level, then size)")
    ax.set_ylabel("chunks")
    ax.set_xticks([])
    ax.legend(handles=[Patch(color=c, label=f"level {lv}") for lv, c in colors.items()], frameon=False)
    ax.set_title(f"{len(frame)} communities")
    return ax


def _layout(tree: Any) -> dict[str, tuple[float, float]]:
    roots = [n for n in tree.nodes if tree.in_degree(n) == 0]
    pos: dict[str, tuple[float, float]] = {}
    leaves = [0]

    def place(node: str) -> float:
        children = sorted(tree.successors(node))
        if not children:
            x = float(leaves[0])
            leaves[0] += 1
        else:
            x = sum(place(c) for c in children) / len(children)
        pos[node] = (x, float(tree.nodes[node]["level"]))
        return x

    for root in sorted(roots):
        place(root)
    return pos


def hierarchy(surface: Any, *, ax: Any = None, labels: bool = True, highlight: dict[str, str] | None = None) -> Any:
    """The community tree, leaves at the bottom; marker size follows chunks; ``highlight`` maps id → colour."""
    tree = surface.tree()
    pos = _layout(tree)
    ax = _axes(ax, (9, 5))
    for parent, child in tree.edges:
        (x0, y0), (x1, y1) = pos[parent], pos[child]
        ax.plot([x0, x1], [y0, y1], color="#bbb", lw=1, zorder=1)
    highlight = highlight or {}
    for node, (x, y) in sorted(pos.items()):
        ax.scatter([x], [y], s=30 + 40 * tree.nodes[node]["n_chunks"] ** 0.5, color=highlight.get(node, "#4c72b0"),
                   zorder=2, edgecolor="white")
        title = tree.nodes[node].get("title")
        if labels and title:
            leaf = tree.out_degree(node) == 0  # leaves sit side by side: label them below, rotated
            ax.annotate(str(title)[:30], (x, y), textcoords="offset points", xytext=(0, -10 if leaf else 10),
                        ha="right" if leaf else "center", va="top" if leaf else "bottom",
                        rotation=35 if leaf else 0, fontsize=7)
    ax.set_ylabel("level")
    ax.set_xticks([])
    ax.set_yticks(sorted({y for _, y in pos.values()}))
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    return ax


def coverage(trace: Any, *, ax: Any = None) -> Any:
    """Available versus processed reports and findings of a global-search run, with model calls."""
    step = next(s for s in trace.steps if s.kind == "global-search")
    k = step.knowledge
    ax = _axes(ax, (6, 2.5))
    kinds = ["reports", "findings"]
    available = [k.available.get(x, 0) for x in kinds]
    processed = [k.processed.get(x, 0) for x in kinds]
    ax.barh([0.2, 1.2], available, height=0.4, color="#ccc", label="available")
    ax.barh([-0.2, 0.8], processed, height=0.4, color="#4c72b0", label="processed")
    ax.set_yticks([0, 1], kinds)
    calls = len(k.calls) if k.calls is not None else 0
    ax.set_title(f"{k.coverage} · {k.scan} · {k.detail} · {calls} model calls")
    ax.legend(frameon=False, loc="lower right")
    return ax


def resolution_profile(frame: Any, *, ax: Any = None, chosen: float | None = None) -> Any:
    """Communities (left axis, log) and modularity (right axis) against resolution, from
    ``kb.communities.resolution_profile()``; ``chosen`` marks a resolution."""
    ax = _axes(ax, (8, 3))
    ax.step(frame["resolution"], frame["communities"], where="post", color="C0")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("resolution")
    ax.set_ylabel("communities", color="C0")
    right = ax.twinx()
    right.plot(frame["resolution"], frame["modularity"], color="C1", marker=".")
    right.set_ylabel("modularity", color="C1")
    if chosen is not None:
        ax.axvline(chosen, color="#888", ls="--", lw=1)
    ax.set_title("Leiden resolution profile")
    return ax
