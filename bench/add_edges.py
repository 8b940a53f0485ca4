"""Benchmark: ``kb.add_edges`` and ``kb.add_entities`` -- column-wise validation against the row loop.

Builds the synthetic graph of ``bench/neighbors.py`` (2,000 sources x 10 chunks,
80,000 entities, 500,000 semantic edges with one evidence chunk each), adds the
sources once, then times on the same state, in the same process:

* ``add_entities`` of the 80,000 entity rows, and ``add_edges`` of the 500,000 edges,
  through the public code path (column-wise checks, :mod:`crux_nb.store.rows_fast`);
* the same calls through the row-by-row reference (:mod:`crux_nb.store.rows`, the
  implementation before vectorising, merged as before: ``bench/_add_edges_previous.py``);
* ``add_edges`` through the column-wise path as it was before the issue-14 work (commit 63508c9,
  :mod:`bench._add_edges_columnwise`: ids hashed row by row, frames built from object lists); it and the
  public path alternate, twice each, and the faster (CPU) run of each counts (the machine is shared).

Both states are compared frame by frame (they must be equal), and a frame with one
bad row at the end is rejected by both with the same error. Target: 500k edges in
under 3 s. ``--small`` is 1/20 of the size and runs in seconds.

Usage::

    .venv/bin/python bench/add_edges.py            # about a minute (the row loop dominates)
    .venv/bin/python bench/add_edges.py --small
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from crux_nb.errors import CruxError  # noqa: E402
import crux_nb  # noqa: E402

from bench import _add_edges_previous as rowwise  # noqa: E402
from bench._add_edges_columnwise import previous_with_edges  # noqa: E402
from bench._common import OUT_DIR, fmt_num, machine_info, markdown_table, write_summary, write_text  # noqa: E402
from bench.neighbors import FULL, SMALL, entity_frame, make_graph, source_frame  # noqa: E402

TARGET_SECONDS = 3.0  # 500k edges (full size only)


def _timed(fn) -> tuple[float, float, object]:
    """Wall and CPU seconds of one call (CPU time is reported too: wall time is inflated on a shared machine)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - start, time.process_time() - cpu, out


def _public(kb, state, add):
    """``kb.add_entities`` / ``kb.add_edges`` (``add``) applied to ``state``: the public path; returns the new state."""
    kb.commit(lambda _: state)
    add()
    return kb.state


def _same_state(a, b) -> bool:
    return all(a.frame(t).equals(b.frame(t)) for t in ("entities", "edges", "edge_evidence"))


def _error(fn) -> tuple[str, str] | None:
    try:
        fn()
    except CruxError as exc:
        return type(exc).__name__, str(exc)
    return None


