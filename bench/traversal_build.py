"""Benchmark: building the traversal CSR ``expand_relations`` reads (``kb.reader.traversal_index``, built on a
reader's first traversal), this checkout against the code before it was built in bulk, in one run on one knowledge base (issue 35,
compute part).

Workload: ``bench/store_cost.py``'s, built and saved once by each side's code (an older crux_nb may not read
this one's format): ``N`` chunks of real prose (20 per source), ``N/2``
entities and ``E`` ``mentions`` edges from random chunks to random entities. Each side runs in its own
subprocess (``crux_nb`` from this checkout, or from the earlier tree unpacked by ``bench/_baseline.py``) and, per
repeat, opens the folder afresh, reads one neighbour list (the adjacency index, timed), then times
``reader.traversal_index``; the sides' arrays must hash equal. Then, in a fresh process per side (twice,
alternated), the first ``retrieve + expand_relations`` query after ``crux_nb.open``.

Usage::

    .venv/bin/python bench/traversal_build.py                 # 100k chunks / 500k edges (a few minutes)
    .venv/bin/python bench/traversal_build.py --small         # 10k / 50k
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # appended: a side's PYTHONPATH decides which crux_nb is imported

ARRAYS = ("refs", "kind", "chunk_code", "row_of_code", "node", "peer", "etype", "direction", "indptr")


def _digest(index) -> str:
    h = hashlib.sha256()
    for name in ARRAYS:
        values = getattr(index, name)
        h.update("\x00".join(values.tolist()).encode("utf-8", "surrogatepass") if name == "refs" else values.tobytes())
        h.update(str(values.dtype).encode())
    return h.hexdigest()[:16]


def side_build(folder: str, repeats: int) -> dict:
    import crux_nb

    adjacency, build, digest = [], [], None
    for _ in range(repeats):
        reader = crux_nb.open(folder).reader
        t0 = time.perf_counter()
        reader.neighbors("entity:e0000000")  # builds the adjacency index both builds read, not the traversal's
        adjacency.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        index = reader.traversal_index
        build.append(time.perf_counter() - t0)
        digest = _digest(index)
    return {"adjacency": adjacency, "build": build, "digest": digest, "nodes": len(index.refs),
            "entries": len(index.node)}


def side_first(folder: str) -> dict:
    import crux_nb
    from bench import store_cost

    kb = crux_nb.open(folder)
    t0 = time.perf_counter()
    kb.recipe(steps=[crux_nb.retrieve(limit=10), crux_nb.expand_relations()]).retrieve(store_cost.QUERIES[0])
    return {"first": time.perf_counter() - t0}


def run(n_chunks: int, n_edges: int, repeats: int, baseline: str, out: Path, small: bool = False) -> str:
    from bench import store_cost
    from bench._baseline import checkout, run_side
    from bench._common import load_average, markdown_table, write_summary, write_text

    old_code, baseline_name = checkout(baseline), f"code before the bulk build ({baseline})"
    with tempfile.TemporaryDirectory() as work:
        # each side opens the knowledge base saved by its own code: an older crux_nb may not read this one's format
        folders = {"this": f"{work}/this", "before": f"{work}/before"}
        built = store_cost.step_build(folders["this"], n_chunks, n_edges)
        store_cost.build_with(old_code, folders["before"], n_chunks, n_edges)
        sides = {"this": ROOT, "before": old_code}
        build = {k: run_side(code, Path(__file__), ["--side", "build", folders[k], str(repeats)])
                 for k, code in sides.items()}
        first = {k: [] for k in sides}
        for k, code in list(sides.items()) * 2:  # alternated, best of two: a fresh process each
            first[k].append(run_side(code, Path(__file__), ["--side", "first", folders[k]])["first"])
        first = {k: min(v) for k, v in first.items()}
    ours, theirs = build["this"], build["before"]
    assert ours["digest"] == theirs["digest"], "the traversal index arrays differ from the code before"
    size = f"{built['chunks']:,} chunks / {built['edges']:,} edges"
    measures = [("first neighbors() after open: adjacency + structure indexes (s)", min(ours["adjacency"]),
                 min(theirs["adjacency"]), None),
                ("reader.traversal_index build, best of repeats (s)", min(ours["build"]), min(theirs["build"]),
                 "ratio <= 1 (no slower than the per-node build)"),
                ("first retrieve + expand_relations after open, fresh process, best of 2 (s)", first["this"],
                 first["before"], None)]
    rows, summary = [], []
    for name, o, b, target in measures:
        verdict = "info" if target is None else ("pass" if o <= b else "miss")
        rows.append([name, f"{b:.2f}", f"{o:.2f}", f"{b / o:.1f}x", verdict])
        summary.append({"measure": f"{name}, {size}", "ours": o, "baseline": b, "baseline_name": baseline_name,
                        "target": target, "verdict": verdict})
    text = "\n".join([
        f"# Traversal index build (issue 35){' (small)' if small else ''}", "",
        f"{size}, {ours['nodes']:,} nodes, {ours['entries']:,} entries; each side in its own process (the "
        f"{baseline_name} unpacked by bench/_baseline.py), {repeats} repeats; the arrays hash equal "
        f"({ours['digest']}). Shared 2-core machine, load average {load_average()}.", "",
        markdown_table(["measure", "before s", "this checkout s", "before / this", "target"], rows), ""])
    write_text(out, text)
    write_summary(out, "traversal_build", summary)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="10k chunks / 50k edges")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", default=None, help="a commit (default: BEFORE_BULK_TRAVERSAL_INDEX)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--side", nargs="+", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        kind, folder, *rest = args.side
        print(json.dumps(side_build(folder, int(rest[0])) if kind == "build" else side_first(folder)))
        return 0
    from bench._baseline import BEFORE_BULK_TRAVERSAL_INDEX  # here: a side imports the earlier tree's bench/

    n_chunks, n_edges = (10_000, 50_000) if args.small else (100_000, 500_000)
    out = args.out or ROOT / "bench" / "out" / f"traversal_build{'_small' if args.small else ''}.md"
    print(run(n_chunks, n_edges, args.repeats, args.baseline or BEFORE_BULK_TRAVERSAL_INDEX, out, args.small))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
