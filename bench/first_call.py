"""Benchmark: the default install's first traversal -- no stall while numba compiles (issue 35).

In a fresh process with an empty numba cache (``NUMBA_CACHE_DIR`` pointed at a new folder: what a fresh
install has), on ``bench/neighbors.py``'s graph at 1/10 scale built through the public API: the lexical and
graph indexes are built by a retrieve-only query first (their cost is not the traversal's), then
``retrieve(10) + expand_relations(depth 2)`` queries run back to back until the compiled traversal is ready
(:mod:`crux_nb.graph.compiled`), and ``kb.reader.reach`` likewise. Reported: the slowest query while
compiling, how long compiling took, and a warm query after. A second fresh process with the now-filled
cache shows what every later process pays.

    python bench/first_call.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TYPES = ["mentions", "related", "references"]


def side() -> dict:
    import crux_nb
    from bench import neighbors as nb
    from crux_nb.graph import compiled
    from crux_nb.retrieval import expand_relations, retrieve

    cfg = nb.Config(n_sources=400, chunks_per_source=10, n_entities=8_000, n_mentions=30_000, n_related=12_000,
                    n_references=8_000)
    syn = nb.make_graph(cfg)
    kb = crux_nb.knowledge_base(id="bench")
    kb.add_frame(nb.source_frame(syn, cfg), id_column="id", text_column="text", format="text")
    kb.add_entities(nb.entity_frame(syn))
    kb.add_edges(syn.edges)
    kb.recipe(steps=[retrieve(limit=10)]).retrieve("Source s00001 part 1")  # lexical index
    recipe = kb.recipe(steps=[retrieve(limit=10), expand_relations(types=TYPES, depth=2, seeds=["hits"])])
    out = {}
    for name, call in (("expand", lambda i: recipe.retrieve(f"Source {syn.source_ids[i % 400]} part {i % 10}")),
                       ("reach", lambda i: kb.reader.reach(syn.chunk_refs[i * 37 % len(syn.chunk_refs)], depth=2,
                                                           types=["mentions", "related"]))):
        started, times, calls = time.perf_counter(), [], 0
        key = "traversal" if name == "expand" else "reach"
        while True:
            t = time.perf_counter()
            call(calls)
            times.append(time.perf_counter() - t)
            calls += 1
            if compiled.ready(key):
                break
        ready_s = time.perf_counter() - started
        warm = []
        for _ in range(20):
            t = time.perf_counter()
            call(calls)
            warm.append(time.perf_counter() - t)
            calls += 1
        out[name] = {"first_s": times[0], "slowest_s": max(times[1:], default=0.0), "ready_s": ready_s,
                     "calls_before_ready": len(times), "warm_ms": 1000 * sorted(warm)[len(warm) // 2]}
    return out


def main() -> int:
    if "--side" in sys.argv:
        print(json.dumps(side()))
        return 0
    from bench._common import load_average, markdown_table, write_text

    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for label in ("fresh install (empty numba cache)", "later process (cache filled)"):
            env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
            env.pop("CRUX_NB_TRAVERSAL", None)
            done = subprocess.run([sys.executable, __file__, "--side"], env=env, check=True, capture_output=True,
                                  text=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            for name, r in result.items():
                rows.append([label, name, f"{r['first_s']:.3f}", f"{r['slowest_s']:.3f}", f"{r['ready_s']:.1f}",
                             r["calls_before_ready"], f"{r['warm_ms']:.2f}"])
                print(rows[-1], flush=True)
    text = "\n".join([
        "# First traversal in a fresh install (issue 35)", "",
        "A 4,000-chunk, 50k-edge graph (bench/neighbors.py's generator), its indexes built "
        "before; queries back to back until the compiled loop is ready (the first one also builds the graph's "
        "traversal index, as it does with numba cached), then 20 warm ones. Target: no call over 1 s. Shared 2-core "
        f"machine, load average {load_average()}.", "",
        markdown_table(["process", "call", "first call s (builds the traversal index)", "slowest later call s",
                        "compiled after s", "calls until then", "warm call p50 ms"],
                       rows), ""])
    write_text(ROOT / "bench" / "out" / "first_call.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