def run(small: bool) -> tuple[list[dict], str]:
    cfg = SMALL if small else FULL
    syn = make_graph(cfg)
    kb = crux_nb.knowledge_base(id="bench")
    kb.add_frame(source_frame(syn, cfg), id_column="id", text_column="text", format="text")
    base = kb.state
    entities, edges = entity_frame(syn), syn.edges
    t_ent_fast, c_ent_fast, ent_state = _timed(lambda: _public(kb, base, lambda: kb.add_entities(entities)))
    runs = []
    for _ in range(2):  # the previous column-wise path and ours alternate; the best (CPU) run of each counts
        runs.append(("previous", *_timed(lambda: previous_with_edges(ent_state, edges))))
        runs.append(("ours", *_timed(lambda: _public(kb, ent_state, lambda: kb.add_edges(edges)))))
    _, t_edge_prev, c_edge_prev, prev_state = min((r for r in runs if r[0] == "previous"), key=lambda r: r[2])
    _, t_edge_fast, c_edge_fast, fast_state = min((r for r in runs if r[0] == "ours"), key=lambda r: r[2])
    t_ent_slow, c_ent_slow, ent_slow = _timed(lambda: rowwise.with_entities(base, entities))
    t_edge_slow, c_edge_slow, slow_state = _timed(lambda: rowwise.with_edges(ent_slow, edges))
    same = (_same_state(fast_state, slow_state) and _same_state(ent_state, ent_slow)
            and _same_state(fast_state, prev_state))
    bad = pd.concat([edges.iloc[:1000], pd.DataFrame({"from_ref": ["chunk:nope:c0"], "to_ref": [edges["to_ref"][0]],
                                                     "type": ["mentions"], "evidence": [[edges["evidence"][0][0]]]})],
                    ignore_index=True)
    fast_error = _error(lambda: _public(kb, ent_state, lambda: kb.add_edges(bad)))
    slow_error = _error(lambda: rowwise.with_edges(ent_state, bad))
    if not same or fast_error is None or fast_error != slow_error:
        raise SystemExit(f"fast and row-wise paths disagree: same state {same}, errors {fast_error} vs {slow_error}")
    n_edges, n_ent = len(edges), len(entities)
    target = None if small else f"ours < {TARGET_SECONDS:g}"
    verdict = "info" if small else ("pass" if t_edge_fast < TARGET_SECONDS else "miss")
    rows = [
        {"measure": f"add_edges, {n_edges:,} edges (s)", "ours": t_edge_fast, "baseline": t_edge_slow,
         "baseline_name": "row-by-row validation (before)", "target": target, "verdict": verdict},
        {"measure": f"add_entities, {n_ent:,} entities (s)", "ours": t_ent_fast, "baseline": t_ent_slow,
         "baseline_name": "row-by-row validation (before)"},
        {"measure": f"add_edges, {n_edges:,} edges, CPU time (s)", "ours": c_edge_fast, "baseline": c_edge_slow,
         "baseline_name": "row-by-row validation (before)"},
        {"measure": f"add_entities, {n_ent:,} entities, CPU time (s)", "ours": c_ent_fast, "baseline": c_ent_slow,
         "baseline_name": "row-by-row validation (before)"},
        {"measure": f"add_edges, {n_edges:,} edges, vs previous column-wise (s)", "ours": t_edge_fast,
         "baseline": t_edge_prev, "baseline_name": "column-wise path of 63508c9 (before issue 14)"},
        {"measure": f"add_edges, {n_edges:,} edges, vs previous column-wise, CPU time (s)", "ours": c_edge_fast,
         "baseline": c_edge_prev, "baseline_name": "column-wise path of 63508c9 (before issue 14)",
         "target": target, "verdict": "info" if small else ("pass" if c_edge_fast < TARGET_SECONDS else "miss")},
    ]
    table = markdown_table(["operation", "column-wise (s)", "baseline (s)", "speed-up", "target", "verdict"],
                           [[r["measure"], fmt_num(r["ours"], 3), fmt_num(r["baseline"], 3),
                             fmt_num(r["baseline"] / r["ours"], 1), r.get("target") or "", r.get("verdict", "info")]
                            for r in rows])
    info = ", ".join(f"{k} {v}" for k, v in machine_info(("pandas",)).items())
    info += f", load average {os.getloadavg()[0]:.1f}"
    report = (f"# add_edges / add_entities{' (small)' if small else ''}\n\n{info}\n\n{table}\n\n"
              f"Baseline: the row-by-row reference, or (rows 'vs previous') the column-wise path of 63508c9.\n"
              f"All paths built equal entity, edge and evidence frames; a frame whose last row names a missing "
              f"chunk was rejected by both with `{fast_error[0]}: {fast_error[1]}`\n")
    return rows, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="1/20 of the size, seconds")
    parser.add_argument("--out", type=Path, default=None, help="Markdown report path")
    args = parser.parse_args(argv)
    out = args.out or OUT_DIR / ("add_edges_small.md" if args.small else "add_edges.md")
    rows, report = run(args.small)
    print(report)
    write_text(out, report)
    write_summary(out, "add_edges", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
