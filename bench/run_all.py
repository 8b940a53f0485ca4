"""``make bench``: run every benchmark and collect their tables into ``bench/RESULTS.md``.

    python -m bench.run_all              # full runs (tens of minutes on 2 cores)
    python -m bench.run_all --small      # the small modes the test suite also runs
    python -m bench.run_all --no-run     # only collect the reports already in bench/out (add --small for *_small)

Every benchmark writes a Markdown report ``bench/out/<name>[_small].md`` and a summary
``bench/out/<name>[_small].summary.json`` (see ``_common.write_summary``). RESULTS.md holds the
run status, the machine and versions, a "Targets at a glance" table built from all summaries
(one row per measure), plots (``bench/plots/*.png``, ``*_small.png`` in small mode) and then
every benchmark's own report, then ``bench/HISTORY.md`` (before/after notes of past changes, kept by hand).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: the checkout
from bench._common import (BENCH_DIR, OUT_DIR, SUMMARY_KEYS, VERDICTS, fmt_num, load_average, machine_info,  # noqa: E402
                     markdown_table)

BENCHMARKS = [
    ("neighbors() and 2-hop traversal vs igraph and networkx", "neighbors.py", "neighbors"),
    ("expand_relations latency vs networkx", "expand_latency.py", "expand_latency"),
    ("retrieval quality with expansion (Christmas Carol)", "expand_quality.py", "expand_quality"),
    ("multi-hop retrieval: BM25 vs BM25 + expand (MuSiQue, HotpotQA, 2Wiki)", "multihop.py", "multihop"),
    ("hierarchical clustering vs graspologic-native", "clustering.py", "clustering"),
    ("extraction recall and report grounding", "models_quality.py", "models_quality"),
    ("global search: scan all vs adaptive (Christmas Carol)", "global_search.py", "global_search"),
    ("global search support: questions a corpus answers vs cannot (sample, Carol, Python docs)",
     "global_support.py", "global_support"),
    ("GraphRAG import and global-search cost", "graphrag_import.py", "graphrag_import"),
    ("scale: 20,000-chunk pipeline and 1M-edge memory", "scale.py", "scale"),
    ("dense and hybrid retrieval: latency, memory, Recall@5 on multi-hop samples", "dense.py", "dense"),
    ("kb.add_edges / add_entities: column-wise vs row-by-row validation", "add_edges.py", "add_edges"),
    ("entity extraction quality: rules vs spaCy (Carol, Python docs, sample)", "entity_quality.py", "entity_quality"),
    ("BM25 index after a small change: incremental per source vs a full rebuild", "lexical_incremental.py", "lexical_incremental"),
    ("technical docs: retrieve(k) vs retrieve + expand at equal budget (Python reference topics, CMake help)",
     "techdocs.py", "techdocs"),
    ("BM25 lexical settings: token rule, stop words, stemmer (technical docs, sample, multi-hop)", "lexical_settings.py",
     "lexical_settings"),
    ("document formats: add_path throughput per format, files read vs skipped, long-document extraction (CMake help)",
     "ingest_formats.py", "ingest_formats"),
    ("traversal index build: the bulk build against the per-node one (100k chunks / 500k edges)", "traversal_build.py",
     "traversal_build"),
    ("first traversal in a fresh install: no stall while the compiled loop compiles", "first_call.py", "first_call"),
    ("offline extraction per document as the corpus grows, vs the code before issue 35", "extract_scale.py",
     "extract_scale"),
    ("one small edit on a big knowledge base (add_text, remove, add_edges), vs the code before issue 35",
     "edit_cost.py", "edit_cost"),
    ("save, reopen, first query and incremental save of a big knowledge base, vs the code before issue 35",
     "store_cost.py", "store_cost"),
    ("open + first query of one saved knowledge base, fresh processes alternated with a baseline commit",
     "open_first.py", "open_first"),
    ("BM25 tokenization: MB/s per corpus and a new knowledge base's first query, vs the code before",
     "tokenize_cost.py", "tokenize_cost"),
]
PLOTS_DIR = BENCH_DIR / "plots"
HISTORY = BENCH_DIR / "HISTORY.md"  # hand-kept before/after notes, appended to RESULTS.md
VERSIONS = ["pandas", "numpy", "pyarrow", "igraph", "leidenalg", "networkx", "graspologic-native", "bm25s",
            "matplotlib", "crux_nb"]
_CONDITION = re.compile(r"^(ours|ratio)\s*(<=|>=|==|<|>)\s*([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?:\s*\(.*\))?$")
_CLUSTER_TIME = re.compile(r"^cluster\(\) time \(s\), ([\d,]+) nodes$")


# ----------------------------------------------------------------- summaries
def summary_path(out_dir: Path, name: str, suffix: str) -> Path:
    return out_dir / f"{name}{suffix}.summary.json"


def load_summary(path: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The rows of one summary file, and a problem (None when it is readable and well formed)."""
    if not path.is_file():
        return [], "no summary"
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [], f"unreadable summary ({exc})"
    if not isinstance(rows, list) or not all(isinstance(r, dict) and set(r) == set(SUMMARY_KEYS) for r in rows):
        return [], f"summary rows need exactly the keys {list(SUMMARY_KEYS)}"
    bad = [r["verdict"] for r in rows if r["verdict"] not in VERDICTS]
    if bad:
        return [], f"verdicts {bad} not in {list(VERDICTS)}"
    return rows, None


