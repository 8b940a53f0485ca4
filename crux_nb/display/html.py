"""Static HTML reprs for notebooks: CSS only, every user string escaped, deterministic.

Each public object's ``_repr_html_`` calls one function here. The output has
no JavaScript, no random ids and no timings, so nbval can compare it.
"""

from __future__ import annotations

import html
import re
from typing import Any, Iterable

from ..refs import encode_ref, is_ref_kind

STYLE = """<style>
.crux{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;line-height:1.4;max-width:100%}
.crux .crux-title{font-weight:600;margin:2px 0 6px}
.crux .crux-muted{color:#666}
.crux table.crux-table{border-collapse:collapse;margin:4px 0}
.crux table.crux-table th,.crux table.crux-table td{border-bottom:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
.crux table.crux-table th{background:#f4f4f4}
.crux .crux-badge{display:inline-block;padding:0 6px;border-radius:8px;background:#eef;margin-right:4px}
.crux .crux-ok{background:#e6f4ea}.crux .crux-err{background:#fce8e6}
.crux .crux-text{white-space:pre-wrap;max-width:60em}
.crux details>summary{cursor:pointer}
</style>"""


def esc(value: Any) -> str:
    """Escape any value for HTML text or attribute context."""
    return html.escape("" if value is None else str(value), quote=True)


