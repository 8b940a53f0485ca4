"""Benchmark: multi-hop retrieval on MuSiQue, HotpotQA and 2WikiMultihopQA -- BM25 alone versus BM25 plus
``expand_relations`` under each ranking, Recall@2 / Recall@5 and latency per query.

Data: ``../shared/data/multihop/{musique,hotpotqa,2wiki}`` (half of each public sample; the other half
is held back). Each passage is one source of a knowledge base built through the public API
(``kb.add_frame``, then ``kb.extract_entities()`` with the offline model); built knowledge bases are
cached under ``bench/out/multihop_kb`` (keyed by the corpus and the extraction code).

Configurations, each returning 5 hits (``expand_relations`` is additive, so the first 3 hits of an
expanded run are BM25's and Recall@2 of an expanded run equals BM25's by construction):

* ``BM25(5)``: ``retrieve(limit=5)``, the baseline;
* ``BM25(3) + expand(2) upstream``: ``expand_relations(limit=2, ranking="upstream")`` (all edge types,
  depth 1, free entity hops: upstream's traversal and order);
* ``BM25(3) + expand(2) relevance``: ``expand_relations(limit=2)``, the default ranking;
* ``BM25(1) + expand(1) relevance``: a Recall@2 view of the relevance ranking;
* ``depth 2`` rows: the default at depth 2 (hop damping 0.01, read floor 1/16), then with every
  hop weighed alike (``damping=1``) and with every node read (``min_share=0``).

Recall@k: the share of a question's gold passages among the first k hits, averaged over questions
(HippoRAG's definition). Targets: the default beats BM25(5) on every sample by at least 3 points of
Recall@5; the same is reported on the odd and even halves of each question list (stability).

    .venv/bin/python bench/multihop.py            # every question of all three samples
    .venv/bin/python bench/multihop.py --small    # MuSiQue, first 300 passages' questions (seconds)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from crux_nb.embeddings import StaticEmbedder  # noqa: E402
from crux_nb.retrieval import BM25Leg, DenseLeg, expand_relations, retrieve  # noqa: E402

from bench import _multihop as md  # noqa: E402
from bench._common import OUT_DIR, load_average, machine_info, markdown_table, percentile, write_summary, write_text  # noqa: E402

TARGET_POINTS = 3.0
# Published retrieval results (R@2 / R@5, %) as the upper reference: HippoRAG (arXiv 2405.14831, Table 2,
# ColBERTv2 retriever, LLM-extracted graph) and HippoRAG 2 (arXiv 2502.14802, R@5 only, with its BM25 row).
PUBLISHED = {
    "musique": {"HippoRAG (ColBERTv2)": (40.9, 51.9), "BM25 (HippoRAG paper)": (32.3, 41.2),
                "HippoRAG 2": (None, 74.7), "BM25 (HippoRAG 2 paper)": (None, 43.5)},
    "2wiki": {"HippoRAG (ColBERTv2)": (70.7, 89.1), "BM25 (HippoRAG paper)": (51.8, 61.9),
              "HippoRAG 2": (None, 90.4), "BM25 (HippoRAG 2 paper)": (None, 65.3)},
    "hotpotqa": {"HippoRAG (ColBERTv2)": (60.5, 77.7), "BM25 (HippoRAG paper)": (55.4, 72.2),
                 "HippoRAG 2": (None, 96.3), "BM25 (HippoRAG 2 paper)": (None, 74.8)},
}
BASELINE = "BM25(5)"
DEPTH2 = "BM25(3) + expand(2) relevance, depth 2"
DEPTH2_UNDAMPED = "BM25(3) + expand(2) relevance, depth 2, damping=1 (every hop alike)"
DEPTH2_FULL = "BM25(3) + expand(2) relevance, depth 2, min_share=0 (every node read)"
DEFAULT = "BM25(3) + expand(2) relevance [default]"
CONFIGS = {
    BASELINE: lambda: [retrieve(limit=5)],
    "BM25(3) + expand(2) upstream": lambda: [retrieve(limit=3), expand_relations(limit=2, ranking="upstream")],
    DEFAULT: lambda: [retrieve(limit=3), expand_relations(limit=2)],
    "BM25(2)": lambda: [retrieve(limit=2)],
    "BM25(1) + expand(1) relevance": lambda: [retrieve(limit=1), expand_relations(limit=1)],
    # depth 2: the default (hop damping 0.01, read floor 1/16) against each of them turned off
    DEPTH2: lambda: [retrieve(limit=3), expand_relations(limit=2, depth=2)],
    DEPTH2_UNDAMPED: lambda: [retrieve(limit=3), expand_relations(limit=2, depth=2, damping=1)],
    DEPTH2_FULL: lambda: [retrieve(limit=3), expand_relations(limit=2, depth=2, min_share=0)],
}
# a dense leg (StaticEmbedder) beside BM25, and query entity seeds from its embeddings (expand_relations(dense_entities=k))
_HYBRID = lambda limit: retrieve(limit=limit, legs=(BM25Leg(), DenseLeg(StaticEmbedder())))  # noqa: E731
DENSE_CONFIGS = {
    "hybrid(5)": lambda: [_HYBRID(5)],
    "hybrid(3) + expand(2) relevance": lambda: [_HYBRID(3), expand_relations(limit=2)],
    "hybrid(3) + expand(2), dense entity seeds 1": lambda: [_HYBRID(3), expand_relations(limit=2, dense_entities=1)],
    "hybrid(3) + expand(2), dense entity seeds 3": lambda: [_HYBRID(3), expand_relations(limit=2, dense_entities=3)],
}
SMALL_PASSAGES = 300


def recall(sources: list[str], gold: frozenset[str], k: int) -> float:
    return len(set(sources[:k]) & gold) / len(gold)


def evaluate(kb, questions, name):
    recipe = kb.recipe(steps=CONFIGS[name](), id=f"multihop-{len(name)}")
    recipe.retrieve(questions[0].question)  # warm-up: indexes
    per_q, ms = [], []
    for q in questions:
        t = time.perf_counter()
        hits = recipe.retrieve(q.question)
        ms.append((time.perf_counter() - t) * 1000)
        sources = [h.source.id for h in hits]
        per_q.append((recall(sources, q.gold, 2), recall(sources, q.gold, 5)))
    return per_q, sorted(ms)


def mean(values):
    return sum(values) / len(values) if values else float("nan")


def run(small: bool, out_path: Path | None = None, samples: tuple[str, ...] | None = None,
        dense: bool = False) -> str:
    rows, halves, summary, builds = [], [], [], []
    samples = samples or (("musique",) if small else md.SAMPLES)
    if dense:
        CONFIGS.update(DENSE_CONFIGS)
    for sample_name in samples:
        sample = md.load_sample(sample_name)
        passages, questions = sample.passages, list(sample.questions)
        if small:
            passages = passages.iloc[:SMALL_PASSAGES]
            keep = set(passages["id"])
            questions = [q for q in questions if q.gold <= keep]
        kb, seconds, cached = md.build_kb(sample, passages=passages)
        s = kb.summary()
        builds.append([sample_name, len(passages), len(questions), s["entities"], s["edges"],
                       "cached" if cached else f"{seconds:.1f}"])
        results = {name: evaluate(kb, questions, name) for name in CONFIGS}
        base = results[BASELINE][0]
        for name, (per_q, ms) in results.items():
            r2, r5 = mean([a for a, _ in per_q]), mean([b for _, b in per_q])
            rows.append([sample_name, name, f"{r2:.3f}", f"{r5:.3f}", f"{(r5 - mean([b for _, b in base])) * 100:+.1f}",
                         f"{mean(ms):.1f}", f"{percentile(ms, 95):.1f}"])
        for label, parity in (("even", 0), ("odd", 1)):
            pick = [i for i in range(len(questions)) if i % 2 == parity]
            b5 = mean([base[i][1] for i in pick])
            cells = [f"{(mean([results[n][0][i][1] for i in pick]) - b5) * 100:+.1f}"
                     for n in (DEFAULT, "BM25(3) + expand(2) upstream")]
            halves.append([sample_name, label, len(pick), f"{b5:.3f}", *cells])
        for ref, (p2, p5) in PUBLISHED[sample_name].items():
            rows.append([sample_name, f"{ref} (published)", "-" if p2 is None else f"{p2 / 100:.3f}",
                         f"{p5 / 100:.3f}", "", "", ""])
        d5, b5 = mean([b for _, b in results[DEFAULT][0]]), mean([b for _, b in base])
        gain = (d5 - b5) * 100
        summary += [
            {"measure": f"{sample_name}: Recall@5 gain of the default expansion over BM25(5) (points)", "ours": gain,
             "target": f"ours >= {TARGET_POINTS:g}", "verdict": "pass" if gain >= TARGET_POINTS else "miss"},
            {"measure": f"{sample_name}: Recall@5, {DEFAULT}", "ours": d5, "baseline": b5,
             "baseline_name": "BM25(5) (same run)"},
            {"measure": f"{sample_name}: Recall@5, BM25(3) + expand(2) upstream", "ours":
             mean([b for _, b in results['BM25(3) + expand(2) upstream'][0]]), "baseline": b5,
             "baseline_name": "BM25(5) (same run)"},
            {"measure": f"{sample_name}: mean latency per query, {DEFAULT} (ms)", "ours": mean(results[DEFAULT][1]),
             "baseline": mean(results[BASELINE][1]), "baseline_name": "BM25(5) (same run)"},
            {"measure": f"{sample_name}: Recall@5, {DEPTH2} (hop damping 0.01 vs none)",
             "ours": mean([b for _, b in results[DEPTH2][0]]), "baseline": mean([b for _, b in results[DEPTH2_UNDAMPED][0]]),
             "baseline_name": "damping=1 (same run)"},
            {"measure": f"{sample_name}: Recall@5, {DEPTH2} (read floor 1/16 vs none)",
             "ours": mean([b for _, b in results[DEPTH2][0]]), "baseline": mean([b for _, b in results[DEPTH2_FULL][0]]),
             "baseline_name": "min_share=0 (same run)"},
            {"measure": f"{sample_name}: mean latency per query, {DEPTH2} (read floor vs none, ms)",
             "ours": mean(results[DEPTH2][1]),
             "baseline": mean(results[DEPTH2_FULL][1]), "baseline_name": "min_share=0 (same run)"}]
        print(f"  {sample_name}: done", file=sys.stderr, flush=True)
    info = machine_info(["pandas", "numpy", "bm25s"])
    text = "\n".join([
        f"# Multi-hop retrieval ({'small' if small else 'full'})", "",
        "Recall@k = share of gold passages in the first k hits, averaged over questions. Gain = Recall@5 minus "
        "BM25(5)'s, in points. Expanded runs keep BM25's first hits (the step is additive), so their Recall@2 is "
        "BM25's; `BM25(1) + expand(1)` shows the relevance ranking at k = 2. Published rows are other systems "
        "(LLM-built graphs, dense retrievers), an upper reference, not a same-run baseline.", "",
        markdown_table(["sample", "config", "Recall@2", "Recall@5", "gain R@5 (pts)", "mean ms/query", "p95 ms"], rows),
        "", "## Stability: Recall@5 gain over BM25(5) on each half of the questions", "",
        markdown_table(["sample", "half", "questions", "BM25(5) R@5", "default gain (pts)", "upstream gain (pts)"],
                       halves),
        "", "## Knowledge bases", "",
        markdown_table(["sample", "passages", "questions", "entities", "edges", "build s"], builds),
        "", f"Load average at end: {load_average()}; python {info.get('python')}.", ""])
    path = write_text(out_path or OUT_DIR / ("multihop_small.md" if small else "multihop.md"), text)
    write_summary(path, "multihop", summary)
    print(text)
    print(f"written to {path}", file=sys.stderr)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--samples", nargs="+", choices=md.SAMPLES, help="only these samples")
    parser.add_argument("--dense", action="store_true", help="also hybrid (BM25 + StaticEmbedder) configurations, "
                        "with and without dense query entity seeds")
    args = parser.parse_args(argv)
    if not md.DATA.is_dir():
        print(f"multihop: shared data not found at {md.DATA}", file=sys.stderr)
        return 2
    run(args.small, args.out, tuple(args.samples) if args.samples else None, args.dense)
    return 0


if __name__ == "__main__":
    sys.exit(main())
