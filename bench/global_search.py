"""Benchmark: ``global_search`` scan all versus adaptive on *A Christmas Carol* with the offline model.

Builds one knowledge base from Charles Dickens' *A Christmas Carol* (the shared
data set, ``../shared/data/christmas-carol/a-christmas-carol.txt``) with the
public API -- ``add_path`` (default chunk size) and ``kb.communities.prepare()``
with :class:`~crux_nb.models.OfflineModel` -- then asks every corpus-level
question of ``bench/carol_global_questions.csv`` (``id,question``) through
``global_search(scan=..., detail=..., limit=10)`` for ``scan`` in (all,
adaptive) and ``detail`` in (detailed, overview), and compares the two scans.

Measures, per question and detail (all read from the step's ``KnowledgeTrace``):

* map calls: ``preflight["calls"]`` (checked against the ``map_findings`` rows
  of the call log); rating calls: ``adaptive.rating_calls`` (checked against
  the ``rate`` rows); total calls: every row of the call log.
* input characters (headline): ``preflight["input_chars"]`` -- the map input in
  upstream's measure (title + summary + finding statements of the mapped
  reports) -- plus, for adaptive, the ``input_chars`` of the ``rate`` calls of
  the call log. Scan all makes no rating call. A cross-check table measures
  every call the same way instead (the call log's canonical-JSON input size).
* overlap@10: the share of scan all's top-10 findings that adaptive also
  returns (anywhere in its at most 10 hits), matched by finding statement
  (whitespace-normalised). The same share by ``citation.finding_target`` is
  shown too; it is stricter because the target hashes the cited finding ids,
  which depend on which reports shared a map batch. Questions where scan all
  returns no finding have no overlap and are left out of the mean.

Target (issue): adaptive uses at most half of scan all's input characters --
ratio of the mean input characters over the questions, adaptive / all <= 0.5 --
while keeping at least 80% of its top-10 findings (mean overlap@10 >= 0.8).
Judged separately for each detail.

Adaptive is the best-first rated descent (threshold, budget, fallback and prior
are step parameters), so its savings and its losses depend on the hierarchy's
shape, the offline model's ratings and the prior; the report describes them
(levels, leaves, the root's children, the rating distribution, where scan all's
top-10 findings sit) and runs the same questions on GraphRAG's own index of the
book (``crux_nb.io.read_graphrag``), against the previous rule (descend at >= 50,
no fallback, no budget, BM25-scaled ratings) in the same run, and, in the full
run, over a range of budgets (the cost/kept curve).

Usage::

    .venv/bin/python bench/global_search.py            # all questions, both details (a few minutes)
    .venv/bin/python bench/global_search.py --small    # first 3 questions, detailed only

Exit status: 0 on success (whether or not the target is met), 1 when the
question file is invalid, 2 when the shared data folder is missing.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import crux_nb  # noqa: E402
from crux_nb.io import read_graphrag  # noqa: E402
from crux_nb.models import OfflineModel  # noqa: E402
from crux_nb.models.text import terms  # noqa: E402
from crux_nb.retrieval import global_search  # noqa: E402

from bench._common import (OUT_DIR, Phases, load_average, machine_info, markdown_table,  # noqa: E402
                     peak_rss_mb, write_summary, write_text)

SHARED_DATA = ROOT.parent / "shared" / "data"  # ../shared/data beside the checkout, as CI places it
BOOK_PATH = SHARED_DATA / "christmas-carol" / "a-christmas-carol.txt"
QUESTIONS_PATH = Path(__file__).resolve().parent / "carol_global_questions.csv"
MIN_QUESTIONS = 12
FOREST_ROOT = "(forest)"
GRAPHRAG_PATH = SHARED_DATA / "graphrag-christmas-carol"
BUDGETS = (0.2, 0.3, 0.4, 0.5, 0.7, 1.0)  # cost/kept curve (full run only); 0.5 is the default
#: the rule before this change, for the same-run baseline: rate level by level, descend at >= 50, no fallback,
#: no budget, BM25-scaled ratings
PREVIOUS = {"fallback": "none", "budget": None, "prior": "none"}
#: the defaults before this branch (report-text prior); the rest of the step as now
REPORT_PRIOR = {"prior": "reports"}
SMALL_QUESTIONS = 3
LIMIT = 10
DETAILS = ("detailed", "overview")
MAX_CHAR_RATIO = 0.5
MIN_OVERLAP = 0.8
THRESHOLD = 50  # the step's default threshold
SUMMARY_COLUMNS = ("detail", "questions", "calls all", "calls adaptive", "map calls adaptive", "rating calls adaptive",
                   "input chars all", "input chars adaptive", "ratio", "overlap@10", "target")


# ----------------------------------------------------------------- questions
class QuestionError(ValueError):
    """The question file is malformed."""


@dataclass(frozen=True)
class Question:
    id: str
    question: str


def load_questions(path: Path) -> list[Question]:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != ["id", "question"]:
            raise QuestionError(f"{path.name}: columns {reader.fieldnames} (want ['id', 'question'])")
        questions = [Question(row["id"].strip(), row["question"].strip()) for row in reader]
    problems = []
    ids = [q.id for q in questions]
    if len(questions) < MIN_QUESTIONS:
        problems.append(f"{len(questions)} questions (want at least {MIN_QUESTIONS})")
    problems += [f"duplicate id {i!r}" for i, n in Counter(ids).items() if n > 1]
    problems += [f"{q.id or '<no id>'}: not a question: {q.question!r}" for q in questions
                 if not q.id or not q.question.endswith("?")]
    if problems:
        raise QuestionError("invalid questions:\n  " + "\n  ".join(problems))
    return questions


def normalise(text: str) -> str:
    return " ".join(text.split())


# ----------------------------------------------------------------- hierarchy
@dataclass(frozen=True)
class Hierarchy:
    """The community tree: levels count up from the leaves (leaf 0), the root is the one without a parent."""

    root: str
    parent: dict[str, str | None]
    children: dict[str, list[str]]
    level: dict[str, int]
    n_chunks: dict[str, int]
    report_chars: dict[str, int]  # upstream measure: title + summary + finding statements
    head_chars: dict[str, int]    # title + summary only
    findings: dict[str, int]
    holders: dict[str, frozenset[str]]  # normalised finding statement -> communities whose report holds it
    total_chunks: int

    @property
    def leaves(self) -> list[str]:
        return [c for c in self.parent if not self.children.get(c)]

    def top(self, cid: str) -> str:
        """The root's child above ``cid`` (``cid`` itself when it is one; the root for the root)."""
        while self.parent.get(cid) not in (None, self.root):
            cid = self.parent[cid]
        return cid

    def depth(self, cid: str) -> int:
        d = 0
        while self.parent.get(cid) is not None:
            cid, d = self.parent[cid], d + 1
        return d