def ratio_targets(target: str | None) -> list[tuple[str, float]]:
    """The ``ratio <op> <number>`` conditions of a summary target, as (op, number)."""
    out = []
    for part in (target or "").split(" and "):
        m = _CONDITION.match(part.strip())
        if m and m.group(1) == "ratio":
            out.append((m.group(2), float(m.group(3))))
    return out


def _num(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else fmt_num(value)


def glance_table(rows: list[dict[str, Any]]) -> str:
    """One row per measure of every summary: benchmark, measure, ours, baseline (name), ratio, target, verdict."""
    body = []
    for r in rows:
        baseline = _num(r["baseline"])
        if r["baseline_name"]:
            baseline = f"{baseline} ({r['baseline_name']})"
        body.append([r["benchmark"], r["measure"], _num(r["ours"]), baseline, _num(r["ratio"]), r["target"] or "-",
                     r["verdict"]])
    return markdown_table(["benchmark", "measure", "ours", "baseline (name)", "ratio", "target", "verdict"], body,
                          align=["l", "l", "r", "l", "r", "l", "l"])


# --------------------------------------------------------------------- plots
COLOURS = {"pass": "#2e7d32", "miss": "#c62828", "info": "#9e9e9e"}


def _style():
    """matplotlib's default style whatever the user's matplotlibrc says (so the images only depend on the data)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.style

    return matplotlib.style.context("default")


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100)


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})  # no version or date in the file
    return path


def _label(r: dict[str, Any], width: int = 95) -> str:
    text = f"{r['benchmark']}: {r['measure']}" + (f" vs {r['baseline_name']}" if r["baseline_name"] else "")
    return text if len(text) <= width else text[:width - 1] + "…"


def plot_ratios(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """Horizontal bars of ours / baseline per measure (log x), green pass / red miss / grey info, with a black
    tick at each ratio target. None when no row has a positive ratio."""
    rows = [r for r in rows if isinstance(r["ratio"], (int, float)) and r["ratio"] > 0]
    if not rows:
        return None
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    with _style():
        fig = _figure(13, 1.4 + 0.28 * len(rows))
        ax = fig.subplots()
        ys = list(range(len(rows)))[::-1]
        values = [r["ratio"] for r in rows]
        # bars grow from parity (1) to the ratio, so faster/smaller and slower/larger point opposite ways
        ax.barh(ys, [v - 1.0 for v in values], left=1.0, height=0.7, color=[COLOURS[r["verdict"]] for r in rows])
        for y, v in zip(ys, values):  # the ratio, written just beyond the bar's end
            ax.text(v * (1.08 if v >= 1 else 1 / 1.08), y, fmt_num(v), va="center", ha="left" if v >= 1 else "right",
                    fontsize=6)
        for y, r in zip(ys, rows):
            for _, value in ratio_targets(r["target"]):
                if value > 0:
                    ax.plot([value, value], [y - 0.45, y + 0.45], color="black", linewidth=2.5)
                    values.append(value)
        ax.axvline(1.0, color="#555555", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        ax.set_xlim(min(values + [1.0]) / 4, max(values + [1.0]) * 4)
        ax.set_yticks(ys)
        ax.set_yticklabels([_label(r) for r in rows], fontsize=7)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_xlabel("ours / baseline (log scale; dotted line: parity)")
        ax.set_title("Ratios to the baseline measured in the same run")
        ax.legend(handles=[Patch(color=COLOURS["pass"], label="pass"), Patch(color=COLOURS["miss"], label="miss"),
                           Patch(color=COLOURS["info"], label="info (no target)"),
                           Line2D([], [], color="black", linewidth=2.5, label="target")],
                  loc="lower right", fontsize=7)
        ax.grid(axis="x", which="both", alpha=0.25)
        fig.tight_layout()
        return _save(fig, path)


def plot_clustering(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """cluster() seconds against nodes for crux_nb and the baseline (log-log); None with fewer than 2 sizes."""
    points = []
    for r in rows:
        m = _CLUSTER_TIME.match(r["measure"]) if r["benchmark"] == "clustering" else None
        if m and r["ours"] is not None:
            points.append((int(m.group(1).replace(",", "")), r["ours"], r["baseline"], r["baseline_name"]))
    if len({p[0] for p in points}) < 2:
        return None
    points.sort()
    with _style():
        fig = _figure(6.5, 4.5)
        ax = fig.subplots()
        ax.plot([p[0] for p in points], [p[1] for p in points], "o-", color="#1565c0", label="crux_nb")
        base = [(p[0], p[2]) for p in points if p[2] is not None]
        if base:
            ax.plot([b[0] for b in base], [b[1] for b in base], "s--", color="#ef6c00",
                    label=next(p[3] for p in points if p[2] is not None))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes")
        ax.set_ylabel("seconds (median of the runs)")
        ax.set_title("Hierarchical clustering time")
        ax.grid(which="both", alpha=0.25)
        ax.legend()
        fig.tight_layout()
        return _save(fig, path)


def plot_global_search(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """Input characters per question: scan all vs adaptive per detail (with the 0.5 x scan-all target) and,
    when the GraphRAG benchmark ran, crux_nb's configurations vs GraphRAG's static global search."""
    carol = [r for r in rows if r["benchmark"] == "global_search" and r["measure"].startswith("input chars")
             and r["ours"] is not None and r["baseline"] is not None]
    graphrag = [r for r in rows if r["benchmark"] == "graphrag_import"
                and r["measure"].startswith("global search input chars") and r["ours"] is not None]
    if not carol and not graphrag:
        return None
    from matplotlib.ticker import StrMethodFormatter

    panels = [p for p in (carol, graphrag) if p]
    with _style():
        fig = _figure(6 * len(panels), 4.5)
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        k = 0
        if carol:
            ax = axes[k]
            k += 1
            details = [r["measure"].rsplit("detail=", 1)[-1] for r in carol]
            xs = range(len(carol))
            ax.bar([x - 0.18 for x in xs], [r["baseline"] for r in carol], width=0.34, color="#90a4ae",
                   label="scan all")
            ax.bar([x + 0.18 for x in xs], [r["ours"] for r in carol], width=0.34,
                   color=[COLOURS[r["verdict"]] for r in carol], label="adaptive")
            for x, r in zip(xs, carol):
                for _, value in ratio_targets(r["target"]):
                    ax.plot([x - 0.02, x + 0.38], [value * r["baseline"]] * 2, color="black", linewidth=2)
            ax.set_xlim(-0.7, len(carol) - 0.3)
            ax.set_ylim(0, max(r["baseline"] for r in carol) * 1.2)
            ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
            ax.set_xticks(list(xs))
            ax.set_xticklabels([f"detail={d}" for d in details])
            ax.set_ylabel("input characters per question (mean)")
            ax.set_title("Christmas Carol: scan all vs adaptive\n(black: target, adaptive <= 0.5 x scan all)",
                         fontsize=9)
            ax.legend(fontsize=8, loc="upper right")
        if graphrag:
            ax = axes[k]
            names = [r["measure"].split("question, ", 1)[-1].replace(", ", "\n") for r in graphrag]
            ax.bar(range(len(graphrag)), [r["ours"] for r in graphrag], color="#1565c0", label="crux_nb")
            base = next((r for r in graphrag if r["baseline"] is not None), None)
            if base is not None:
                ax.axhline(base["baseline"], color="#ef6c00", linestyle="--", label=base["baseline_name"])
            top = max([r["ours"] for r in graphrag] + ([base["baseline"]] if base is not None else []))
            ax.set_ylim(0, top * 1.3)
            ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
            ax.set_xticks(range(len(graphrag)))
            ax.set_xticklabels(names, fontsize=7)
            ax.set_ylabel("input characters per question (mean)")
            ax.set_title("GraphRAG index: crux_nb global_search vs GraphRAG", fontsize=9)
            ax.legend(fontsize=7, loc="upper left")
        fig.tight_layout()
        return _save(fig, path)


def write_plots(rows: list[dict[str, Any]], plots_dir: Path, suffix: str) -> list[tuple[str, Path]]:
    """Every plot the summaries allow, as (caption, path); a plot without data is skipped."""
    made = []
    for caption, name, fn in (("ours / baseline per measure, with the targets", "ratios", plot_ratios),
                              ("clustering time against nodes", "clustering_time", plot_clustering),
                              ("global search input characters", "global_search_chars", plot_global_search)):
        path = fn(rows, plots_dir / f"{name}{suffix}.png")
        if path is not None:
            made.append((caption, path))
    return made


# ------------------------------------------------------------------- report
def _display(path: Path) -> str:
    """``path`` relative to the project folder when inside it (no machine-specific prefix in the report)."""
    try:
        return path.resolve().relative_to(BENCH_DIR.parent).as_posix()
    except ValueError:
        return str(path)


def run_benchmark(script: str, report: Path, small: bool) -> tuple[str, float, str]:
    """Run one benchmark (its old report and summary removed first); (status, seconds, stdout + stderr tail)."""
    report.unlink(missing_ok=True)
    summary_path(report.parent, report.name[:-3], "").unlink(missing_ok=True)
    cmd = [sys.executable, "-m", f"bench.{Path(script).stem}", "--out", str(report)] + (["--small"] if small else [])
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=BENCH_DIR.parent)  # python -m bench.<name>
    seconds = time.perf_counter() - t0
    status = "ok" if done.returncode == 0 else f"exit {done.returncode}"
    tail = "" if done.returncode == 0 else f"\n\n```\n{done.stderr[-3000:]}\n```\n"
    return status, seconds, done.stdout + tail if not report.exists() else tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the small modes (reports *_small.md, plots *_small.png)")
    parser.add_argument("--no-run", "--collect-only", dest="no_run", action="store_true",
                        help="run nothing: collect the reports and summaries already in --out-dir")
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR, help="benchmark reports and summaries (bench/out)")
    parser.add_argument("--results", type=Path, default=BENCH_DIR / "RESULTS.md", help="output (bench/RESULTS.md)")
    parser.add_argument("--plots-dir", type=Path, default=PLOTS_DIR, help="plot images (bench/plots)")
    parser.add_argument("--no-plots", action="store_true", help="write no plot images")
    args = parser.parse_args(argv)
    suffix = "_small" if args.small else ""
    flag = " --small" if args.small else ""

    sections, runs, rows = [], [], []
    for title, script, name in BENCHMARKS:
        report = args.out_dir / f"{name}{suffix}.md"
        if args.no_run:
            status, seconds, extra = ("collected" if report.is_file() else "missing"), math.nan, ""
        else:
            status, seconds, extra = run_benchmark(script, report, args.small)
        summary, problem = load_summary(summary_path(args.out_dir, name, suffix))
        rows += summary
        body = (report.read_text(encoding="utf-8") if report.is_file() else "") + extra
        runs.append([title, script, status, "-" if math.isnan(seconds) else f"{seconds:.0f}",
                     str(len(summary)) if problem is None else problem])
        sections.append(f"## {title}\n\n`python -m bench.{Path(script).stem}{flag}`\n\n{body.strip() or '(no report)'}\n")

    info = machine_info(VERSIONS)
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    out_dir = _display(args.out_dir)
    mode = ("small" if args.small else "full") + (
        f" (collected from the existing reports in `{out_dir}`, nothing re-run)" if args.no_run else "")
    head = ["# Benchmark results", "",
            f"Mode: {mode}; load average at end: {load_average()}.", "",
            markdown_table(["benchmark", "script", "status", "seconds", "summary rows"], runs,
                           align=["l", "l", "l", "r", "l"]), "",
            "## Machine and versions", "",
            markdown_table(["key", "value"], list(info.items()), align=["l", "l"]), "",
            "## Targets at a glance", "",
            f"{len(rows)} measures from the benchmarks' summaries (`{out_dir}/<name>{suffix}.summary.json`): "
            f"{counts['pass']} pass, {counts['miss']} miss, {counts['info']} for information (no target). "
            "ratio = ours / baseline; a target names the figure it bounds (`ours` or `ratio`).", "",
            glance_table(rows) if rows else "(no summaries found)", ""]
    plots = [] if args.no_plots else write_plots(rows, args.plots_dir, suffix)
    if plots:
        head += ["## Plots", ""]
        for caption, path in plots:
            rel = Path(os.path.relpath(path.resolve(), args.results.resolve().parent)).as_posix()
            head += [f"![{caption}]({rel})", ""]
    if HISTORY.is_file() and not args.small:  # before/after notes of past changes, kept by hand
        notes = HISTORY.read_text(encoding="utf-8")
        sections.append("#" + notes if notes.startswith("# ") else notes)  # its title one level down, as a section
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text("\n".join(head) + "\n" + "\n".join(sections), encoding="utf-8")
    print(f"written to {args.results}" + "".join(f"\nplot: {p}" for _, p in plots))
    ok = ("ok", "collected")
    return 0 if all(row[2] in ok and row[4].isdigit() for row in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
