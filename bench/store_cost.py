"""Benchmark: what saving and reopening a big knowledge base costs (issue 35, storage part), against the code before.

Workload: ``N`` chunks of real prose (the Christmas Carol and sample passages, packed as in ``bench/scale.py``:
20 chunks per source), ``N/2`` named entities and ``E`` ``mentions`` edges from random chunks to random
entities (one evidence chunk each, built as ``kb.add_edges`` builds them: ``bench/neighbors.py``). Each code
version (this checkout, the baseline) runs every step in a fresh process of its own, on a folder it saved itself:

* **build**: build the knowledge base and save it (full save: bytes written, from ``/proc/self/io``'s
  ``wchar``: every byte passed to ``write``);
* **open**: ``crux_nb.open(path)`` then the first query (``retrieve(limit=10)`` + ``expand_relations()``),
  timed together, with the process's peak RSS; then 30 queries at once (p50, p95: the compiled traversal
  still loading in the background), a wait until it is ready, and 30 warm queries (p50, p95);
* **edit**: open, ``kb.add_text`` of one small source, ``kb.save``: the bytes that save wrote, as a share of
  the full save's; then the first query on the edited knowledge base (what the edit made it build again); then
  one more source of 20 chunks with 100 ``mentions`` edges to known entities (what extraction brings) and a
  save, then one source of the middle removed with its edges and a save: their bytes as shares of the full
  save's.

Targets (issue 35, at 100k / 500k): a save after one small source (with or without edges) writes < 5% of a
full save's bytes;
open + first query < 3 s; warm query p95 < 20 ms; one small ``add_text`` < 1 s.

Usage::

    python -m bench.store_cost [--out REPORT.md]           # 100k chunks / 500k edges (several minutes)
    python -m bench.store_cost --small                      # 10k / 50k
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ["Scrooge counting-house clerk", "ghost of Christmas past", "Tiny Tim Bob Cratchit", "Marley chains",
           "release planning", "the fire and the candle", "Fezziwig ball", "knocker on the door"]


def _wchar() -> int:
    with open("/proc/self/io") as fh:
        return int(next(line for line in fh if line.startswith("wchar")).split()[1])


def _recipe(kb):
    from crux_nb import expand_relations, retrieve

    return kb.recipe(steps=[retrieve(limit=10), expand_relations()])


def step_build(folder: str, n_chunks: int, n_edges: int) -> dict:
    import pandas as pd

    import crux_nb
    from crux_nb import KnowledgeBase
    from bench import neighbors as nb
    from bench.scale import corpus_frame

    frame, _ = corpus_frame(n_chunks)
    t0 = time.perf_counter()
    kb = crux_nb.knowledge_base(id="store")
    kb.add_frame(frame, id_column="id", text_column="text", format="text")
    n_entities = max(n_chunks // 2, 1)
    kb.add_entities(pd.DataFrame({"entity_id": [f"e{i:07d}" for i in range(n_entities)],
                                  "canonical_name": [f"Entity {i}" for i in range(n_entities)]}))
    rng = random.Random(35)
    refs = kb.chunks["ref"].tolist()
    ent = kb.entities["ref"].tolist()
    pairs = {(rng.randrange(len(refs)), rng.randrange(len(ent))) for _ in range(int(n_edges * 1.02))}
    pairs = sorted(pairs)[:n_edges]
    edges = pd.DataFrame({"from_ref": [refs[a] for a, _ in pairs], "to_ref": [ent[b] for _, b in pairs],
                          "type": "mentions", "direction": "directed", "weight": 1.0,
                          "evidence": [[refs[a]] for a, _ in pairs]})
    kb = KnowledgeBase(id="store", namespace=kb.namespace, state=nb.build_direct_state(kb.state, edges))
    build = time.perf_counter() - t0
    before = _wchar()
    t0 = time.perf_counter()
    kb.save(folder)
    return {"build_s": build, "save_s": time.perf_counter() - t0, "save_bytes": _wchar() - before,
            "chunks": len(kb.chunks), "edges": len(kb.edges)}


def step_open(folder: str) -> dict:
    import crux_nb
    from bench._common import hwm_mb

    t0 = time.perf_counter()
    kb = crux_nb.open(folder)
    opened = time.perf_counter() - t0
    _recipe(kb).retrieve(QUERIES[0])
    first = time.perf_counter() - t0
    peak = hwm_mb()  # the kernel's peak-RSS mark
    recipe = _recipe(kb)
    early = _query_times(recipe)  # while the compiled traversal loads in the background (numpy answers meanwhile)
    t0 = time.perf_counter()
    try:  # the code before issue 35 has no background compilation: nothing to wait for
        from crux_nb.graph import compiled
    except ImportError:
        compiled = None
    if compiled is not None:
        compiled.wait("traversal")
    ready = time.perf_counter() - t0 if compiled is not None else None
    warm = _query_times(recipe)
    return {"open_s": opened, "open_first_s": first, "peak_mb": peak, "early_p50_ms": early[0],
            "early_p95_ms": early[1], "ready_s": ready, "warm_p50_ms": warm[0], "warm_p95_ms": warm[1]}


def _query_times(recipe, n: int = 30) -> tuple[float, float]:
    """p50 and p95 (ms) of ``n`` queries."""
    from bench._common import percentile

    times = []
    for i in range(n):
        t = time.perf_counter()
        recipe.retrieve(QUERIES[i % len(QUERIES)] + f" {i}")
        times.append(time.perf_counter() - t)
    times.sort()
    return 1000 * percentile(times, 50), 1000 * percentile(times, 95)


def step_edit(folder: str) -> dict:
    import crux_nb

    # the bytes measured are the knowledge base's: a save's background fill of the disk cache outside it (writing
    # the graph's indexes for the next open, bench/open_first.py) would land in this process's count too
    os.environ["CRUX_NB_CACHE_DIR"] = "off"
    kb = crux_nb.open(folder)
    t0 = time.perf_counter()
    kb.add_text("zz-late-note.md", "# Late note\n\nScrooge kept a small late note about the counting-house.")
    added = time.perf_counter() - t0
    before = _wchar()
    t0 = time.perf_counter()
    kb.save(folder)
    saved = time.perf_counter() - t0
    written = _wchar() - before
    t0 = time.perf_counter()
    _recipe(kb).retrieve(QUERIES[0])
    queried = time.perf_counter() - t0
    # then a source with edges, as extraction brings them: 5 `mentions` from each of its chunks to known entities
    import pandas as pd

    kb.add_text("zz-late-graph.md", "\n\n".join(f"Scrooge kept note {i} about the counting-house." for i in range(20)),
                chunk_size=60)
    chunks = kb.chunks.loc[kb.chunks["source_id"] == "zz-late-graph.md", "ref"].tolist()
    rng = random.Random(35)
    pairs = [(c, e) for c in chunks for e in rng.sample(kb.entities["ref"].tolist(), 5)]
    kb.add_edges(pd.DataFrame({"from_ref": [c for c, _ in pairs], "to_ref": [e for _, e in pairs],
                               "type": "mentions", "evidence": [[c] for c, _ in pairs]}))
    before = _wchar()
    t0 = time.perf_counter()
    kb.save(folder)
    out = {"add_text_s": added, "edit_save_s": saved, "edit_save_bytes": written, "edit_query_s": queried,
           "graph_edges": len(pairs), "graph_save_s": time.perf_counter() - t0, "graph_save_bytes": _wchar() - before}
    # and one source of the middle removed, with its edges (about E / (N / 20) of them)
    kb.remove(kb.documents["source_id"].iloc[len(kb.documents) // 2])
    before = _wchar()
    t0 = time.perf_counter()
    kb.save(folder)
    return {**out, "remove_save_s": time.perf_counter() - t0, "remove_save_bytes": _wchar() - before}


def build_with(code: Path, folder: str, n_chunks: int, n_edges: int) -> dict:
    """:func:`step_build` run with ``crux_nb`` from ``code`` (a baseline tree), in a fresh process: the same
    knowledge base saved in that code's format, for a baseline that cannot read this checkout's."""
    return _child(code, "build", folder, str(n_chunks), str(n_edges))


def _child(code: Path, step: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{code}:{ROOT}"}
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--step", step, *args], cwd=code, env=env,
                          capture_output=True, text=True)
    if proc.returncode:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{step} with crux_nb from {code} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


OURS = "this checkout"
SMALL = (10_000, 50_000)  # chunks, edges
# (measure, key of a step's result, format, target on ours (issue 35) or None)
MEASURES = [("full save (s)", "save_s", "{:.2f}", None), ("full save written (MB)", "save_bytes", "mb", None),
            ("open (s)", "open_s", "{:.2f}", None), ("open + first query (s)", "open_first_s", "{:.2f}", 3.0),
            ("peak RSS, open + first query (MB)", "peak_mb", "{:.0f}", None),
            ("query p50 right after the first, compiled traversal loading (ms)", "early_p50_ms", "{:.1f}", None),
            ("query p95 right after the first, compiled traversal loading (ms)", "early_p95_ms", "{:.1f}", None),
            ("then waited for the compiled traversal (s)", "ready_s", "{:.2f}", None),
            ("warm query p50 (ms)", "warm_p50_ms", "{:.1f}", None),
            ("warm query p95 (ms)", "warm_p95_ms", "{:.1f}", 20.0),
            ("one small add_text (s)", "add_text_s", "{:.2f}", 1.0),
            ("save after it (s)", "edit_save_s", "{:.2f}", None),
            ("save after it, written (MB)", "edit_save_bytes", "mb", None),
            ("  as a share of a full save", "edit_share", "pct", 0.05),
            ("first query after it (s)", "edit_query_s", "{:.2f}", None),
            ("then one source with 100 edges: save (s)", "graph_save_s", "{:.2f}", None),
            ("  written (MB)", "graph_save_bytes", "mb", None),
            ("  as a share of a full save", "graph_share", "pct", 0.05),
            ("then one source of the middle removed, with its edges: save (s)", "remove_save_s", "{:.2f}", None),
            ("  written (MB)", "remove_save_bytes", "mb", None),
            ("  as a share of a full save", "remove_share", "pct", 0.05)]


def _summary(results: dict[str, dict], baseline_name: str) -> list[dict]:
    ours, theirs = results[OURS], results[baseline_name]
    first = ours["chunks"], ours["edges"]
    rows = []  # bytes are reported in MB, as in the table
    for name, key, fmt, target in MEASURES:
        scale = 1e-6 if fmt == "mb" else 1
        measure = {"edit_share": "save after one small source, share of a full save's bytes",
                   "graph_share": "save after one small source with 100 edges, share of a full save's bytes",
                   "graph_save_bytes": "save after one small source with 100 edges, written (MB)",
                   "remove_share": "save after removing one source with its edges, share of a full save's bytes",
                   "remove_save_bytes": "save after removing one source with its edges, written (MB)"}.get(key, name)
        row = {"measure": f"{measure}, {first[0]:,} chunks / {first[1]:,} edges", "ours": ours[key] * scale,
               "baseline": None if theirs[key] is None else theirs[key] * scale, "baseline_name": baseline_name}
        if target is not None:
            row.update(target=f"ours < {target:g} (issue 35: at 100k / 500k)",
                       verdict="pass" if ours[key] < target else "miss")
        rows.append(row)
    return rows


def run(n_chunks: int, n_edges: int, baseline: str, out: Path, small: bool = False) -> str:
    from bench._baseline import checkout
    from bench._common import load_average, write_summary, write_text

    baseline_name = f"code before issue 35 ({baseline})"
    sides = {baseline_name: checkout(baseline), OURS: ROOT}
    results = {}
    work = Path(tempfile.mkdtemp(prefix="store-cost-"))
    try:
        for label, code in sides.items():
            folder = str(work / label.replace(" ", "-"))
            res = build_with(code, folder, n_chunks, n_edges)
            res.update(_child(code, "open", folder))
            res.update(_child(code, "edit", folder))
            res["edit_share"] = res["edit_save_bytes"] / res["save_bytes"]
            res["graph_share"] = res["graph_save_bytes"] / res["save_bytes"]
            res["remove_share"] = res["remove_save_bytes"] / res["save_bytes"]
            results[label] = res
            print(f"[store_cost] {label}: {json.dumps(res)}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = _summary(results, baseline_name)
    first = results[OURS]
    lines = [f"# Saving and reopening a big knowledge base (issue 35){' (small)' if small else ''}", "",
             f"{first['chunks']:,} chunks, {first['edges']:,} edges; fresh process per step; the {baseline_name} "
             f"unpacked by bench/_baseline.py. Shared 2-core machine, load average {load_average()}.",
             "", "| measure | " + " | ".join(results) + " | target | verdict |",
             "| --- | " + " | ".join("---:" for _ in results) + " | --- | --- |"]
    for (name, key, fmt, _), row in zip(MEASURES, summary):
        cells = []
        for res in results.values():
            v = res[key]
            cells.append("-" if v is None else f"{v / 1e6:.1f}" if fmt == "mb" else f"{100 * v:.1f}%" if fmt == "pct" else fmt.format(v))
        target = (row.get("target") or "-").replace("ours < 0.05", "ours < 5%")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {target} | {row.get('verdict', 'info')} |")
    text = "\n".join(lines) + "\n"
    write_text(out, text)
    write_summary(out, "store_cost", summary)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help=f"{SMALL[0]:,} chunks / {SMALL[1]:,} edges")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=500_000)
    parser.add_argument("--baseline", default=None,
                        help="git ref of the baseline code (default bench/_baseline.py's BEFORE_ISSUE_35)")
    parser.add_argument("--out", type=Path, default=None,
                        help="Markdown report (default bench/out/store_cost[_small].md)")
    parser.add_argument("--step", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step:
        name, *rest = args.step
        if name == "build":
            out = step_build(rest[0], int(rest[1]), int(rest[2]))
        else:
            out = {"open": step_open, "edit": step_edit}[name](rest[0])
        print(json.dumps(out))
        return 0
    # imported after --step: a step runs with the baseline's tree first on the path (its bench/ is older)
    from bench._baseline import BEFORE_ISSUE_35
    from bench._common import OUT_DIR

    chunks, edges = SMALL if args.small else (args.chunks, args.edges)
    out = args.out or OUT_DIR / ("store_cost_small.md" if args.small else "store_cost.md")
    print(run(chunks, edges, args.baseline or BEFORE_ISSUE_35, out, args.small))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
