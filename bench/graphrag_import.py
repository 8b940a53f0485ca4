"""Benchmark: importing a real GraphRAG index, and global search over its reports versus GraphRAG's own.

Reads the shared GraphRAG 3 index of *A Christmas Carol*
(``../shared/data/graphrag-christmas-carol``: 42 text units, 529 entities, 978
relationships, 122 communities with LLM-written reports) with
:func:`crux_nb.io.read_graphrag` and reports:

1. **Import** -- wall time of ``read_graphrag`` (``--repeats`` timed runs after
   one warm-up), the peak of Python allocations during one import
   (``tracemalloc``), the process's peak RSS, and the same for exporting with
   ``write_graphrag`` and reading the export back; plus the import counts and
   how many of the reports' ``[Data: ...]`` references resolved to chunks.
2. **crux_nb global search over GraphRAG's reports** -- for the corpus-level
   questions of ``bench/carol_global_questions.csv`` (the first 2 with
   ``--small``), ``global_search(scan=..., detail=..., limit=10)`` with the
   offline model for scan in (all, adaptive) and detail in (overview,
   detailed). Per configuration, the mean over questions of: reports mapped,
   map calls (``preflight["calls"]``), rating calls (``adaptive.rating_calls``)
   and input characters -- the map input in upstream's measure (title +
   summary + finding statements of the mapped reports, ``preflight["input_chars"]``)
   plus, for adaptive, the same measure over every report it rated.
3. **GraphRAG's static global search over the same reports** -- computed, not
   run: GraphRAG maps the ``full_content`` of the selected reports packed into
   context windows of its default ``max_context_tokens`` = 12,000 tokens, one map
   call per window. Assumption: ~4 characters per token (no tokenizer is
   loaded), so a window holds 48,000 characters; reports are packed greedily in
   community order, a report that does not fit opens the next window. Rows: each
   GraphRAG level alone (all reports of that level), GraphRAG's default query
   (``community_level=2``: the reports of levels 0-2 kept by its roll-up, i.e.
   for every entity the deepest community at level <= 2 that holds it), and
   all 122 reports. The map and reduce prompts' own text is left out on both sides.

Usage::

    .venv/bin/python bench/graphrag_import.py            # 3 timed imports, every question (seconds)
    .venv/bin/python bench/graphrag_import.py --small    # 1 timed import, 2 questions

Exit status: 0 on success, 2 when the shared GraphRAG index is missing.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from crux_nb.io import read_graphrag, write_graphrag  # noqa: E402
from crux_nb.models import OfflineModel  # noqa: E402
from crux_nb.retrieval import global_search  # noqa: E402

from bench._common import (OUT_DIR, fmt_num, load_average, machine_info, markdown_table, peak_rss_mb,  # noqa: E402
                     time_once, write_summary, write_text)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
INDEX = SHARED_DATA / "graphrag-christmas-carol"
QUESTIONS_PATH = Path(__file__).resolve().parent / "carol_global_questions.csv"
FALLBACK_QUESTIONS = ["What are the main themes of A Christmas Carol?",
                      "How does Scrooge change over the course of the story?",
                      "What role do the ghosts play in Scrooge's transformation?"]
SMALL_QUESTIONS = 2
CHARS_PER_TOKEN = 4
GRAPHRAG_CONTEXT_TOKENS = 12_000
GRAPHRAG_COMMUNITY_LEVEL = 2
CONFIGS = [("all", "overview"), ("all", "detailed"), ("adaptive", "overview"), ("adaptive", "detailed")]
COST_COLUMNS = ["method", "reports mapped", "map calls", "rating calls", "input chars", "input tokens (~chars/4)"]


def questions(small: bool) -> list[str]:
    rows = FALLBACK_QUESTIONS
    if QUESTIONS_PATH.is_file():
        with open(QUESTIONS_PATH, newline="", encoding="utf-8") as fh:
            rows = [r["question"] for r in csv.DictReader(fh)] or FALLBACK_QUESTIONS
    return rows[:SMALL_QUESTIONS] if small else rows


# ------------------------------------------------------------------ import
def measure(fn, repeats: int) -> tuple[Any, float, float]:
    """(result, mean seconds over ``repeats`` runs after one warm-up, tracemalloc peak MiB of one more run)."""
    timing, result = time_once(fn, warmup=1, repeats=repeats)
    tracemalloc.start()
    try:
        fn()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    return result, timing.mean_ns / 1e9, peak


def import_section(repeats: int) -> tuple[Any, str, dict[str, float]]:
    rss_before = peak_rss_mb()
    kb, seconds, peak = measure(lambda: read_graphrag(INDEX, id="carol"), repeats)
    rss_after = peak_rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        export, w_seconds, w_peak = measure(lambda: write_graphrag(kb, Path(tmp) / "export"), repeats)
        back, r_seconds, r_peak = measure(lambda: read_graphrag(Path(tmp) / "export", id="carol"), repeats)
    rows = [["read_graphrag(shared index)", fmt_num(seconds * 1000), fmt_num(peak), fmt_num(rss_after)],
            ["write_graphrag(imported kb)", fmt_num(w_seconds * 1000), fmt_num(w_peak), fmt_num(peak_rss_mb())],
            ["read_graphrag(export)", fmt_num(r_seconds * 1000), fmt_num(r_peak), fmt_num(peak_rss_mb())]]
    info = kb.graphrag
    refs = info.references
    counts = [[k, str(v)] for k, v in info.counts.items()]
    counts += [["findings", str(refs.findings)], ["findings with resolved references", str(refs.findings_resolved)],
               ["findings on community text units (fallback)", str(refs.findings_fallback)],
               ["references cited", str(refs.references)], ["references resolved", str(refs.resolved)],
               ["references unresolved", str(refs.unresolved)], ["'+more' markers", str(refs.more_markers)]]
    counts += [[f"references to {kind}: resolved / cited", f"{v['resolved']} / {v['cited']}"]
               for kind, v in sorted(refs.by_kind.items())]
    text = "\n".join([
        "## Import", "",
        f"Timed runs: {repeats} after one warm-up (mean). Peak RSS before the first import: {fmt_num(rss_before)} MiB "
        "(Python, pandas, pyarrow and crux_nb loaded). Peak Python allocations are `tracemalloc`'s peak during one "
        "more run (Arrow's own buffers are not traced); the process peak RSS is read after the runs.", "",
        markdown_table(["operation", "mean time (ms)", "peak Python allocations (MiB)", "process peak RSS (MiB)"], rows),
        "", f"Export round trip: {export.rows['text_units']} text units, {export.rows['entities']} entities, "
        f"{export.rows['relationships']} relationships, {export.rows['community_reports']} reports written; read back: "
        f"{back.graphrag.references.resolved}/{back.graphrag.references.references} references resolved.", "",
        "## Import report", "", f"Layout: {info.layout}. Status of the imported communities: "
        f"{kb.communities.status()}.", "", markdown_table(["what", "count"], counts)])
    figures = {"read_ms": seconds * 1000, "references": refs.references, "resolved": refs.resolved}
    return kb, text, figures


# ------------------------------------------------------------ global search
def crux_costs(kb: Any, qs: list[str]) -> tuple[list[list[str]], dict[tuple[str, str], dict[str, float]]]:
    """Table rows, and the means per (scan, detail)."""
    model = OfflineModel()
    rows, means = [], {}
    for scan, detail in CONFIGS:
        totals = {"reports": 0, "maps": 0, "rates": 0, "chars": 0}
        recipe = kb.recipe(steps=[global_search(model=model, scan=scan, detail=detail, limit=10)])
        for q in qs:
            result = recipe.retrieve_with_trace(q, admit=lambda estimate: True)
            step = result.trace.steps[0]
            k = step.knowledge
            chars = {u.community_id: u.chars for u in step.details["units"]}
            rated = [r.community_id for r in (k.adaptive.visited + k.adaptive.skipped if k.adaptive else ())
                     if r.rating is not None]
            totals["reports"] += k.processed["reports"]
            totals["maps"] += k.preflight["calls"]
            totals["rates"] += k.adaptive.rating_calls if k.adaptive else 0
            totals["chars"] += k.preflight["input_chars"] + sum(chars[c] for c in rated)
        n = len(qs)
        mean = means[scan, detail] = {key: value / n for key, value in totals.items()}
        rows.append([f"crux_nb global_search(scan={scan}, detail={detail})", fmt_num(mean["reports"]),
                     fmt_num(mean["maps"]), fmt_num(mean["rates"]), fmt_num(mean["chars"]),
                     fmt_num(mean["chars"] / CHARS_PER_TOKEN)])
    return rows, means


def pack_windows(sizes: list[int], budget: int) -> int:
    windows, used = 0, budget + 1
    for size in sizes:
        if used + size > budget:
            windows, used = windows + 1, 0
        used += size
    return windows


def graphrag_rollup(communities: Any, level: int) -> set[int]:
    """GraphRAG's report selection for ``community_level=level`` without dynamic selection."""
    best: dict[str, int] = {}
    for community, lvl, entity_ids in zip(communities["community"], communities["level"], communities["entity_ids"]):
        if lvl <= level:
            for e in entity_ids:
                best[e] = max(best.get(e, -1), int(community))
    return set(best.values())


