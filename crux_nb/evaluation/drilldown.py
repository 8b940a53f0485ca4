"""The drill-down view of one question: each recipe's hits side by side, gold marked, expansion paths shown.

Static HTML (CSS only, no JavaScript, no random ids), so it renders in any notebook
and nbval can compare it. A gold hit that only an expanding recipe found shows the
path ``expand_relations`` took to it (seed, hops and edge types).
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..refs import encode_ref

__all__ = ["DrillDown", "drilldown_html", "hit_label"]

_CSS = """<style>
.crux-drill{font-family:-apple-system,Segoe UI,sans-serif;font-size:12px;color:#222}
.crux-drill .crux-drill-q{font-size:14px;font-weight:600;margin:4px 0}
.crux-drill .crux-drill-gold{color:#555;margin-bottom:6px}
.crux-drill .crux-drill-cols{display:flex;gap:10px;align-items:flex-start}
.crux-drill .crux-drill-col{flex:1 1 0;min-width:180px;border:1px solid #ddd;border-radius:4px;padding:4px}
.crux-drill .crux-drill-col h4{margin:2px 0 4px;font-size:13px}
.crux-drill ol{margin:0;padding-left:22px}
.crux-drill li{margin:2px 0;padding:2px;border-radius:3px}
.crux-drill li.crux-gold{background:#e5f5e0;border-left:3px solid #31a354}
.crux-drill .crux-ref{font-family:monospace;font-size:11px}
.crux-drill .crux-snip{color:#666}
.crux-drill .crux-path{font-family:monospace;font-size:11px;color:#08519c;margin-top:2px}
.crux-drill .crux-missed{color:#a50f15}
</style>"""


def hit_label(hit: Any) -> str:
    """A hit's encoded chunk ref, or ``finding:<target>`` for a finding hit."""
    if getattr(hit, "kind", None) == "finding":
        return f"finding:{hit.citation.finding_target}"
    return encode_ref(hit.ref)


def _path_text(graph: Any) -> str:
    parts = [graph.path[0]]
    for edge, node in zip(graph.edges, graph.path[1:]):
        parts.append(f"—{edge}→ {node}")
    return " ".join(parts)


def _gold_found_by(evaluation: Any, qid: str, names: tuple[str, ...], top: int) -> dict[int, set[str]]:
    """For each gold item index, the recipes whose top hits matched it."""
    found: dict[int, set[str]] = {}
    for name in names:
        run = evaluation.run(name, qid)
        for hit in run.hits[:top]:
            for item in run.gold.matched(hit):
                found.setdefault(item, set()).add(name)
    return found


def _hit_item(hit: Any, rank: int, gold: Any, found: dict[int, set[str]], name: str) -> str:
    items = gold.matched(hit)
    cls = " class='crux-gold'" if items else ""
    mark = "✓ " if items else ""
    snippet = " ".join(getattr(hit, "content", "").split())[:120]
    html = (f"<li{cls} data-rank='{rank}'>{mark}<span class='crux-ref'>{escape(hit_label(hit))}</span> "
            f"<span>{hit.score:.4f}</span><div class='crux-snip'>{escape(snippet)}</div>")
    graph = getattr(getattr(hit, "provenance", None), "graph", None)
    only_here = items and all(found.get(i, set()) == {name} for i in items)
    if graph is not None and only_here:
        html += f"<div class='crux-path'>expanded: {escape(_path_text(graph))} (distance {graph.distance})</div>"
    return html + "</li>"


def drilldown_html(evaluation: Any, qid: str, names: tuple[str, ...], *, top: int) -> str:
    """The drill-down HTML for question ``qid`` over recipes ``names``.

    Examples
    --------
    >>> import crux_nb
    >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
    >>> ev = crux_nb.evaluate({"bm25": kb.recipe()}, qs, k=2)
    >>> html = drilldown_html(ev, "q001", ("bm25",), top=2)
    >>> html.count("<li"), html.count("class='crux-gold'"), "recall@2 1.00" in html
    (1, 1, True)
    """
    first = evaluation.run(names[0], qid)
    gold = first.gold
    found = _gold_found_by(evaluation, qid, names, top)
    if gold.predicate is not None:
        gold_text = "gold: a predicate on hits"
    else:
        gold_text = "gold: " + ", ".join(
            f"<span class='crux-ref{'' if i in found else ' crux-missed'}'>{escape(str(item))}</span>"
            for i, item in enumerate(gold.items))
    cols = []
    for name in names:
        run = evaluation.run(name, qid)
        metric = f"recall@{top}"
        score = run.metrics.get(metric, sum(run.relevant[:top]) / gold.size)
        items = "".join(_hit_item(h, i, gold, found, name) for i, h in enumerate(run.hits[:top], start=1))
        cols.append(f"<div class='crux-drill-col' data-recipe='{escape(name)}'><h4>{escape(name)} "
                    f"<small>{metric} {score:.2f}</small></h4><ol>{items or '<i>no hits</i>'}</ol></div>")
    return (f"{_CSS}<div class='crux-drill' data-question='{escape(qid)}'>"
            f"<div class='crux-drill-q'>{escape(qid)}: {escape(first.question)}</div>"
            f"<div class='crux-drill-gold'>{gold_text}</div><div class='crux-drill-cols'>{''.join(cols)}</div></div>")


class DrillDown:
    """One question of an :class:`~crux_nb.evaluation.Evaluation`, rendered side by side per recipe.

    Examples
    --------
    >>> import crux_nb
    >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
    >>> ev = crux_nb.evaluate({"bm25": kb.recipe()}, qs, k=2)
    >>> view = ev.drilldown("q001")
    >>> view
    DrillDown(question_id='q001', recipes=['bm25'], top=2)
    >>> "q001: When does Beacon launch?" in view.to_html()
    True
    """

    def __init__(self, evaluation: Any, question_id: str, recipes: tuple[str, ...], *, top: int):
        self.evaluation = evaluation
        self.question_id = question_id
        self.recipes = recipes
        self.top = top
        evaluation.run(recipes[0], question_id)  # a clear error for an unknown question

    def to_html(self) -> str:
        """The drill-down as static HTML (CSS only); gold hits carry ``class='crux-gold'``.

        Examples
        --------
        >>> import crux_nb
        >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
        >>> ev = crux_nb.evaluate({"bm25": kb.recipe()}, qs, k=2)
        >>> html = ev.drilldown(0).to_html()
        >>> html.count("✓"), "chunk:plan.md:c0000" in html
        (1, True)
        """
        return drilldown_html(self.evaluation, self.question_id, self.recipes, top=self.top)

    _repr_html_ = to_html

    def __repr__(self) -> str:
        return f"DrillDown(question_id={self.question_id!r}, recipes={list(self.recipes)}, top={self.top})"
