"""Static HTML and SVG for the coverage view: deterministic, CSS only, every user string escaped.

The community hierarchy is a tidy tree drawn left to right: one column per level (roots at the
left, leaves at the right), one row per leaf, each parent centred on its children. The tree
drawing (:func:`~crux_nb.widgets.layout.tree_layout`, :func:`~crux_nb.widgets.layout.tree_svg`) is shared
with the community explorer.
"""

from __future__ import annotations

from typing import Any

from ..display.html import STYLE, clip, esc, warnings_html
from ._coverage_data import CoverageData, CoverageFinding
from ._coverage_rows import STATUS_LABELS, STATUSES, coverage_nodes
from .layout import TreeNode, legend_html, plural as _plural, tree_layout, tree_svg

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
.crux .crux-support-weak,.crux .crux-support-none{color:#9a3412}
.crux .crux-bar{display:inline-block;height:8px;background:#e5e7eb;width:80px;vertical-align:middle;border-radius:2px}
.crux .crux-bar>span{display:block;height:8px;background:#16a34a;border-radius:2px}
.crux td.crux-mismatch{background:#fff7ed;color:#9a3412;font-weight:600}
.crux .crux-cut{color:#9a3412}
.crux .crux-none{color:#166534}
.crux .crux-ref{font-family:var(--jp-code-font-family,monospace);font-size:12px}
.crux table.crux-table tr.crux-selected td{background:#fff1f2}
.crux table.crux-table tr.crux-selected td:first-child{box-shadow:inset 3px 0 0 #e11d48}
.crux.crux-graph-box{overflow:auto;max-width:100%;max-height:600px;resize:vertical}
.crux table.crux-detail-table{border-collapse:collapse}
.crux table.crux-detail-table th{text-align:left;vertical-align:top;padding:1px 12px 1px 0;color:#555;font-weight:600}
.crux table.crux-detail-table td{padding:1px 0;vertical-align:top}
.crux .crux-cited,.crux .crux-chunk{margin:4px 0 6px;padding-left:8px;border-left:3px solid #e5e7eb}
.crux .crux-chunk .crux-text{font-size:12px}
</style>"""

STATUS_COLORS = {  # status: (fill, stroke)
    "mapped": ("#dcfce7", "#16a34a"),
    "visited": ("#dbeafe", "#2563eb"),
    "skipped": ("#fef3c7", "#d97706"),
    "truncated": ("#ffedd5", "#ea580c"),
    "excluded": ("#e5e7eb", "#374151"),
    "unread": ("#ffffff", "#cbd5e1"),
}
RESOLUTION_TEXT = {
    "recorded": "cites (ids recorded on the hit)",
    "verified": "cites (verified against the finding target)",
    "inferred": "probably cites (matched by statement and supports; not verified against the finding target)",
    "unresolved": "cites report findings that are not among the searched units",
}


# ------------------------------------------------------------------------------------ coverage parts
def coverage_svg(data: CoverageData, selected: CoverageFinding | None = None) -> str:
    """The community hierarchy coloured by status, with ratings; ``selected``'s cited reports highlighted.

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import coverage_data
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
    >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
    >>> svg = coverage_svg(coverage_data(result))
    >>> svg.startswith("<svg"), svg.count('data-status="mapped"'), svg.count('data-status="unread"')
    (True, 1, 2)
    """
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
    warn = warnings_html(data.warnings)
    return (f'{STYLE}{COVERAGE_STYLE}<div class="crux crux-coverage-part crux-header">'
            f'<div class="crux-title">{esc(title)}</div><div>{badge}</div>'
            f'<div class="crux-basis"><b>coverage {esc(data.coverage)}</b>: {esc(data.coverage_basis)}</div>'
            f'{support_html(data.support)}'
            f'<div class="crux-generations crux-muted">{esc(_plural(len(data.generations), "generation"))}: '
            f'<span class="crux-ref">{esc(gens)}</span></div>{warn}</div>')


def support_html(support: Any) -> str:
    """One line: whether the corpus answers the question (the trace's support status), or nothing.

    >>> support_html({"status": "weak", "best": 0.2, "threshold": 0.25, "absent_terms": ["3.12"]})
    '<div class="crux-support crux-support-weak"><b>support weak</b>: best finding 0.20 (threshold 0.25); not in the corpus: &#x27;3.12&#x27;</div>'
    """
    if not support:
        return ""
    status, best = str(support.get("status")), support.get("best")
    text = "no finding" if best is None else f"best finding {float(best):.2f}"
    text += f" (threshold {float(support.get('threshold', 0)):g})"
    absent = support.get("absent_terms") or ()
    if absent:
        text += "; not in the corpus: " + ", ".join(repr(str(t)) for t in absent)
    return f'<div class="crux-support crux-support-{esc(status)}"><b>support {esc(status)}</b>: {esc(text)}</div>'


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
            ("input chars", pre.get("input_chars"), data.input_chars),
            ("map calls", pre.get("calls"), counts["map"] if logged else None)]
    body = []
    for name, planned, actual in rows:
        # adaptive: the input chars add the rating calls, which the preflight does not plan (the note says so)
        bad = planned is not None and actual is not None and planned != actual and not (
            data.adaptive and name == "input chars")
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
        note = ('<div class="crux-muted">adaptive: the preflight is the scan-all plan (map calls only); the actual '
                'input chars include the rating calls</div>')
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
    chosen = sum(r.fallback for r in data.ratings)
    budget = "no budget" if data.budget_chars is None else f"budget {data.budget_chars:,} chars"
    text = (f"threshold {data.threshold} · {_plural(data.rating_calls or 0, 'rating call')} · "
            f"{rated} rated · {len(by['visited'])} visited · {len(by['skipped'])} skipped · "
            f"{len(by['truncated'])} truncated · fallback {data.fallback} chose {chosen} · {budget}, "
            f"input chars {data.input_chars:,}")
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
    head = "".join(f"<th>{h}</th>" for h in ("batch", "prompt", "reports", "communities", "report chars", "map call"))
    total = sum(b.input_chars for b in data.batches)
    title = f"batches: {len(data.batches)} map {'call' if len(data.batches) == 1 else 'calls'}, {total:,} report chars"
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
                     f'<div class="crux-muted">supports: <span class="crux-ref">{esc(" ".join(c.evidence) or "none")}'
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
    """Static HTML of a result's global-search step (what :class:`CoverageView` shows, without widgets).

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import coverage_html
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
    >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
    >>> html = coverage_html(result, kb=kb)
    >>> html.startswith('<div class="crux-coverage crux-coverage-static">'), "The Platform team runs Atlas." in html
    (True, True)
    """
    from ._coverage_read import coverage_data

    data = coverage_data(result, kb=kb)
    chosen = data.find(selected) if selected is not None else (data.findings[0] if data.findings else None)
    return static_html(data, selected=chosen)