def hierarchy(kb: Any) -> Hierarchy:
    frame = kb.communities.communities
    reports = {r.community_id: r for r in kb.communities.reports().reports}
    parent = {c: (p if isinstance(p, str) else None) for c, p in zip(frame["community_id"], frame["parent_id"])}
    children: dict[str, list[str]] = {}
    for c, p in parent.items():
        if p is not None:
            children.setdefault(p, []).append(c)
    roots = [c for c, p in parent.items() if p is None]
    levels = dict(zip(frame["community_id"], (int(x) for x in frame["level"])))
    sizes = dict(zip(frame["community_id"], (int(x) for x in frame["n_chunks"])))
    if not roots:
        raise AssertionError("no root community")
    if len(roots) > 1:  # a forest (GraphRAG's index): a virtual root above its top-level communities
        for r in roots:
            parent[r] = FOREST_ROOT
        children[FOREST_ROOT] = list(roots)
        parent[FOREST_ROOT], levels[FOREST_ROOT] = None, max(levels.values()) + 1
        sizes[FOREST_ROOT] = int(kb.summary()["chunks"])
        roots = [FOREST_ROOT]
    chars = {c: len(r.title) + len(r.summary) + sum(len(f.statement) for f in r.findings) for c, r in reports.items()}
    chars.setdefault(FOREST_ROOT, 0)
    holders: dict[str, set[str]] = {}
    for c, r in reports.items():
        for f in r.findings:
            holders.setdefault(normalise(f.statement), set()).add(c)
    heads = {c: len(r.title) + len(r.summary) for c, r in reports.items()} | {FOREST_ROOT: 0}
    return Hierarchy(roots[0], parent, {p: sorted(cs) for p, cs in children.items()}, levels, sizes, chars, heads,
                     {c: len(r.findings) for c, r in reports.items()} | {FOREST_ROOT: 0},
                     {k: frozenset(v) for k, v in holders.items()}, int(kb.summary()["chunks"]))


def oracle_chars(h: Hierarchy, statements: list[str], detail: str, *, head_only: bool = False) -> float:
    """The cheapest adaptive descent that maps reports holding >= 80% of ``statements`` (scan all's top 10).

    A perfect rater: the descent rates the children of the root and of every ancestor of the mapped reports
    (nothing else) and maps just those reports. Costs in the upstream measure (report chars; the call log's JSON
    adds ids and keys, so this is a lower bound); ``head_only`` rates on title + summary instead of whole reports.
    Assumes a finding keeps its place in adaptive's top 10 when fewer reports are mapped. NaN without statements.
    """
    top = statements[:LIMIT]
    if not top:
        return math.nan
    leaves = set(h.leaves)
    mappable = (lambda c: c in leaves) if detail == "detailed" else (lambda c: c not in leaves)
    holders = [frozenset(c for c in h.holders.get(s, ()) if mappable(c)) for s in top]
    need = math.ceil(MIN_OVERLAP * len(top) - 1e-9)
    candidates = sorted(set().union(*holders))
    if len(candidates) > 16:  # keep the exhaustive search small: one holder per statement
        holders = [frozenset(sorted(hs)[:1]) for hs in holders]
        candidates = sorted(set().union(*holders))
    rate_cost = h.head_chars if head_only else h.report_chars
    best = math.inf
    for mask in range(1, 1 << len(candidates)):
        chosen = {c for i, c in enumerate(candidates) if mask >> i & 1}
        if sum(bool(hs & chosen) for hs in holders) < need:
            continue
        expanded = {h.root}
        for c in chosen:
            p = h.parent[c]
            while p is not None:
                expanded.add(p)
                p = h.parent[p]
        cost = sum(rate_cost[k] for v in expanded for k in h.children.get(v, ()))
        cost += sum(h.report_chars[c] for c in chosen)
        best = min(best, cost)
    return best


