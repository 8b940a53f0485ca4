"""Benchmark: building ``TraversalIndex`` (the CSR ``expand_relations`` traverses, built on a reader's first
traversal) vectorised against the per-node build it replaced (``tests/frontier_index_previous.py``), in one run
on one knowledge base (issue 35, compute part).

Workload: ``bench/store_cost.py``'s: ``N`` chunks of real prose (20 per source), ``N/2`` entities and ``E``
``mentions`` edges from random chunks to random entities. Times ``AdjacencyIndex`` (which both builds read),
then each ``TraversalIndex`` build ``--repeats`` times (best and median), checks that both give identical
arrays, and times the first ``retrieve + expand_relations`` query on a fresh reader of the same state.

Usage::

    .venv/bin/python bench/traversal_build.py                 # 100k chunks / 500k edges (a few minutes)
    .venv/bin/python bench/traversal_build.py --small         # 10k / 50k
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import crux_nb  # noqa: E402
import frontier_index_previous as previous  # noqa: E402
from bench import store_cost  # noqa: E402
from crux_nb.graph.adjacency import AdjacencyIndex  # noqa: E402
from crux_nb.graph.frontier_index import TraversalIndex  # noqa: E402

ARRAYS = ("refs", "kind", "chunk_code", "row_of_code", "node", "peer", "etype", "direction", "indptr")


def _timed(build, repeats: int) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = build()
        times.append(time.perf_counter() - t0)
    return times, out


def _first_queries(folder: str) -> dict[str, float]:
    """The first query on a freshly opened knowledge base with each build (best of two, alternated); a throwaway
    one first, so neither pays the process's one-time costs (imports, compiled kernels)."""
    from crux_nb.graph import frontier

    store_cost._recipe(crux_nb.open(folder)).retrieve(store_cost.QUERIES[1])
    out = {"previous": [], "vectorised": []}
    for name, build in [("previous", previous.TraversalIndex), ("vectorised", TraversalIndex)] * 2:  # alternated
        kb = crux_nb.open(folder)
        with mock.patch.object(frontier, "TraversalIndex", build):
            t0 = time.perf_counter()
            store_cost._recipe(kb).retrieve(store_cost.QUERIES[0])
            out[name].append(time.perf_counter() - t0)
    return {name: min(times) for name, times in out.items()}


def run(n_chunks: int, n_edges: int, repeats: int) -> str:
    with tempfile.TemporaryDirectory() as folder:
        built = store_cost.step_build(folder, n_chunks, n_edges)
        kb = crux_nb.open(folder)
        state = kb.state
        t_adj, adjacency = _timed(lambda: AdjacencyIndex(state.edges, state.edge_evidence), 1)
        t_old, old = _timed(lambda: previous.TraversalIndex(state, adjacency), repeats)
        t_new, new = _timed(lambda: TraversalIndex(state, adjacency), repeats)
        same = all(np.array_equal(getattr(new, a), getattr(old, a)) for a in ARRAYS) and new.code == old.code
        first = _first_queries(folder)
    rows = [f"{built['chunks']:,} chunks, {built['edges']:,} edges, {len(new.refs):,} nodes, "
            f"{len(new.node):,} entries; identical arrays: {same}",
            f"AdjacencyIndex: {t_adj[0]:.2f} s",
            f"TraversalIndex previous: best {min(t_old):.2f} s, median {statistics.median(t_old):.2f} s",
            f"TraversalIndex vectorised: best {min(t_new):.2f} s, median {statistics.median(t_new):.2f} s",
            f"first query after open (retrieve + expand_relations): previous build {first['previous']:.2f} s, "
            f"vectorised {first['vectorised']:.2f} s"]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="10k chunks / 50k edges")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    n_chunks, n_edges = (10_000, 50_000) if args.small else (100_000, 500_000)
    print(run(n_chunks, n_edges, args.repeats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
