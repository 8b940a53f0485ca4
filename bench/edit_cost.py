"""Benchmark: one small edit on a big knowledge base -- ``add_text`` (a new source, and replacing one),
``remove`` and ``add_edges`` of one source -- this checkout against the code before issue 35 in the same run.

The knowledge base is ``bench/neighbors.py``'s generator with 5 chunks per source and only ``mentions`` edges:
100k chunks / 500k edges and 200k chunks / 1M edges (``--small``: 10k / 50k), built through the public API.
Each side runs in its own subprocess (``crux_nb`` imported from this checkout, or from the tree of
``bench/_baseline.py``'s ``BEFORE_ISSUE_35`` commit, or ``--baseline REF``, unpacked by ``bench/_baseline.py``),
builds the same knowledge base and applies the same edits in the same order, timing each call; after every edit
the frames are hashed column by column, and both sides' hashes must agree on the columns both have. One sample
per edit and side (the old code's take tens of seconds at these sizes); wall clock on a shared 2-core machine.
Target (issue 35): each edit under 1 s.

    python -m bench.edit_cost [--small] [--sizes 100000:500000,200000:1000000] [--baseline REF] [--out REPORT.md]
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

TARGET_S = 1.0
SMALL = (10_000, 50_000)  # chunks, edges
TABLES = ("documents", "parents", "chunks", "entities", "edges", "edge_evidence")


def _digests(kb) -> dict[str, str]:
    """Per-column hashes (with the row labels) of every table; ``path`` left out as before."""
    from _baseline import frame_digests  # this checkout's (bench/ is the script's folder; a side's bench/ may be older)

    return frame_digests({t: getattr(kb, t).drop(columns=["path"], errors="ignore") for t in TABLES}, index=True)


def side(n_chunks: int, n_edges: int) -> dict:
    """Build, then time each edit (in this process: ``crux_nb`` from ``PYTHONPATH``)."""
    import crux_nb
    from bench import neighbors as nb

    cfg = nb.Config(n_sources=n_chunks // 5, chunks_per_source=5, n_entities=n_chunks // 2, n_mentions=n_edges,
                    n_related=0, n_references=0)
    syn = nb.make_graph(cfg)
    t = time.perf_counter()
    kb = crux_nb.knowledge_base(id="bench")
    kb.add_frame(nb.source_frame(syn, cfg), id_column="id", text_column="text", format="text")
    kb.add_edges(syn.edges)
    out = {"build_s": time.perf_counter() - t,
           "edges": len(kb.edges), "edits": []}
    sources = syn.source_ids
    chunks = kb.chunks["ref"][kb.chunks["source_id"] == sources[7]].tolist()
    frame = pd.DataFrame({"from_ref": chunks, "to_ref": syn.entity_refs[:len(chunks)], "type": "mentions",
                          "evidence": [[c] for c in chunks]})
    edits = [
        ("add_text (a new source)", lambda: kb.add_text("zz-new.md", "A new small source.\n\nTwo paragraphs.")),
        ("add_text (replace a source)", lambda: kb.add_text(sources[len(sources) // 2], "Replaced text.")),
        ("remove (one source)", lambda: kb.remove(sources[len(sources) // 3])),
        (f"add_edges ({len(frame)} edges of one source)", lambda: kb.add_edges(frame)),
    ]
    for name, edit in edits:
        t = time.perf_counter()
        edit()
        out["edits"].append({"edit": name, "seconds": time.perf_counter() - t, "digests": _digests(kb)})
    return out


def run(sizes, baseline: str, out: Path, small: bool = False) -> str:
    from bench._baseline import checkout, digest_differences, run_side
    from bench._common import load_average, markdown_table, write_summary, write_text

    old_code, baseline_name = checkout(baseline), f"code before issue 35 ({baseline})"
    rows, summary = [], []
    for n_chunks, n_edges in sizes:
        ours = run_side(ROOT, Path(__file__), ["--side", f"{n_chunks}:{n_edges}"])
        theirs = run_side(old_code, Path(__file__), ["--side", f"{n_chunks}:{n_edges}"])
        assert len(ours["edits"]) == len(theirs["edits"]), "the sides ran different edits"
        for a, b in zip(ours["edits"], theirs["edits"]):
            differ = digest_differences(a["digests"], b["digests"])
            assert a["edit"] == b["edit"] and not differ, f"{a['edit']}: the frames differ ({differ})"
            verdict = "pass" if a["seconds"] < TARGET_S else "miss"
            rows.append([f"{n_chunks:,} / {ours['edges']:,}", a["edit"], f"{b['seconds']:.2f}", f"{a['seconds']:.3f}",
                         f"{b['seconds'] / a['seconds']:.0f}x", verdict])
            summary.append({"measure": f"{a['edit']}, {n_chunks:,} chunks / {ours['edges']:,} edges (s)",
                            "ours": a["seconds"], "baseline": b["seconds"], "baseline_name": baseline_name,
                            "target": f"ours < {TARGET_S:g} (issue 35: at 100k / 500k and 200k / 1M)",
                            "verdict": verdict})
            print(rows[-1], file=sys.stderr, flush=True)
    text = "\n".join([
        f"# Edit cost on big knowledge bases (issue 35){' (small)' if small else ''}", "",
        f"One timed call per edit and side, each side in its own process (the {baseline_name} unpacked by "
        "bench/_baseline.py), the same knowledge base and edits; frames hashed equal (the columns both have) after "
        f"every edit. Target: under 1 s each. Shared 2-core machine, load average {load_average()}.", "",
        markdown_table(["chunks / edges", "edit", "before s", "this checkout s", "before / this", "< 1 s"],
                       rows), ""])
    write_text(out, text)
    write_summary(out, "edit_cost", summary)
    return text


def main(argv=None) -> int:

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help=f"{SMALL[0]:,} chunks / {SMALL[1]:,} edges")
    parser.add_argument("--sizes", default="100000:500000,200000:1000000", help="chunks:edges,...")
    parser.add_argument("--baseline", default=None,
                        help="git ref of the baseline code (default bench/_baseline.py's BEFORE_ISSUE_35)")
    parser.add_argument("--side", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None,
                        help="Markdown report (default bench/out/edit_cost[_small].md)")
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(side(*(int(x) for x in args.side.split(":")))))
        return 0
    # imported after --side: a side may run with the baseline's tree first on the path (its bench/ is older)
    from bench._baseline import BEFORE_ISSUE_35
    sizes = [SMALL] if args.small else [tuple(int(x) for x in s.split(":")) for s in args.sizes.split(",")]
    out = args.out or ROOT / "bench" / "out" / ("edit_cost_small.md" if args.small else "edit_cost.md")
    print(run(sizes, args.baseline or BEFORE_ISSUE_35, out, args.small))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
