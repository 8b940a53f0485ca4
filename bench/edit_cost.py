"""Benchmark: one small edit on a big knowledge base -- ``add_text`` (a new source, and replacing one),
``remove`` and ``add_edges`` of one source -- this checkout against main's code in the same run.

The knowledge base is ``bench/neighbors.py``'s generator with 5 chunks per source and only ``mentions`` edges:
100k chunks / 500k edges and 200k chunks / 1M edges (``--small``: 10k / 50k), built through the public API.
Each side runs in its own subprocess (``crux_nb`` imported from this checkout, or from main's tree unpacked by
``bench/_baseline.py``), builds the same knowledge base and applies the same edits in the same order, timing
each call; after every edit the frames are hashed, and both sides' hashes must agree. One sample per edit and
side (main's take tens of seconds at these sizes); wall clock on a shared 2-core machine.

    python bench/edit_cost.py [--small] [--sizes 100000:500000,200000:1000000] [--baseline main]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # appended: a side's PYTHONPATH decides which crux_nb is imported

TARGET_S = 1.0
TABLES = ("documents", "parents", "chunks", "entities", "edges", "edge_evidence")


def _digest(kb) -> str:
    h = hashlib.sha256()
    for table in TABLES:
        frame = getattr(kb, table).drop(columns=["path"], errors="ignore")
        h.update(pd.util.hash_pandas_object(frame.astype(str), index=True).values.tobytes())
    return h.hexdigest()[:12]


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
        out["edits"].append({"edit": name, "seconds": time.perf_counter() - t, "digest": _digest(kb)})
    return out


def run(sizes, baseline: str, out: Path) -> str:
    from bench._baseline import checkout, run_side
    from bench._common import load_average, markdown_table, write_text

    main_code = checkout(baseline)
    rows = []
    for n_chunks, n_edges in sizes:
        ours = run_side(ROOT, Path(__file__), ["--side", f"{n_chunks}:{n_edges}"])
        theirs = run_side(main_code, Path(__file__), ["--side", f"{n_chunks}:{n_edges}"])
        for a, b in zip(ours["edits"], theirs["edits"]):
            assert a["digest"] == b["digest"], f"{a['edit']}: the frames differ from main's"
            rows.append([f"{n_chunks:,} / {ours['edges']:,}", a["edit"], f"{b['seconds']:.2f}", f"{a['seconds']:.3f}",
                         f"{b['seconds'] / a['seconds']:.0f}x", "pass" if a["seconds"] < TARGET_S else "miss"])
            print(rows[-1], flush=True)
    text = "\n".join([
        "# Edit cost on big knowledge bases (issue 35)", "",
        f"One timed call per edit and side, each side in its own process ({baseline} unpacked by bench/_baseline.py), "
        "the same knowledge base and edits; frames hashed equal after every edit. Target: under 1 s each. "
        f"Shared 2-core machine, load average {load_average()}.", "",
        markdown_table(["chunks / edges", "edit", f"{baseline} s", "this branch s", f"{baseline} / this", "< 1 s"],
                       rows), ""])
    write_text(out, text)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--sizes", default="100000:500000,200000:1000000")
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--side", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(side(*(int(x) for x in args.side.split(":")))))
        return 0
    sizes = [(10_000, 50_000)] if args.small else [tuple(int(x) for x in s.split(":")) for s in args.sizes.split(",")]
    out = args.out or ROOT / "bench" / "out" / ("edit_cost_small.md" if args.small else "edit_cost.md")
    print(run(sizes, args.baseline, out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