# ------------------------------------------------------------------------ runs
@dataclass
class Run:
    """One ``global_search`` call: costs from the trace and the returned findings."""

    map_calls: int
    rating_calls: int
    total_calls: int
    map_chars: int            # preflight input_chars (upstream measure)
    rate_chars: int           # call-log input_chars of the rate calls
    log_chars: int            # call-log input_chars of every call (canonical JSON)
    reports: int
    statements: list[str]
    targets: list[str]
    communities: list[str]    # report community of each hit
    ratings: dict[str, float] = field(default_factory=dict)  # community id -> rating (adaptive)
    truncated: int = 0

    @property
    def chars(self) -> int:
        return self.map_chars + self.rate_chars


def ask(kb: Any, model: Any, question: str, *, scan: str, detail: str, params: dict | None = None) -> Run:
    recipe = kb.recipe(steps=[global_search(model=model, scan=scan, detail=detail, limit=LIMIT, **(params or {}))])
    hits, trace = recipe.retrieve_with_trace(question)
    k = trace.step("global-search").knowledge
    if k.detail != detail or k.scan != scan:
        raise AssertionError(f"trace says scan={k.scan} detail={k.detail}, asked for {scan}/{detail}")
    calls = k.calls.to_frame()
    by_task = calls.groupby("task")["input_chars"].agg(["count", "sum"])
    n_map = int(by_task["count"].get("map_findings", 0))
    n_rate = int(by_task["count"].get("rate", 0))
    pre = k.preflight
    if n_map != pre["calls"] or int((~calls["ok"]).sum()) or int(calls["repaired"].sum()):
        raise AssertionError(f"{scan}/{detail}: {n_map} map calls logged for a preflight of {pre['calls']}, "
                             f"or a failed / repaired call")
    ratings, truncated = {}, 0
    if scan == "adaptive":
        a = k.adaptive
        if a.rating_calls != n_rate:
            raise AssertionError(f"adaptive trace says {a.rating_calls} rating calls, the log has {n_rate}")
        ratings = {r.community_id: float(r.rating) for r in (*a.visited, *a.skipped) if r.rating is not None}
        truncated = sum(r.decision == "truncated" for r in a.skipped)
    elif n_rate:
        raise AssertionError(f"scan all made {n_rate} rating calls")
    return Run(map_calls=int(pre["calls"]), rating_calls=n_rate, total_calls=len(calls),
               map_chars=int(pre["input_chars"]), rate_chars=int(by_task["sum"].get("rate", 0)),
               log_chars=int(calls["input_chars"].sum()), reports=int(pre["reports"]),
               statements=[normalise(h.content) for h in hits], targets=[h.citation.finding_target for h in hits],
               communities=[h.citation.lineage.report_community_id for h in hits], ratings=ratings, truncated=truncated)


def repacked(kb: Any, model: Any, question: str, detail: str) -> list[str]:
    """Scan all's findings when its batches are packed in reverse (level, id) order: the same reports and the
    same model, only the batch neighbours change (offline model v4 scores each finding on its own, v5 with the
    corpus idf every unit carries, as the step attaches it, so this agrees fully; v3's map, BM25 with idf over
    the batch, did not)."""
    from crux_nb.retrieval.globalsearch import (BATCH_BUDGET, candidates, corpus_statistics, reduce, resolve,
                                                select_detail)

    corpus = corpus_statistics(kb.state, kb.communities.visible_sources(), question)
    units = list(resolve(kb.communities, wait=True).units)
    batches: list[list[Any]] = [[]]
    for u in reversed(select_detail(units, detail)):
        if batches[-1] and sum(x.chars for x in batches[-1]) + u.chars > BATCH_BUDGET:
            batches.append([])
        batches[-1].append(u)
    cands = [c for b in batches if b
             for c in candidates(model.map_findings(question, [{**u.payload(), "corpus": corpus} for u in b]))]
    return [normalise(h.content) for h in reduce(cands, units, namespace="x", limit=LIMIT)]


def overlap(base: list[str], other: list[str]) -> float:
    """Share of ``base[:LIMIT]`` found anywhere in ``other`` (NaN when ``base`` is empty)."""
    top = base[:LIMIT]
    if not top:
        return math.nan
    seen = set(other)
    return sum(x in seen for x in top) / len(top)


@dataclass
class Pair:
    question: Question
    detail: str
    all: Run
    adaptive: Run

    @property
    def ratio(self) -> float:
        return self.adaptive.chars / self.all.chars if self.all.chars else math.nan

    @property
    def overlap(self) -> float:
        return overlap(self.all.statements, self.adaptive.statements)

    @property
    def overlap_target(self) -> float:
        return overlap(self.all.targets, self.adaptive.targets)


# ------------------------------------------------------------------ summaries
def mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