def graphrag_costs(kb: Any) -> tuple[list[list[str]], int]:
    """Table rows, and the input characters of GraphRAG's default query (the community_level roll-up)."""
    import pandas as pd

    reports = pd.read_parquet(INDEX / "community_reports.parquet").sort_values("community")
    communities = pd.read_parquet(INDEX / "communities.parquet")
    budget = GRAPHRAG_CONTEXT_TOKENS * CHARS_PER_TOKEN
    selections = [(f"GraphRAG static global search, level {lvl} ({(reports['level'] == lvl).sum()} reports)",
                   reports[reports["level"] == lvl]) for lvl in sorted(reports["level"].unique())]
    chosen = graphrag_rollup(communities, GRAPHRAG_COMMUNITY_LEVEL)
    selections.append((f"GraphRAG static global search, default community_level={GRAPHRAG_COMMUNITY_LEVEL} (roll-up)",
                       reports[reports["community"].isin(chosen)]))
    selections.append(("GraphRAG static global search, all levels", reports))
    rows = []
    for name, frame in selections:
        sizes = [len(t) for t in frame["full_content"]]
        chars = sum(sizes)
        rows.append([name, str(len(frame)), str(pack_windows(sizes, budget)), "0", fmt_num(chars),
                     fmt_num(chars / CHARS_PER_TOKEN)])
    default_chars = sum(len(t) for t in reports[reports["community"].isin(chosen)]["full_content"])
    return rows, default_chars