def clip(text: Any, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _ref_token(token: str) -> str | None:
    """The encoded ref a warning's word names (``chunk:a.md:c0000.`` -> ``chunk:a.md:c0000``), or None."""
    core = token.rstrip(".,;)")
    kind, sep, rest = core.partition(":")
    return core if sep and rest and is_ref_kind(kind) else None


def summarize_warnings(warnings: Iterable[str], *, show: int = 3) -> tuple[str, ...]:
    """Warnings that differ only in the one ref they name, once, with their count and the first ``show`` refs.

    A step warns once per node it cut (``truncated neighbors for <ref> at 64``); on a real corpus that is
    dozens of lines that say one thing. A trailing ``(N times)`` (the trace's own collapsing of exact repeats,
    :func:`crux_nb.retrieval.trace.collapse_warnings`) is counted, not compared. Warnings naming no ref, or
    several, stay as they are.

    Examples
    --------
    >>> summarize_warnings(["cut chunk:a.md:c0 at 64.", "cut chunk:b.md:c0 at 64. (2 times)", "cut entity:x at 64.",
    ...                     "cut chunk:c.md:c0 at 64.", "cut chunk:d.md:c0 at 8.", "no edges"])
    ('cut 4 nodes (chunk:a.md:c0, chunk:b.md:c0, entity:x, … 1 more) at 64. (5 times)', 'cut chunk:d.md:c0 at 8.', 'no edges')
    """
    groups: dict[str, list[tuple[str, str, int]]] = {}  # template -> (warning, ref, times), first-seen order
    for warning in warnings:
        repeat = re.fullmatch(r"(.*) \((\d+) times\)", warning, re.S)
        text, times = (repeat.group(1), int(repeat.group(2))) if repeat else (warning, 1)
        words = text.split(" ")
        refs = [(i, r) for i, w in enumerate(words) if (r := _ref_token(w)) is not None]
        if len(refs) != 1:
            groups.setdefault(warning, []).append((warning, "", times))
            continue
        i, ref = refs[0]
        template = " ".join([*words[:i], words[i].replace(ref, "\0", 1), *words[i + 1:]])
        groups.setdefault(template, []).append((warning, ref, times))
    out = []
    for template, members in groups.items():
        if len(members) == 1:
            out.append(members[0][0])
            continue
        refs = list(dict.fromkeys(r for _, r, _ in members))
        more = f", … {len(refs) - show} more" if len(refs) > show else ""
        times = sum(t for _, _, t in members)
        text = template.replace("\0", f"{len(refs)} nodes ({', '.join(refs[:show])}{more})", 1)
        out.append(text if times == len(refs) else f"{text} ({times} times)")
    return tuple(out)


def warnings_html(warnings: Iterable[str]) -> str:
    """The warnings as muted lines, repeats summarized (:func:`summarize_warnings`)."""
    return "".join(f'<div class="crux-muted">⚠ {esc(w)}</div>' for w in summarize_warnings(warnings))


def table(headers: Iterable[str], rows: Iterable[Iterable[Any]], *, cls: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="crux-table {esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def box(title: str, body: str, *, cls: str) -> str:
    return f'{STYLE}<div class="crux {esc(cls)}"><div class="crux-title">{esc(title)}</div>{body}</div>'


def badge(text: Any, cls: str = "") -> str:
    return f'<span class="crux-badge {esc(cls)}">{esc(text)}</span>'


def knowledge_base_html(kb: Any) -> str:
    counts = "".join(badge(f"{k}: {v}") for k, v in kb.summary().items())
    docs = kb.state.documents.head(10)
    rows = [(s, clip(t, 60), n) for s, t, n in zip(docs["source_id"], docs["title"], docs["n_chunks"])]
    more = len(kb.state.documents) - len(rows)
    tail = f'<div class="crux-muted">… and {more} more documents</div>' if more > 0 else ""
    body = (f'<div>{counts}</div>' + table(["source_id", "title", "chunks"], rows) + tail)
    return box(f"KnowledgeBase {kb.id!r} (namespace {kb.namespace!r})", body, cls="crux-kb")


def step_html(step: Any) -> str:
    rows = [(k, v) for k, v in step.config().items()]
    meta = badge(f"kind: {step.kind}") + badge(f"{step.phase[0]} → {step.phase[1]}") + badge(f"needs_model: {step.needs_model}")
    return box(f"step {step.id!r}", f"<div>{meta}</div>" + table(["parameter", "value"], rows), cls="crux-step")


def recipe_html(recipe: Any) -> str:
    rows = [(i, s.id, s.kind, f"{s.phase[0]} → {s.phase[1]}", repr(s)) for i, s in enumerate(recipe.steps, start=1)]
    body = table(["#", "id", "kind", "phase", "step"], rows)
    return box(f"Recipe {recipe.id!r} on {recipe.kb.id!r}", body, cls="crux-recipe")


def hits_html(hits: Any) -> str:
    rows = []
    for i, hit in enumerate(hits, start=1):
        if hit.kind == "evidence":  # duck-typed: display sits below hits (EvidenceHit._repr_html_ calls down here)
            where = encode_ref(hit.ref)
            graph = hit.provenance.graph if hit.provenance else None
            how = f"{' > '.join(graph.edges)} from {graph.seed}" if graph else ""
        else:
            where, how = f"finding:{hit.citation.finding_target}", f"{len(hit.citation.supports)} supports"
        rows.append((i, hit.kind, f"{hit.score:.4f}", where, how, clip(hit.content)))
    body = table(["#", "kind", "score", "ref", "via", "content"], rows) if rows else '<div class="crux-muted">no hits</div>'
    return box(f"{len(hits)} hits", body, cls="crux-hits")


def trace_html(trace: Any) -> str:
    rows = []
    for s in trace.steps:
        rows.append((s.step_id, s.kind, s.status, f"{s.input_queries}q / {s.input_hits}h",
                     f"{s.output_queries}q / {s.output_hits}h", len(s.warnings)))
    body = table(["step", "kind", "status", "in", "out", "warnings"], rows)
    if trace.warnings:
        body += "<div>" + warnings_html(trace.warnings) + "</div>"
    return box(f"trace of {trace.recipe_id!r} for {clip(trace.query, 80)!r}: {trace.result_count} results", body,
               cls="crux-trace")


def report_html(report: Any) -> str:
    rows = [(f.id, clip(f.statement, 200), " ".join(map(str, f.evidence))) for f in report.findings]
    body = (f'<div class="crux-muted">level {report.level} · {report.n_chunks} chunks · {report.n_entities} entities</div>'
            f'<div class="crux-text">{esc(report.summary)}</div>' + table(["finding", "statement", "evidence"], rows))
    return box(f"{report.title} ({report.community_id})", body, cls="crux-report")


def communities_html(surface: Any) -> str:
    frame = surface.communities
    reports = surface.frame("reports")
    titles = dict(zip(reports["community_id"], reports["title"]))
    rows = [(r.community_id, r.level, r.kind, r.n_chunks, r.n_entities, clip(titles.get(r.community_id, ""), 80))
            for r in frame.sort_values(["level", "community_id"], ascending=[False, True]).itertuples(index=False)]
    status = badge(f"status: {surface.status()}") + badge(f"generation: {surface.generation_id}")
    body = f"<div>{status}</div>" + (table(["community", "level", "kind", "chunks", "entities", "title"], rows)
                                      if rows else '<div class="crux-muted">not built yet: call prepare()</div>')
    return box(f"communities {surface.config.id!r} ({surface.scope})", body, cls="crux-communities")


def evidence_hit_html(hit: Any) -> str:
    graph = hit.provenance.graph if hit.provenance else None
    meta = badge(f"score: {hit.score:.4f}") + badge(f"source: {hit.source.id}")
    if hit.parent is not None:
        meta += badge(f"section: {clip(hit.parent.title, 60)}")
    if graph is not None:
        meta += badge(f"via {' > '.join(graph.edges)} from {graph.seed}")
    body = f'<div>{meta}</div><div class="crux-text">{esc(hit.content)}</div>'
    return box(f"evidence {encode_ref(hit.ref)}", body, cls="crux-hit")


def report_page_html(page: Any) -> str:
    rows = [(r.community_id, r.level, clip(r.title, 80), len(r.findings), r.n_chunks) for r in page.reports]
    body = (table(["community", "level", "title", "findings", "chunks"], rows) if rows
            else '<div class="crux-muted">no reports</div>')
    if page.cursor is not None:
        body += f'<div class="crux-muted">more after cursor {esc(page.cursor)!s}</div>'
    return box(f"{len(page.reports)} reports", body, cls="crux-report-page")


def view_html(view: Any, revision: Any = None, error: str | None = None) -> str:
    rows = [(field, repr(value)) for field, value in view.where.items()]
    meta = badge(f"namespace: {view.kb.namespace}") + (badge(f"pinned: {view.pinned}") if view.pinned else "")
    if revision is not None:
        meta += badge(f"revision: {revision.revision}") + badge(f"members: {len(revision.members)}")
    body = f"<div>{meta}</div>" + table(["field", "where"], rows)
    if error:
        body += f'<div class="crux-muted">⚠ {esc(error)}</div>'
    return box(f"View {view.id!r}", body, cls="crux-view")


def view_revision_html(revision: Any) -> str:
    shown = revision.members[:10]
    more = len(revision.members) - len(shown)
    body = (f"<div>{badge(f'members: {len(revision.members)}')}</div>"
            + table(["source_id"], [(s,) for s in shown])
            + (f'<div class="crux-muted">… and {more} more</div>' if more > 0 else ""))
    return box(f"revision {revision.revision} of view {revision.view_id!r}", body, cls="crux-view-revision")


def graph_report_html(report: Any) -> str:
    """A :class:`~crux_nb.extract.report.GraphReport`: counts, then one folded table per kind of finding."""
    counts = "".join(badge(f"{k}: {v}") for k, v in (
        ("entities", report.n_entities), ("chunks", report.n_chunks), ("mentions", report.n_mentions),
        ("untyped", f"{report.untyped_share:.0%}"), ("hubs", len(report.hubs))))
    frame = report.frame
    parts = [f"<div>{counts}</div>"]
    for kind, title, fmt in (("hub", "Entities by share of chunks", "{:.1%}"), ("type", "Types", "{:.0f}"),
                             ("suspicious alias", "Suspicious aliases", "{:.0f}"),
                             ("isolated", "Isolated entities (no related edge)", "{:.0f}")):
        rows = frame[frame["kind"] == kind]
        if not len(rows):
            continue
        shown = rows.head(20)
        body = table(["entity", "value", "detail"],
                     [(e, fmt.format(v), d) for e, v, d in zip(shown["entity"], shown["value"], shown["detail"])])
        more = f'<div class="crux-muted">… and {len(rows) - len(shown)} more</div>' if len(rows) > 20 else ""
        parts.append(f"<details{' open' if kind == 'hub' else ''}><summary>{esc(title)} ({len(rows)})</summary>"
                     f"{body}{more}</details>")
    return box("Entity graph report", "".join(parts), cls="crux-graph-report")