@dataclass(frozen=True)
class Summary:
    detail: str
    questions: int
    calls_all: float
    calls_adaptive: float
    map_calls_adaptive: float
    rating_calls_adaptive: float
    chars_all: float
    chars_adaptive: float
    overlap: float
    overlap_target: float
    log_chars_all: float
    log_chars_adaptive: float

    @property
    def ratio(self) -> float:
        return self.chars_adaptive / self.chars_all if self.chars_all else math.nan

    @property
    def log_ratio(self) -> float:
        return self.log_chars_adaptive / self.log_chars_all if self.log_chars_all else math.nan

    @property
    def chars_ok(self) -> bool:
        return self.ratio <= MAX_CHAR_RATIO

    @property
    def overlap_ok(self) -> bool:
        return not math.isnan(self.overlap) and self.overlap >= MIN_OVERLAP

    @property
    def verdict(self) -> str:
        return "PASS" if self.chars_ok and self.overlap_ok else "MISS"


def summarise(pairs: list[Pair], detail: str) -> Summary:
    ps = [p for p in pairs if p.detail == detail]
    return Summary(detail, len(ps), mean([p.all.total_calls for p in ps]), mean([p.adaptive.total_calls for p in ps]),
                   mean([p.adaptive.map_calls for p in ps]), mean([p.adaptive.rating_calls for p in ps]),
                   mean([p.all.chars for p in ps]), mean([p.adaptive.chars for p in ps]),
                   mean([p.overlap for p in ps]), mean([p.overlap_target for p in ps]),
                   mean([p.all.log_chars for p in ps]), mean([p.adaptive.log_chars for p in ps]))


# ---------------------------------------------------------------------- report
def f3(x: float) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.3f}"


def f1(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:,.1f}"


def summary_table(summaries: list[Summary]) -> str:
    rows = [[s.detail, s.questions, f1(s.calls_all), f1(s.calls_adaptive), f1(s.map_calls_adaptive),
             f1(s.rating_calls_adaptive), f1(s.chars_all), f1(s.chars_adaptive), f3(s.ratio), f3(s.overlap),
             s.verdict] for s in summaries]
    return markdown_table(SUMMARY_COLUMNS, rows)


def summary_rows(summaries: list[Summary], tree: str = "crux_nb") -> list[dict[str, Any]]:
    """Per detail: input characters adaptive vs scan all and overlap@10 (the two halves of the target, each
    with its own verdict), and model calls per question (information)."""
    rows = []
    on = "" if tree == "crux_nb" else f", {tree} index"
    for s in summaries:
        rows += [
            {"measure": f"input chars per question, adaptive, detail={s.detail}{on}", "ours": s.chars_adaptive,
             "baseline": s.chars_all, "baseline_name": "scan all (same run)", "target": f"ratio <= {MAX_CHAR_RATIO:g}",
             "verdict": "pass" if s.chars_ok else "miss"},
            {"measure": f"overlap@10 with scan all's top 10 (share), adaptive, detail={s.detail}{on}", "ours": s.overlap,
             "target": f"ours >= {MIN_OVERLAP:g}", "verdict": "pass" if s.overlap_ok else "miss"},
            {"measure": f"model calls per question, adaptive, detail={s.detail}{on}", "ours": s.calls_adaptive,
             "baseline": s.calls_all, "baseline_name": "scan all (same run)"},
        ]
    return rows


def verdict_lines(summaries: list[Summary]) -> list[str]:
    out = []
    for s in summaries:
        out.append(f"- `{s.detail}`: adaptive uses {f3(s.ratio)} of scan all's input characters "
                   f"({'<=' if s.chars_ok else '>'} {MAX_CHAR_RATIO}: {'ok' if s.chars_ok else 'miss'}) and keeps "
                   f"{f3(s.overlap)} of its top-10 findings ({'>=' if s.overlap_ok else '<'} {MIN_OVERLAP}: "
                   f"{'ok' if s.overlap_ok else 'miss'}; by finding_target {f3(s.overlap_target)}). "
                   f"Verdict: {s.verdict}.")
    return out


def cross_check_table(summaries: list[Summary]) -> str:
    rows = [[s.detail, f1(s.log_chars_all), f1(s.log_chars_adaptive), f3(s.log_ratio)] for s in summaries]
    return markdown_table(["detail", "call-log input chars all", "call-log input chars adaptive", "ratio"], rows)


def per_question_table(pairs: list[Pair], h: Hierarchy) -> str:
    headers = ["id", "detail", "calls all", "chars all", "rate calls ad", "map calls ad", "rate chars ad",
               "map chars ad", "chars ad", "ratio", "reports all/ad", "hits all/ad", "overlap@10",
               "overlap@10 (target)", "rated >= 50", "root children rated"]
    rows = []
    for p in pairs:
        a, b = p.all, p.adaptive
        kids = sorted(h.children.get(h.root, []), key=lambda c: -h.n_chunks[c])
        kid_ratings = " ".join(f"{b.ratings[c]:.0f}" if c in b.ratings else "-" for c in kids)
        above = sum(r >= THRESHOLD for r in b.ratings.values())
        rows.append([p.question.id, p.detail, a.total_calls, f"{a.chars:,}", b.rating_calls, b.map_calls,
                     f"{b.rate_chars:,}", f"{b.map_chars:,}", f"{b.chars:,}", f3(p.ratio),
                     f"{a.reports}/{b.reports}", f"{len(a.statements)}/{len(b.statements)}", f3(p.overlap),
                     f3(p.overlap_target), f"{above}/{len(b.ratings)}", kid_ratings])
    return markdown_table(headers, rows, align=["l", "l"] + ["r"] * 13 + ["l"])