def summary_rows(figures: dict[str, float], means: dict[tuple[str, str], dict[str, float]],
                 graphrag_chars: int) -> list[dict[str, Any]]:
    """Information only (the benchmark sets no target): import time, resolved references, and crux_nb's global
    search input characters per question against GraphRAG's default static global search over the same reports."""
    rows = [{"measure": "read_graphrag(shared index) mean time (ms)", "ours": figures["read_ms"]},
            {"measure": "report [Data: ...] references resolved (count)", "ours": figures["resolved"],
             "baseline": figures["references"], "baseline_name": "references cited in GraphRAG's reports"}]
    name = f"GraphRAG static global search, community_level={GRAPHRAG_COMMUNITY_LEVEL} (computed)"
    for (scan, detail), mean in means.items():
        rows.append({"measure": f"global search input chars per question, scan={scan}, detail={detail}",
                     "ours": mean["chars"], "baseline": graphrag_chars, "baseline_name": name})
    return rows


def run(*, small: bool, repeats: int, out_path: Path) -> str:
    kb, import_text, figures = import_section(repeats)
    qs = questions(small)
    crux_rows, means = crux_costs(kb, qs)
    graphrag_rows, graphrag_chars = graphrag_costs(kb)
    cost_rows = crux_rows + graphrag_rows
    source = QUESTIONS_PATH.name if QUESTIONS_PATH.is_file() else "built-in fallback questions"
    info = machine_info(["pandas", "pyarrow", "numpy"])
    text = "\n".join([
        "# GraphRAG import benchmark" + (" (--small)" if small else ""), "",
        f"Index: `../shared/data/{INDEX.name}`.", "", import_text, "",
        "## Global search cost", "",
        f"Questions: {len(qs)} from {source}; crux_nb rows are means over the questions (the model is "
        "`OfflineModel`, limit 10, every call admitted). GraphRAG rows are computed from its default "
        f"{GRAPHRAG_CONTEXT_TOKENS:,}-token context windows at ~{CHARS_PER_TOKEN} characters per token "
        f"(a window = {GRAPHRAG_CONTEXT_TOKENS * CHARS_PER_TOKEN:,} characters of report `full_content`) and do not "
        "depend on the question. crux_nb maps title + summary + finding statements (GraphRAG's `[Data: ...]` "
        "blocks removed) in batches of at most 24,000 characters; adaptive also pays for rating the reports it "
        "looked at (same measure).", "",
        markdown_table(COST_COLUMNS, cost_rows), "",
        "## Machine", "",
        markdown_table(["key", "value"], [[k, v] for k, v in info.items()] + [["load average", load_average()]]),
    ])
    write_text(out_path, text + "\n")
    write_summary(out_path, "graphrag_import", summary_rows(figures, means, graphrag_chars))
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help=f"1 timed import, first {SMALL_QUESTIONS} questions")
    parser.add_argument("--repeats", type=int, help="timed imports after one warm-up (default 3; 1 with --small)")
    parser.add_argument("--out", type=Path, help="Markdown output (default bench/out/graphrag_import[_small].md)")
    args = parser.parse_args(argv)
    if not (INDEX / "community_reports.parquet").is_file():
        print(f"graphrag_import: shared data not found at {INDEX}; this benchmark needs "
              "../shared/data/graphrag-christmas-carol next to the project folder.", file=sys.stderr)
        return 2
    repeats = max(1, args.repeats or (1 if args.small else 3))
    out = args.out or OUT_DIR / ("graphrag_import_small.md" if args.small else "graphrag_import.md")
    text = run(small=args.small, repeats=repeats, out_path=out)
    print(text)
    print(f"written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
