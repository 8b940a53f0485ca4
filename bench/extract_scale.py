"""Benchmark: offline ``extract_entities()`` time per document as the corpus grows (issue 35).

Short real passages (2WikiMultihopQA, then MuSiQue and HotpotQA: about 460 characters each; 9,003 in all,
from ``../shared/data/multihop``) are added as one source each and extracted with the offline model.
Past 9,003 documents (``--large``: 1k, 10k, 50k, 100k) the corpus continues with the real passages again,
their name words consistently renamed per round (``bench/_scale_corpus.py``: same text and structure, new
multi-word names each round, so the distinct-entity count keeps growing with the corpus).
Per-document time should stay flat as the corpus (and its entity count) grows (target: max / min of the
per-passage times <= 1.5). Before issue 35, cross-source name folding scanned every full name for every
one-word name (quadratic in the entity count); that code (``bench/_baseline.py``'s ``BEFORE_ISSUE_35``, or
``--baseline REF``) runs in the same benchmark on the smaller corpora (its 6,119-passage run took 809 s),
each run in its own process, and the extracted graphs (entities, edges, evidence: the columns both versions
have) are checked identical.
``--small`` is 300 and 900 passages, both sides. Each size reports seconds, entities, edges and the side
process' peak memory (VmHWM: corpus, knowledge base and extraction).

    python -m bench.extract_scale [--small | --large] [--sizes 1000,3000,9003] [--previous 1000,2000]
        [--baseline REF] [--out REPORT.md]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # appended: a side's PYTHONPATH decides which crux_nb is imported

OURS = "this checkout"
TARGET_SPREAD = 1.5  # issue 35: per-document time flat within 1.5x over the corpus sizes
SMALL = ("300,900", "300,900")  # --sizes, --previous
COLUMNS = ["documents", "code", "entities", "edges", "seconds", "ms / document", "peak MiB"]
LARGE = ("1000,10000,50000,100000", "1000")  # the baseline only where it runs in minutes


def side(n: int) -> dict:
    """Extract the first ``n`` documents (in this process: ``crux_nb`` from ``PYTHONPATH``)."""
    import crux_nb
    # this checkout's (bench/ is the script's folder), whichever crux_nb the side imports
    from _baseline import frame_digests
    from _common import hwm_mb
    from _multihop import CHUNK_SIZE
    from _scale_corpus import passages

    frame = passages(n)
    kb = crux_nb.knowledge_base(id="scale", chunk_size=CHUNK_SIZE)
    kb.add_frame(pd.DataFrame({"id": frame["id"], "text": frame["title"] + "\n\n" + frame["text"]}),
                 id_column="id", text_column="text", format="text")
    t = time.perf_counter()
    kb.extract_entities(progress=False)
    seconds = time.perf_counter() - t
    peak = hwm_mb()  # extraction's peak: the digests below copy each column once more
    digests = frame_digests({t: getattr(kb, t) for t in ("entities", "edges", "edge_evidence")})
    return {"n": len(frame), "seconds": seconds, "digests": digests, "entities": len(kb.entities),
            "edges": len(kb.edges), "peak_mb": peak, "chars": int((frame["title"].str.len() + 2
                                                                         + frame["text"].str.len()).mean())}


def _mb(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _summary(results: dict[int, dict[str, dict]], baseline_name: str) -> list[dict]:
    """Per size: ms per passage (against the baseline where it ran); then the flatness target over the sizes."""
    rows, per_doc = [], []
    for n, sides in sorted(results.items()):
        ours = sides[OURS]
        per_doc.append(1000 * ours["seconds"] / ours["n"])
        theirs = sides.get(baseline_name)
        rows.append({"measure": f"extract_entities per passage, {ours['n']:,} passages (ms)", "ours": per_doc[-1],
                     **({"baseline": 1000 * theirs["seconds"] / theirs["n"], "baseline_name": baseline_name}
                        if theirs else {})})
    spread = max(per_doc) / min(per_doc)
    rows.append({"measure": f"per-passage time, max / min over {len(per_doc)} corpus sizes", "ours": spread,
                 "target": f"ours <= {TARGET_SPREAD:g} (flat: linear in the corpus)",
                 "verdict": "pass" if spread <= TARGET_SPREAD else "miss"})
    return rows


def run(sizes, previous_sizes, baseline: str, out: Path) -> str:
    from bench._baseline import checkout, digest_differences, run_side
    from bench._common import load_average, markdown_table, write_summary, write_text

    baseline_name = f"code before issue 35 ({baseline})"
    codes = {OURS: ROOT, baseline_name: checkout(baseline)}
    rows, results = [], {}
    for n in sorted(set(sizes) | set(previous_sizes)):
        for name in [OURS] + ([baseline_name] if n in previous_sizes else []):
            r = run_side(codes[name], Path(__file__), ["--side", str(n)])
            results.setdefault(n, {})[name] = r
            rows.append([f"{r['n']:,}", name, f"{r['entities']:,}", f"{r['edges']:,}", f"{r['seconds']:.1f}",
                         f"{1000 * r['seconds'] / r['n']:.1f}", _mb(r.get("peak_mb"))])
            print(rows[-1], file=sys.stderr, flush=True)
        if baseline_name in results[n]:
            differ = digest_differences(results[n][OURS]["digests"], results[n][baseline_name]["digests"])
            assert not differ, f"the graphs differ at {n} passages: {differ}"
    summary = _summary(results, baseline_name)
    spread = summary[-1]["ours"]
    text = "\n".join([
        "# Offline extraction per document as the corpus grows (issue 35)", "",
        "Short passages (2Wiki, then MuSiQue and HotpotQA; past 9,003 the same passages with their name words "
        "renamed per round, bench/_scale_corpus.py), one source each, `extract_entities()` with the offline "
        f"model; each run in its own process, the {baseline_name} (bench/_baseline.py) on the smaller corpora; the "
        "extracted graphs (entities, edges, evidence; the columns both have) hashed equal on both sides. Shared "
        f"2-core machine, load average {load_average()}.",
        "", markdown_table(COLUMNS, rows), "",
        f"Per-passage time of {OURS}: max / min = {spread:.2f} (target <= {TARGET_SPREAD:g}): "
        f"{summary[-1]['verdict']}.", ""])
    write_text(out, text)
    write_summary(out, "extract_scale", summary)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help=f"sizes {SMALL[0]}, the baseline on both (a minute)")
    parser.add_argument("--large", action="store_true",
                        help=f"sizes {LARGE[0]} (renamed rounds past 9,003), the baseline on {LARGE[1]}")
    parser.add_argument("--sizes", default=None, help="corpus sizes of this checkout (default 1000,3000,9003)")
    parser.add_argument("--previous", default=None, help="sizes the baseline runs too (default 1000,2000)")
    parser.add_argument("--baseline", default=None,
                        help="git ref of the baseline code (default bench/_baseline.py's BEFORE_ISSUE_35)")
    parser.add_argument("--side", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None,
                        help="Markdown report (default bench/out/extract_scale[_small|_large].md)")
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(side(args.side)))
        return 0
    # imported after --side: a side may run with the baseline's tree first on the path (its bench/ is older)
    from bench._baseline import BEFORE_ISSUE_35
    from bench._common import OUT_DIR
    parse = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    preset = SMALL if args.small else LARGE if args.large else ("1000,3000,9003", "1000,2000")
    sizes, previous = args.sizes or preset[0], args.previous if args.previous is not None else preset[1]
    name = "extract_scale_small" if args.small else "extract_scale_large" if args.large else "extract_scale"
    out = args.out or OUT_DIR / f"{name}.md"
    print(run(parse(sizes), parse(previous), args.baseline or BEFORE_ISSUE_35, out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