def hierarchy_lines(h: Hierarchy) -> list[str]:
    levels = Counter(h.level.values())
    depths = [h.depth(c) for c in h.leaves]
    kids = h.children.get(h.root, [])
    big = max(kids, key=lambda c: h.n_chunks[c]) if kids else None
    lines = [
        f"- {len(h.parent)} communities: {len(h.leaves)} leaves, {len(h.parent) - len(h.leaves)} parents "
        f"(root included); levels (leaf 0, parent = 1 + max child level): "
        + ", ".join(f"level {lv}: {n}" for lv, n in sorted(levels.items())) + ".",
        f"- Leaf depth below the root: min {min(depths)}, max {max(depths)}; leaves directly under the root: "
        f"{sum(d == 1 for d in depths)}. Parents' child counts: "
        + ", ".join(str(len(h.children[c])) for c in sorted(h.children, key=lambda c: -h.level[c])) + ".",
        f"- Report characters (title + summary + findings): leaves {sum(h.report_chars[c] for c in h.leaves):,} "
        f"in total (this is what detailed scan all maps), parents "
        f"{sum(h.report_chars[c] for c in h.parent if h.children.get(c)):,} (overview).",
    ]
    if big is not None:
        lines.append(f"- The root has {len(kids)} children; the largest, `{big}` (level {h.level[big]}), holds "
                     f"{h.n_chunks[big]} of {h.total_chunks} chunks ({h.n_chunks[big] / h.total_chunks:.1%}) and "
                     f"{sum(1 for c in h.leaves if h.top(c) == big)} of the {len(h.leaves)} leaves"
                     + (", so adaptive reaches most leaves only through that one rating."
                        if h.n_chunks[big] > h.total_chunks / 2 else "."))
    return lines


def root_children_table(h: Hierarchy, pairs: list[Pair]) -> str:
    """Each root child: size, rating across questions, and how many of scan all's top-10 findings sit below it."""
    headers = ["root child", "level", "kind", "chunks", "leaves below", "report chars", "rating mean", "rating min",
               "rating max", "rated >= 50", "scan-all top-10 findings below (detailed)"]
    det = [p for p in pairs if p.detail == "detailed"]
    top10 = Counter(h.top(c) for p in det for c in p.all.communities[:LIMIT])
    n_top = sum(top10.values())
    rows = []
    for c in sorted(h.children.get(h.root, []), key=lambda c: -h.n_chunks[c]):
        rs = [p.adaptive.ratings[c] for p in det if c in p.adaptive.ratings]
        leaves = sum(1 for x in h.leaves if h.top(x) == c)
        rows.append([f"`{c}`", h.level[c], "parent" if h.children.get(c) else "leaf", h.n_chunks[c], leaves,
                     f"{h.report_chars[c]:,}", f1(mean(rs)), f1(min(rs) if rs else math.nan),
                     f1(max(rs) if rs else math.nan), f"{sum(r >= THRESHOLD for r in rs)}/{len(rs)}",
                     f"{top10[c]} ({top10[c] / n_top:.0%})" if n_top else "-"])
    return markdown_table(headers, rows)


BUCKETS = ((0, 0, "0"), (0, 25, "(0, 25)"), (25, 50, "[25, 50)"), (50, 75, "[50, 75)"), (75, 101, "[75, 100]"))


def rating_table(pairs: list[Pair], h: Hierarchy) -> str:
    """Every rating the detailed adaptive descents gave (overview descents rate parents only, in other
    batches, and the offline model's ratings depend on the batch)."""
    per_q: dict[str, dict[str, float]] = {p.question.id: p.adaptive.ratings for p in pairs if p.detail == "detailed"}
    ratings = [(c, r) for rs in per_q.values() for c, r in rs.items()]
    rows = []
    for lo, hi, label in BUCKETS:
        sel = [(c, r) for c, r in ratings if (r == 0 if hi == 0 else lo <= r < hi and not (lo == 0 and r == 0))]
        rows.append([label, len(sel), f"{len(sel) / len(ratings):.0%}" if ratings else "-",
                     sum(1 for c, _ in sel if h.children.get(c)), sum(1 for c, _ in sel if not h.children.get(c))])
    return markdown_table(["rating", "ratings", "share", "of parents", "of leaves"], rows)


def oracle_table(pairs: list[Pair], h: Hierarchy, details: tuple[str, ...]) -> str:
    rows = []
    for detail in details:
        ps = [p for p in pairs if p.detail == detail and p.all.statements]
        if not ps:
            continue
        full = [oracle_chars(h, p.all.statements, detail) for p in ps]
        head = [oracle_chars(h, p.all.statements, detail, head_only=True) for p in ps]
        base = mean([p.all.chars for p in ps])
        for label, costs in (("whole reports (as now)", full), ("title + summary only", head)):
            ok = sum(c <= MAX_CHAR_RATIO * p.all.chars for c, p in zip(costs, ps))
            rows.append([detail, label, len(ps), f1(base), f1(mean(costs)), f3(mean(costs) / base),
                         f"{ok}/{len(ps)}"])
    return markdown_table(["detail", "rating payload", "questions", "input chars all", "oracle input chars",
                           "oracle ratio", f"questions with oracle ratio <= {MAX_CHAR_RATIO}"], rows,
                          align=["l", "l"] + ["r"] * 5)


