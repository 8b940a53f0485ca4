"""Tree shape and incremental rebuilds for bench/clustering.py.

* ``tree_shape``: children per parent and the largest child's share of its parent's chunks, per level.
* ``planted_incremental``: one 20-chunk source of a planted graph is held back, the rest clustered,
  then the source added back: ``cluster_graph(previous=...)`` with leidenalg (untouched nodes fixed) and
  with igraph (only started from the previous membership) side by side, against a from-scratch build.
* ``api_incremental``: the same through ``kb.communities.prepare()`` (``incremental_engine=`` of
  ``crux_nb.communities``) on real text (the sample corpus
  plus its later launch plan; the Carol's staves I-IV plus stave V), counting the reports written.
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import igraph as ig

import crux_nb
from crux_nb.community import Community, CommunityGraph, cluster_graph, community_graph

SHAPE_COLUMNS = ("graph", "level", "parents", "children per parent (min / median / max)",
                 "largest child share of chunks (median / max)", "non-leaf child over half", "chunks per leaf (median / max)")
INCREMENTAL_COLUMNS = ("case", "engine", "seconds", "communities", "rewritten", "rewritten share", "leaf modularity",
                       "from-scratch modularity", "modularity vs scratch", "target")


def tree_shape(name: str, comms: list[Community]) -> tuple[list[list[str]], list[str]]:
    """Rows per parent level, and problems (a parent with fewer than 2 or more than max children is not
    checked here: the counts are in the table)."""
    by_id = {c.community_id: c for c in comms}
    rows, problems = [], []
    leaves = [len(c.chunk_refs) for c in comms if not c.child_ids]
    for level in sorted({c.level for c in comms if c.child_ids}, reverse=True):
        parents = [c for c in comms if c.child_ids and c.level == level]
        fan = sorted(len(c.child_ids) for c in parents)
        shares, over = [], 0
        for c in parents:
            kids = [by_id[k] for k in c.child_ids]
            top = max(kids, key=lambda k: len(k.chunk_refs))
            shares.append(len(top.chunk_refs) / max(1, len(c.chunk_refs)))
            over += sum(1 for k in kids if k.child_ids and len(k.chunk_refs) > len(c.chunk_refs) / 2)
        if min(fan) < 2:
            problems.append(f"{name}: a level-{level} parent has {min(fan)} child")
        rows.append([name, str(level), str(len(parents)), f"{fan[0]} / {statistics.median(fan):g} / {fan[-1]}",
                     f"{statistics.median(shares):.2f} / {max(shares):.2f}", str(over),
                     f"{statistics.median(leaves):g} / {max(leaves)}"])
    return rows, problems


def leaf_modularity(graph: CommunityGraph, comms: list[Community]) -> float:
    index = {n: i for i, n in enumerate(graph.nodes)}
    labels = [0] * len(graph.nodes)
    for k, c in enumerate(c for c in comms if not c.child_ids):
        for name in c.chunk_refs + c.entity_refs:
            labels[index[name]] = k
    g = ig.Graph(n=len(graph.nodes))
    g.add_edges([(i, j) for i, j, _ in graph.links])
    return g.modularity(labels, weights=[w for *_, w in graph.links])


def without_source(graph: CommunityGraph, source: str) -> CommunityGraph:
    """``graph`` without the chunks of one source (indices renumbered, order kept)."""
    keep = [i for i, n in enumerate(graph.nodes) if not n.startswith(f"chunk:{source}:")]
    pos = {old: new for new, old in enumerate(keep)}
    links = tuple((pos[i], pos[j], w) for i, j, w in graph.links if i in pos and j in pos)
    return CommunityGraph(nodes=tuple(graph.nodes[i] for i in keep), links=links,
                          sizes=tuple(graph.sizes[i] for i in keep),
                          chunk_count=graph.chunk_count - (len(graph.nodes) - len(keep)))


def _row(case: str, engine: str, seconds: float, comms: list[Community], before: list[Community],
         modularity: float, scratch: float) -> tuple[list[str], bool]:
    old = {c.community_id for c in before}
    rewritten = sum(1 for c in comms if c.community_id not in old)
    share = rewritten / len(comms)
    ratio = modularity / scratch
    ok = share <= 0.25 and ratio >= 0.98
    return [case, engine, f"{seconds:.3f}", str(len(comms)), str(rewritten), f"{share:.0%}", f"{modularity:.4f}",
            f"{scratch:.4f}", f"{ratio:.3f}", "pass" if ok else "miss"], ok


def planted_incremental(graph: CommunityGraph, n: int, log: Callable[[str], None]) -> list[list[str]]:
    source = graph.nodes[graph.chunk_count // 2].split(":")[1]  # a source from the middle of the corpus
    smaller = without_source(graph, source)
    before = cluster_graph(smaller, seed=0)
    t0 = time.perf_counter()
    scratch = cluster_graph(graph, seed=0)
    t_scratch = time.perf_counter() - t0
    scratch_q = leaf_modularity(graph, scratch)
    rows = [_row(f"planted {n:,}: + source {source} (20 chunks)", "from scratch (igraph)", t_scratch, scratch, before,
                 scratch_q, scratch_q)[0][:-1] + ["-"]]
    for engine in ("leidenalg", "igraph"):
        log(f"  incremental {n:,} nodes, {engine}")
        t0 = time.perf_counter()
        comms = cluster_graph(graph, seed=0, previous=before, engine=engine)
        rows.append(_row(f"planted {n:,}: + source {source} (20 chunks)", engine, time.perf_counter() - t0, comms,
                         before, leaf_modularity(graph, comms), scratch_q)[0])
    return rows


def _staves(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    parts = re.split(r"\n(?=STAVE [A-Z]+\n)", text)
    staves = parts[1:]
    staves[0] = parts[0] + "\n" + staves[0]
    return staves


def api_incremental(carol: Path | None, log: Callable[[str], None]) -> tuple[list[list[str]], list[str]]:
    """Through prepare(): reports written for one added source, per engine, against a from-scratch build."""
    from crux_nb.datasets import sample_later_path, sample_path
    from crux_nb.models import OfflineModel

    cases: list[tuple[str, Callable[[Any], None], Callable[[Any], None]]] = [
        ("sample corpus (40 docs) + launch-plan-v4", lambda kb: kb.add_path(sample_path()),
         lambda kb: kb.add_path(sample_later_path()))]
    if carol is not None:
        staves = _staves(carol)
        cases.append((f"Carol staves I-IV + stave V ({len(staves[-1]):,} chars)",
                      lambda kb: [kb.add_text(f"stave-{k + 1}", s, format="text") for k, s in enumerate(staves[:-1])],
                      lambda kb: kb.add_text("stave-5", staves[-1], format="text")))
    rows, problems = [], []
    for case, first, later in cases:
        scratch_kb = crux_nb.knowledge_base(id="s", communities=crux_nb.communities(model=OfflineModel()))
        first(scratch_kb)
        later(scratch_kb)
        t0 = time.perf_counter()
        full = scratch_kb.communities.prepare(progress=False)
        t_full = time.perf_counter() - t0
        graph = community_graph(scratch_kb)
        full_comms = _read(scratch_kb)
        scratch_q = leaf_modularity(graph, full_comms)
        rows.append([case, "from scratch", f"{t_full:.3f}", str(full.communities), str(full.reports_written),
                     "100%", f"{scratch_q:.4f}", f"{scratch_q:.4f}", "1.000", "-"])
        for engine in ("leidenalg", "igraph"):
            log(f"  incremental prepare(): {case}, {engine}")
            kb = crux_nb.knowledge_base(id="i", communities=crux_nb.communities(model=OfflineModel(),
                                                                                incremental_engine=engine))
            first(kb)
            kb.communities.prepare(progress=False)
            before = _read(kb)
            later(kb)
            t0 = time.perf_counter()
            result = kb.communities.prepare(progress=False)
            seconds = time.perf_counter() - t0
            comms = _read(kb)
            row, ok = _row(case, engine, seconds, comms, before, leaf_modularity(community_graph(kb), comms),
                           scratch_q)
            row[4] = f"{result.reports_written} ({result.calls} calls)"
            rows.append(row)
            if engine == "leidenalg" and not ok:
                problems.append(f"incremental target missed: {case} ({row[5]} rewritten, modularity ratio {row[8]})")
    return rows, problems


def _read(kb) -> list[Community]:
    return kb.communities.records()


def shape_note() -> str:
    return ("Tree shape: per parent level (root first), the number of parents, children per parent, the "
            "largest child's share of its parent's chunks, how many non-leaf children hold more than half of "
            "their parent (must be 0), and chunks per leaf over the whole tree. A leaf cannot be split below "
            "the budget, so a parent of leaves may have one large leaf.")


def incremental_note() -> str:
    return ("Incremental: the previous generation is built first, then one source is added and the tree "
            "rebuilt from the previous one. rewritten = communities with a new id (their reports are written "
            "again; through prepare() the count and the model calls are prepare()'s own). leidenalg keeps every "
            "node of an untouched leaf fixed (`optimise_partition(is_membership_fixed=...)`); igraph's "
            "`community_leiden(initial_membership=...)` can only start from the previous partition and may move "
            "any node. Target: at most 25% rewritten and leaf modularity at least 0.98 of the from-scratch "
            "build's. Times include building the igraph graph.")

