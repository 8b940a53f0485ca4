"""Benchmark: building the traversal CSR ``expand_relations`` reads (``kb.reader.traversal_index``, built on a
reader's first traversal), this checkout against main's code, in one run on one knowledge base (issue 35,
compute part).

Workload: ``bench/store_cost.py``'s, built and saved once: ``N`` chunks of real prose (20 per source), ``N/2``
entities and ``E`` ``mentions`` edges from random chunks to random entities. Each side runs in its own
subprocess (``crux_nb`` from this checkout, or from main's tree unpacked by ``bench/_baseline.py``) and, per
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


def run(n_chunks: int, n_edges: int, repeats: int, baseline: str) -> str:
    from bench import store_cost
    from bench._baseline import checkout, run_side
    from bench._common import load_average

    main_code = checkout(baseline)
    with tempfile.TemporaryDirectory() as folder:
        built = store_cost.step_build(folder, n_chunks, n_edges)
        sides = {"this": ROOT, baseline: main_code}
        build = {k: run_side(code, Path(__file__), ["--side", "build", folder, str(repeats)])
                 for k, code in sides.items()}
        first = {k: [] for k in sides}
        for k, code in list(sides.items()) * 2:  # alternated, best of two: a fresh process each
            first[k].append(run_side(code, Path(__file__), ["--side", "first", folder])["first"])
        first = {k: min(v) for k, v in first.items()}
    ours, theirs = build["this"], build[baseline]
    assert ours["digest"] == theirs["digest"], "the traversal index arrays differ from main's"
    rows = [f"{built['chunks']:,} chunks, {built['edges']:,} edges, {ours['nodes']:,} nodes, {ours['entries']:,} "
            f"entries; arrays hash equal ({ours['digest']}); load average {load_average()}"]
    for name, key in (("first neighbors() (adjacency + structure indexes)", "adjacency"), ("TraversalIndex", "build")):
        rows.append(f"{name}: {baseline} best {min(theirs[key]):.2f} s (median {statistics.median(theirs[key]):.2f}), "
                    f"this best {min(ours[key]):.2f} s (median {statistics.median(ours[key]):.2f})")
    rows.append(f"first query after open (retrieve + expand_relations, fresh process, best of 2): {baseline} "
                f"{first[baseline]:.2f} s, this {first['this']:.2f} s")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="10k chunks / 50k edges")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--side", nargs="+", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        kind, folder, *rest = args.side
        print(json.dumps(side_build(folder, int(rest[0])) if kind == "build" else side_first(folder)))
        return 0
    n_chunks, n_edges = (10_000, 50_000) if args.small else (100_000, 500_000)
    print(run(n_chunks, n_edges, args.repeats, args.baseline))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