COMPARE = ["rating calls", "map calls", "input chars all", "input chars adaptive", "ratio", "overlap@10", "target"]


def compare_cells(s: Summary) -> list[Any]:
    return [s.detail, f1(s.rating_calls_adaptive), f1(s.map_calls_adaptive), f1(s.chars_all), f1(s.chars_adaptive),
            f3(s.ratio), f3(s.overlap), s.verdict]


def relevant_ids(h: Hierarchy, p: Pair) -> set[str]:
    """Communities holding one of scan all's top-10 findings, and their ancestors."""
    out: set[str] = set()
    for c in p.all.communities[:LIMIT]:
        while c is not None and c not in out:
            out.add(c)
            c = h.parent.get(c)
    return out


def length_bucket(question: str) -> str:
    n = len(set(terms(question)))
    return "short (<= 4 terms)" if n <= 4 else ("medium (5-6)" if n <= 6 else "long (>= 7)")


def calibration_table(pairs_by_rater: dict[str, list[Pair]], hs: dict[str, Hierarchy]) -> str:
    """Ratings the detailed descents asked for: relevant vs irrelevant communities, by question length."""
    rows = []
    for (tree, rater), ps in pairs_by_rater.items():
        cells: dict[tuple[str, bool], list[float]] = {}
        for p in ps:
            if p.detail != "detailed" or not p.all.communities:
                continue
            rel = relevant_ids(hs[tree], p)
            for c, r in p.adaptive.ratings.items():
                cells.setdefault((length_bucket(p.question.question), c in rel), []).append(r)
        for (bucket, rel), vs in sorted(cells.items()):
            vs = sorted(vs)
            rows.append([tree, rater, bucket, "relevant" if rel else "irrelevant", len(vs), f1(vs[len(vs) // 2]),
                         f"{sum(v >= THRESHOLD for v in vs) / len(vs):.2f}"])
    return markdown_table(["tree", "rater", "question length", "community", "ratings", "median", "share >= 50"], rows,
                          align=["l", "l", "l", "l", "r", "r", "r"])


def extra_sections(*, trees, summaries, gh, previous, bm25, curve, details, reports) -> list[str]:
    headers = ["tree", "setting", "detail", *COMPARE]
    rows = []
    for t, _, _ in trees:
        for d in details:
            rows.append([t, "default", *compare_cells(next(s for s in summaries[t] if s.detail == d))])
            rows.append([t, "previous rule", *compare_cells(summarise(previous[t], d))])
            rows.append([t, "default, bm25-scale rater", *compare_cells(summarise(bm25[t], d))])
            rows.append([t, "default, prior='reports'", *compare_cells(summarise(reports[t], d))])
    lines = [
        "## Both trees, against the previous rule (same run)",
        "",
        "Default: `global_search(scan='adaptive')` with its defaults (best-first descent, threshold 50, budget 0.5, "
        "fallback 'budget', prior 'findings', calibrated offline rater); `prior='reports'` is the previous default "
        "prior (BM25 of the question against the whole report). Previous rule: "
        f"`{PREVIOUS}` with `OfflineModel(rating='bm25')` (descend at >= 50, no fallback, no budget, BM25-scaled "
        "ratings). GraphRAG: the index in `graphrag-christmas-carol/` read with `crux_nb.io.read_graphrag` "
        "(LLM-written reports; a forest, its top-level communities are rated first).",
        "",
        markdown_table(headers, rows, align=["l", "l", "l"] + ["r"] * len(COMPARE)),
        "",
        "## GraphRAG index: hierarchy",
        "",
        *hierarchy_lines(gh),
        "",
        "## Calibrated ratings",
        "",
        "Every rating the detailed default descents asked for; relevant = holds one of scan all's top-10 findings "
        "or is an ancestor of one that does. The calibrated rater should put relevant communities above 50 and "
        "irrelevant ones below, alike for short and long questions.",
        "",
        calibration_table({**{(t, "calibrated"): ps for t, _, ps in trees},
                           **{(t, "bm25"): bm25[t] for t, _, _ in trees}},
                          {"crux_nb": hierarchy(trees[0][1]), "graphrag": gh}),
        "",
    ]
    if curve:
        lines += ["## Cost/kept over the budget", "",
                  "The default run with `budget=` each value (a share of scan all's map input); rating calls spend "
                  "at most 0.3 of it.", "",
                  markdown_table(["tree", "budget", "detail", *COMPARE], curve,
                                 align=["l", "r", "l"] + ["r"] * len(COMPARE)), ""]
    return lines


def build_report(*, label: str, pairs: list[Pair], summaries: list[Summary], h: Hierarchy, questions: list[Question],
                 extra: list[str], kb_summary: str, phases: Phases, load_start: str, total_s: float) -> str:
    build_rows = [[name, f"{sec:,.2f}", f"{phases.peak_mb[name]:,.0f}"] for name, sec in phases.seconds.items()]
    info = machine_info(["pandas", "numpy", "igraph"])
    info["crux_nb"] = crux_nb.__version__
    info["load average (1/5/15 min) at start"] = load_start
    info["load average (1/5/15 min) at end"] = load_average()
    lines = [
        f"# global_search: scan all versus adaptive ({label})",
        "",
        f"Corpus: *A Christmas Carol* ({BOOK_PATH.name}), {kb_summary}; communities and reports by the offline model "
        f"(`kb.communities.prepare()`). Questions: {len(questions)} corpus-level questions from "
        f"{QUESTIONS_PATH.name}. Each is asked through `global_search(model=OfflineModel(), scan=..., detail=..., "
        f"limit={LIMIT})` for scan all and adaptive, details {', '.join(s.detail for s in summaries)}.",
        "Calls: mean model calls per question (adaptive = map + rating calls). Input chars: mean per question of the "
        "preflight `input_chars` (map input: title + summary + finding statements of the mapped reports) plus, for "
        "adaptive, the call log's `input_chars` of the rating calls. Ratio: mean input chars adaptive / mean input "
        "chars all. Overlap@10: share of scan all's top-10 findings (by statement) that adaptive also returns, "
        "averaged over the questions where scan all returns any finding.",
        f"Target (issue): ratio <= {MAX_CHAR_RATIO} and overlap@10 >= {MIN_OVERLAP}, for each detail.",
        "",
        "## Summary",
        "",
        summary_table(summaries),
        "",
        *verdict_lines(summaries),
        "",
        "Cross-check, every call measured by the call log (canonical JSON of the task input, so ids and keys count "
        "too; the rating calls are measured this way in the headline as well):",
        "",
        cross_check_table(summaries),
        "",
        "## Hierarchy",
        "",
        *hierarchy_lines(h),
        "",
        "The root's children, their ratings over the questions (adaptive rates them in the first call; only those "
        f"rated >= {THRESHOLD} are descended into) and where scan all's detailed top-10 findings sit:",
        "",
        root_children_table(h, pairs),
        "",
        "## Rating distribution",
        "",
        "Every rating of every adaptive descent (one per question; the descent does not depend on detail):",
        "",
        rating_table(pairs, h),
        "",
    ]
    lines += [
        "## Could a perfect rater meet the target on this hierarchy?",
        "",
        "Oracle descent per question: the cheapest set of reports holding at least 80% of scan all's top-10 "
        "findings, reached by rating only the children of the root and of their ancestors, then mapping just "
        "those reports (report chars; the call log's JSON would add ids and keys, so this is a lower bound; it "
        "assumes a finding keeps its top-10 place when fewer reports are mapped). Questions where scan all returns "
        "no finding are left out. The second row per detail rates on title + summary instead of whole reports.",
        "",
        oracle_table(pairs, h, tuple(s.detail for s in summaries)),
        "",
    ]
    lines += list(extra)
    lines += [
        "## Per question",
        "",
        "`ad` = adaptive. Chars all = map input (no rating calls); chars ad = rate chars (call log) + map chars "
        "(preflight). Rated >= 50: communities rated at or above the threshold / communities rated. Root children "
        "rated: their ratings, in the order of the root-children table (`-` = not rated).",
        "",
        per_question_table(pairs, h),
        "",
        "## Questions",
        "",
        markdown_table(["id", "question"], [[q.id, q.question] for q in questions], align=["l", "l"]),
        "",
        "## Build and run",
        "",
        markdown_table(["phase", "seconds", "peak RSS after (MiB)"], build_rows),
        "",
        f"Whole run: {total_s:,.1f} s; peak RSS {peak_rss_mb():,.0f} MiB.",
        "",
        "## Machine",
        "",
        markdown_table(["key", "value"], [[k, v] for k, v in info.items()], align=["l", "l"]),
        "",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------ main
def run(*, small: bool, out_path: Path, sweep: bool) -> str:
    started = time.perf_counter()
    load_start = load_average()
    phases = Phases()
    questions = load_questions(QUESTIONS_PATH)
    details = ("detailed",) if small else DETAILS
    if small:
        questions = questions[:SMALL_QUESTIONS]

    model = OfflineModel()
    with phases("kb.add_path (chunking)"):
        kb = crux_nb.knowledge_base(id="carol", communities=crux_nb.communities(model=model))
        kb.add_path(BOOK_PATH)
    with phases("kb.communities.prepare (offline model)"):
        kb.communities.prepare(progress=False)
    h = hierarchy(kb)

    pairs: list[Pair] = []
    with phases(f"ask: {len(questions)} questions x {len(details)} details x 2 scans"):
        for q in questions:
            for detail in details:
                pairs.append(Pair(q, detail, ask(kb, model, q.question, scan="all", detail=detail),
                                  ask(kb, model, q.question, scan="adaptive", detail=detail)))
    summaries = [summarise(pairs, d) for d in details]
    halves = [replace(summarise(pairs[i::len(details) * 2], d), detail=f"{d} ({name} half)")  # questions alternate
              for d in details for i, name in ((details.index(d), "even"), (details.index(d) + len(details), "odd"))]

    with phases("read_graphrag (GraphRAG's index of the same book)"):
        gkb = read_graphrag(GRAPHRAG_PATH, id="graphrag")
    gh = hierarchy(gkb)
    with phases(f"ask GraphRAG index: {len(questions)} questions x {len(details)} details x 2 scans"):
        gpairs = [Pair(q, d, ask(gkb, model, q.question, scan="all", detail=d),
                       ask(gkb, model, q.question, scan="adaptive", detail=d)) for q in questions for d in details]
    gsummaries = [summarise(gpairs, d) for d in details]
    ghalves = [replace(summarise(gpairs[i::len(details) * 2], d), detail=f"{d} ({name} half)")
               for d in details for i, name in ((details.index(d), "even"), (details.index(d) + len(details), "odd"))]
    trees = (("crux_nb", kb, pairs), ("graphrag", gkb, gpairs))
    with phases("noise floor: scan all re-packed in reverse order"):
        floor = [[t, d, f3(mean([overlap(p.all.statements, repacked(k, model, p.question.question, d))
                                 for p in ps if p.detail == d]))] for t, k, ps in trees for d in details]
    with phases("previous rule and bm25-scale baselines (same run)"):
        previous = {t: [Pair(p.question, p.detail, p.all, ask(k, OfflineModel(rating="bm25"), p.question.question,
                                                                scan="adaptive", detail=p.detail, params=PREVIOUS))
                        for p in ps] for t, k, ps in trees}
        bm25 = {t: [Pair(p.question, p.detail, p.all, ask(k, OfflineModel(rating="bm25"), p.question.question,
                                                            scan="adaptive", detail=p.detail))
                    for p in ps] for t, k, ps in trees}
        reports = {t: [Pair(p.question, p.detail, p.all, ask(k, model, p.question.question, scan="adaptive",
                                                               detail=p.detail, params=REPORT_PRIOR))
                       for p in ps] for t, k, ps in trees}
    curve: list[list[Any]] = []
    if sweep:
        with phases(f"budget curve: {len(BUDGETS)} budgets x 2 trees x {len(questions)} x {len(details)}"):
            for t, k, ps in trees:
                for budget in BUDGETS:
                    for d in details:
                        swept = [Pair(p.question, d, p.all, ask(k, model, p.question.question, scan="adaptive",
                                                                 detail=d, params={"budget": budget}))
                                 for p in ps if p.detail == d]
                        curve.append([t, budget, *compare_cells(summarise(swept, d))])
    extra = extra_sections(trees=trees, summaries={"crux_nb": summaries, "graphrag": gsummaries}, gh=gh,
                           previous=previous, bm25=bm25, curve=curve, details=details, reports=reports)
    extra += ["## Each half of the questions (even / odd positions in the file)", "",
              "crux_nb's tree:", "", summary_table(halves), "", "GraphRAG index:", "", summary_table(ghalves), ""]
    extra += ["## Noise floor: scan all against itself", "",
              "Scan all mapped again with its batches packed in reverse (level, id) order: the same reports, the "
              "same offline model, only which reports share a batch changes. overlap@10 with the original scan all "
              "is the most any selection can expect to keep. Offline model v4 scores each finding on its own "
              "(`match_scores`), v5 with the corpus idf every unit carries, so it should be 1.000; "
              "v3's map (BM25 with idf over the batch's statements, "
              "`OfflineModel(map_score='batch-bm25')`) kept 0.83 / 0.77 on the GraphRAG index.", "",
              markdown_table(["tree", "detail", "overlap@10, scan all re-packed"], floor, align=["l", "l", "r"]), ""]
    s = kb.summary()
    kb_summary = f"{s['chunks']} chunks (chunk_size {kb.chunk_size}), {s['entities']} entities, {s['edges']} edges"
    text = build_report(label="small" if small else "full", pairs=pairs, summaries=summaries, h=h,
                        questions=questions, extra=extra, kb_summary=kb_summary, phases=phases,
                        load_start=load_start, total_s=time.perf_counter() - started)
    write_text(out_path, text)
    write_summary(out_path, "global_search", summary_rows(summaries) + summary_rows(gsummaries, tree="graphrag"))
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true",
                        help=f"first {SMALL_QUESTIONS} questions, detail='detailed' only, no budget curve")
    parser.add_argument("--no-sweep", action="store_true", help="skip the cost/kept curve over the budget")
    parser.add_argument("--out", type=Path, help="Markdown output (default bench/out/global_search[_small].md)")
    args = parser.parse_args(argv)
    # many questions of a bench get a weak best finding in some setting: the trace records each, no need to print
    warnings.filterwarnings("ignore", message="the corpus may not answer", category=UserWarning)
    if not SHARED_DATA.is_dir() or not BOOK_PATH.is_file():
        missing = SHARED_DATA if not SHARED_DATA.is_dir() else BOOK_PATH
        print(f"global_search: shared data not found at {missing}; this benchmark needs "
              f"../shared/data/christmas-carol/a-christmas-carol.txt next to the project folder.", file=sys.stderr)
        return 2
    out = args.out or OUT_DIR / ("global_search_small.md" if args.small else "global_search.md")
    try:
        text = run(small=args.small, out_path=out, sweep=not (args.small or args.no_sweep))
    except QuestionError as exc:
        print(f"global_search: {exc}", file=sys.stderr)
        return 1
    print(text)
    print(f"written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
