"""Benchmark: ``GraphReader.neighbors()`` and a 2-hop typed traversal against igraph and networkx.

Builds one synthetic, skewed graph (fixed seed) three ways -- a crux_nb
knowledge base through its public API, an igraph ``Graph`` and a networkx
``MultiDiGraph`` -- then times the same operations on the same sampled nodes
in the same process, checks that every side returns the same neighbours, and
prints a Markdown table (also written to ``bench/out/neighbors.md``).

Full size: 2,000 sources x 10 chunks = 20,000 chunks + 80,000 entities
(100,000 nodes) and 500,000 semantic edges::

    mentions    300,000  chunk -> entity   directed   entity side Zipf(0.8)
    related     120,000  entity <-> entity symmetric  both ends Zipf(0.8)
    references   80,000  chunk -> chunk    directed   target Zipf(0.7)

each with one evidence chunk. ``--small`` is 1/20 of that (5,000 nodes,
25,000 edges, 200 samples) and runs in seconds.

What "the same graph" means: ``neighbors(ref)`` with no type filter also
returns the structural edges crux_nb projects from document order
(``hierarchy`` document -> chunk, ``sequence`` chunk -> next chunk), so the
baseline graphs hold those edges too. A symmetric edge is stored once in
crux_nb and read as both an ``out`` and an ``in`` entry on each end; the
baselines hold it as two directed edges, which reads the same way.

Usage::

    .venv/bin/python bench/neighbors.py            # full run (~2 minutes, ~1.5 GB peak RSS)
    .venv/bin/python bench/neighbors.py --small    # seconds
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import igraph as ig  # noqa: E402
import networkx as nx  # noqa: E402

import crux_nb  # noqa: E402
from crux_nb.refs import decode_ref, encode_ref  # noqa: E402
from crux_nb.graph import compiled  # noqa: E402
from crux_nb.schema import coerce  # noqa: E402
from crux_nb import KnowledgeBase  # noqa: E402

from bench._common import (OUT_DIR, Phases, current_rss_mb, fmt_num, machine_info, markdown_table,  # noqa: E402
                     load_average, peak_rss_mb, time_interleaved, time_once, write_summary, write_text)

# ------------------------------------------------------------------ settings
TRAVERSAL_TYPES = ("mentions", "related")
TYPED_FILTER = ("related",)
TYPED_DIRECTION = "out"
TARGET_VS_IGRAPH = 3.0      # crux_nb may be at most this many times slower than python-level igraph
TARGET_VS_NETWORKX = 10.0   # crux_nb must be at least this many times faster than networkx

ROW_LABELS = (
    "neighbors(ref) - first pass, cold caches - mean (us)",
    "neighbors(ref) - mean (us)",
    "neighbors(ref) - p50 (us)",
    "neighbors(ref) - p95 (us)",
    "neighbors(ref, types=[related], direction=out) - mean (us)",
    "neighbors(ref, types=[related], direction=out) - p50 (us)",
    "neighbors(ref, types=[related], direction=out) - p95 (us)",
    "2-hop typed traversal, all seeds - total (ms)",
    "2-hop typed traversal - per seed mean (ms)",
    "2-hop typed traversal - per seed p95 (ms)",
)
SYSTEMS = ("crux", "igraph", "networkx")
# 2-hop against igraph's C BFS called per seed, like for like: (row, crux_nb side, igraph C side)
C_ROWS = (
    ("reach() as set of refs vs C ids", "crux", "c_ids"),
    ("reach() as set of refs vs C ids + vertex names", "crux", "c_names"),
    ("reach_arrays() vs C ids", "crux_arrays", "c_ids"),
)
C_COLUMNS = ("2-hop per seed", "stat", "crux_nb (ms)", "igraph C (ms)", "crux/igraph C", "target", "verdict")
COLUMNS = ("operation", "crux_nb", "igraph (python)", "igraph C", "networkx",
           "crux/igraph", "networkx/crux", "target", "verdict")


@dataclass(frozen=True)
class Config:
    n_sources: int = 2_000
    chunks_per_source: int = 10
    n_entities: int = 80_000
    n_mentions: int = 300_000
    n_related: int = 120_000
    n_references: int = 80_000
    n_samples: int = 2_000
    n_seeds: int = 100
    repeats: int = 5
    seed: int = 20_240_601

    @property
    def n_chunks(self) -> int:
        return self.n_sources * self.chunks_per_source

    @property
    def n_nodes(self) -> int:
        return self.n_chunks + self.n_entities

    @property
    def n_edges(self) -> int:
        return self.n_mentions + self.n_related + self.n_references


FULL = Config()
SMALL = Config(n_sources=100, n_entities=4_000, n_mentions=15_000, n_related=6_000, n_references=4_000,
               n_samples=200, n_seeds=50, repeats=3)


# ------------------------------------------------------------ synthetic graph
@dataclass
class Synthetic:
    source_ids: list[str]
    chunk_refs: list[str]          # source order, then chunk order (crux_nb's chunk order)
    entity_ids: list[str]
    entity_refs: list[str]
    edges: pd.DataFrame            # the frame given to kb.add_edges()
    sample_refs: list[str]
    seed_refs: list[str]


def _zipf_sampler(rng: np.random.Generator, n: int, exponent: float):
    """Draw ids 0..n-1 with a Zipf-like law over a random permutation (hubs are not the low ids)."""
    weights = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** exponent
    weights = weights[rng.permutation(n)]
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    return lambda size: np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), n - 1)


def _unique_pairs(n: int, draw_from, draw_to, n_to: int, *, same_space: bool, symmetric: bool):
    """``n`` distinct (from, to) pairs, drawn until there are enough (no self-loops in one space)."""
    keys = np.empty(0, dtype=np.int64)
    while len(keys) < n:
        need = int((n - len(keys)) * 1.3) + 64
        a, b = draw_from(need).astype(np.int64), draw_to(need).astype(np.int64)
        if same_space:
            keep = a != b
            a, b = a[keep], b[keep]
        if symmetric:
            a, b = np.minimum(a, b), np.maximum(a, b)
        keys = np.concatenate([keys, a * n_to + b])
        _, first = np.unique(keys, return_index=True)
        keys = keys[np.sort(first)]
    keys = keys[:n]
    return keys // n_to, keys % n_to


def make_graph(cfg: Config) -> Synthetic:
    rng = np.random.default_rng(cfg.seed)
    source_ids = [f"s{s:05d}" for s in range(cfg.n_sources)]
    chunk_refs = [f"chunk:{s}:c{j:04d}" for s in source_ids for j in range(cfg.chunks_per_source)]
    entity_ids = [f"e{i:06d}" for i in range(cfg.n_entities)]
    entity_refs = [f"entity:{e}" for e in entity_ids]
    n_chunks = len(chunk_refs)

    uniform_chunk = lambda size: rng.integers(0, n_chunks, size)  # noqa: E731
    entity_zipf = _zipf_sampler(rng, cfg.n_entities, 0.8)
    chunk_zipf = _zipf_sampler(rng, n_chunks, 0.7)

    m_from, m_to = _unique_pairs(cfg.n_mentions, uniform_chunk, entity_zipf, cfg.n_entities,
                                 same_space=False, symmetric=False)
    r_from, r_to = _unique_pairs(cfg.n_related, entity_zipf, entity_zipf, cfg.n_entities,
                                 same_space=True, symmetric=True)
    x_from, x_to = _unique_pairs(cfg.n_references, uniform_chunk, chunk_zipf, n_chunks,
                                 same_space=True, symmetric=False)
    r_evidence = rng.integers(0, n_chunks, cfg.n_related)
    # symmetric pairs in random orientation: crux_nb sorts the ends itself
    flip = rng.random(cfg.n_related) < 0.5
    r_from, r_to = np.where(flip, r_to, r_from), np.where(flip, r_from, r_to)

    ch, en = chunk_refs, entity_refs
    frm = [ch[i] for i in m_from] + [en[i] for i in r_from] + [ch[i] for i in x_from]
    to = [en[i] for i in m_to] + [en[i] for i in r_to] + [ch[i] for i in x_to]
    evidence = [[ch[i]] for i in m_from] + [[ch[i]] for i in r_evidence] + [[ch[i]] for i in x_from]
    types = ["mentions"] * cfg.n_mentions + ["related"] * cfg.n_related + ["references"] * cfg.n_references
    directions = (["directed"] * cfg.n_mentions + ["symmetric"] * cfg.n_related
                  + ["directed"] * cfg.n_references)
    edges = pd.DataFrame({"from_ref": frm, "to_ref": to, "type": types, "direction": directions,
                          "evidence": evidence, "weight": 1.0})
    edges = edges.iloc[rng.permutation(len(edges))].reset_index(drop=True)

    nodes = chunk_refs + entity_refs
    picks = rng.choice(len(nodes), size=min(cfg.n_samples, len(nodes)), replace=False)
    sample_refs = [nodes[i] for i in picks]
    return Synthetic(source_ids, chunk_refs, entity_ids, entity_refs, edges, sample_refs,
                     sample_refs[: cfg.n_seeds])


def source_frame(syn: Synthetic, cfg: Config) -> pd.DataFrame:
    """One text per source; every paragraph is longer than half a chunk, so each becomes one chunk."""
    filler = ("graph augmented retrieval keeps evidence next to every typed edge between chunks and entities "
              * 8)[:620]
    texts = ["\n\n".join(f"Source {sid} part {j}. {filler}" for j in range(cfg.chunks_per_source))
             for sid in syn.source_ids]
    return pd.DataFrame({"id": syn.source_ids, "text": texts})


def entity_frame(syn: Synthetic) -> pd.DataFrame:
    return pd.DataFrame({"entity_id": syn.entity_ids, "canonical_name": [f"Entity {e}" for e in syn.entity_ids]})


def structural_edges(syn: Synthetic, cfg: Config) -> tuple[list[str], list[str], list[str]]:
    """The edges crux_nb projects for parentless chunks: document -hierarchy-> chunk, chunk -sequence-> next."""
    frm, to, types = [], [], []
    k = cfg.chunks_per_source
    for s, sid in enumerate(syn.source_ids):
        doc = f"document:{sid}"
        refs = syn.chunk_refs[s * k:(s + 1) * k]
        frm += [doc] * k
        to += refs
        types += ["hierarchy"] * k
        frm += refs[:-1]
        to += refs[1:]
        types += ["sequence"] * (k - 1)
    return frm, to, types


def baseline_edge_list(syn: Synthetic, cfg: Config) -> tuple[list[str], list[str], list[str]]:
    """Directed (from, to, type) triples: semantic edges (symmetric ones both ways) plus structural ones."""
    e = syn.edges
    frm, to, types = e["from_ref"].tolist(), e["to_ref"].tolist(), e["type"].tolist()
    sym = (e["direction"] == "symmetric").to_numpy()
    frm_s, to_s = e["from_ref"][sym].tolist(), e["to_ref"][sym].tolist()
    frm, to, types = frm + to_s, to + frm_s, types + e["type"][sym].tolist()
    s_frm, s_to, s_types = structural_edges(syn, cfg)
    return frm + s_frm, to + s_to, types + s_types


# --------------------------------------------------------------- crux_nb side
def stable_id(prefix: str, value: dict) -> str:
    """``<prefix>_<16 hex>``: SHA-256 of the value's canonical JSON, the id scheme of crux_nb's edges
    (computed here so the direct build needs no private helper; the frames are checked equal to the API's)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{prefix}_{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def build_direct_state(state: Any, edges: pd.DataFrame) -> Any:
    """The state ``kb.add_edges(edges)`` produces, built with vectorised frame code.

    Reproduces ``with_edges``/``_merge_edges`` for this input (valid refs, one
    evidence chunk per edge, entities already present, empty description):
    same edge ids, frames, dtypes and order. Used to measure how fast the same
    state can be built, and checked against the API-built state.
    """

    frm, to = edges["from_ref"].to_numpy(dtype=object), edges["to_ref"].to_numpy(dtype=object)
    sym = (edges["direction"] == "symmetric").to_numpy()
    lo = np.where(sym & (to < frm), to, frm)
    hi = np.where(sym & (to < frm), frm, to)
    types, directions = edges["type"].tolist(), edges["direction"].tolist()
    edge_ids = [stable_id("edge", {"type": t, "from": a, "to": b, "direction": d, "stage": "user"})
                for t, a, b, d in zip(types, lo.tolist(), hi.tolist(), directions)]
    frame = pd.DataFrame({"edge_id": edge_ids, "type": types, "from_ref": lo, "to_ref": hi,
                          "direction": directions, "description": None,
                          "weight": edges["weight"].astype("float64"), "stage": "user"})
    frame = coerce(frame, "edges").drop_duplicates("edge_id")
    chunk_ref = [ev[0] for ev in edges["evidence"]]
    source_of = dict(zip(state.chunks["ref"].tolist(), state.chunks["source_id"].tolist()))
    evidence = coerce(pd.DataFrame({"edge_id": edge_ids, "source_id": [source_of[r] for r in chunk_ref],
                                    "chunk_ref": chunk_ref, "provenance": "exact"}), "edge_evidence")
    evidence = evidence.drop_duplicates(["edge_id", "chunk_ref", "provenance"])
    frame = frame.sort_values(["edge_id"], kind="stable").reset_index(drop=True)
    evidence = evidence.sort_values(["edge_id", "chunk_ref", "provenance"], kind="stable").reset_index(drop=True)
    return replace(state, edges=frame, edge_evidence=evidence, version=state.version + 1)


def crux_ops(reader: Any):
    traversal_types = list(TRAVERSAL_TYPES)
    typed = list(TYPED_FILTER)

    def all_types(ref: str):
        return reader.neighbors(ref)

    def typed_out(ref: str):
        return reader.neighbors(ref, types=typed, direction=TYPED_DIRECTION)

    def two_hop(ref: str):
        # crux_nb's k-hop reader: a vectorised BFS over the CSR index (GraphReader.reach)
        return set(reader.reach(ref, depth=2, types=traversal_types))

    def two_hop_arrays(ref: str):
        # the same reach as arrays (GraphReader.reach_arrays): no Python dict of refs
        return reader.reach_arrays(ref, depth=2, types=traversal_types)

    def as_triples(result):
        return collections.Counter((encode_ref(n.ref), n.type, n.direction) for n in result)

    def as_names(result):
        return {r if isinstance(r, str) else encode_ref(r) for r in result}

    return all_types, typed_out, two_hop, two_hop_arrays, as_triples, as_names


# ---------------------------------------------------------------- igraph side
class IgraphSide:
    def __init__(self, names: list[str], frm: list[str], to: list[str], types: list[str]):
        self.index = {name: i for i, name in enumerate(names)}
        self.names = names
        index = self.index
        self.src = [index[n] for n in frm]
        self.dst = [index[n] for n in to]
        self.g = ig.Graph(n=len(names), edges=list(zip(self.src, self.dst)), directed=True,
                          vertex_attrs={"name": names}, edge_attrs={"type": types})
        self.etype: list[str] = self.g.es["type"]
        wanted = set(TRAVERSAL_TYPES)
        self.sub = self.g.subgraph_edges([e for e, t in enumerate(self.etype) if t in wanted], delete_vertices=False)

    def ops(self):
        g, index, names, src, dst, etype = self.g, self.index, self.names, self.src, self.dst, self.etype
        typed = frozenset(TYPED_FILTER)
        traversal_types = frozenset(TRAVERSAL_TYPES)

        def neighbors(name, types=None, direction=None):
            v = index[name]
            out = []
            if direction in (None, "out"):
                for e in g.incident(v, mode="out"):
                    t = etype[e]
                    if types is None or t in types:
                        out.append((names[dst[e]], t, "out"))
            if direction in (None, "in"):
                for e in g.incident(v, mode="in"):
                    t = etype[e]
                    if types is None or t in types:
                        out.append((names[src[e]], t, "in"))
            return out

        def all_types(name):
            return neighbors(name)

        def typed_out(name):
            return neighbors(name, typed, TYPED_DIRECTION)

        def two_hop(name):
            s = index[name]
            seen = {s}
            frontier = [s]
            for _ in range(2):
                nxt = []
                for v in frontier:
                    for e in g.incident(v, mode="all"):
                        if etype[e] in traversal_types:
                            u = dst[e] if src[e] == v else src[e]
                            if u not in seen:
                                seen.add(u)
                                nxt.append(u)
                frontier = nxt
            seen.discard(s)
            return {names[u] for u in seen}

        return all_types, typed_out, two_hop

    def c_two_hop(self, seed_names: list[str]):
        seeds = [self.index[n] for n in seed_names]
        sub = self.sub
        return lambda: sub.neighborhood(seeds, order=2, mode="all", mindist=1)

    def c_per_seed(self):
        """igraph's C BFS called once per seed: (vertex ids, the set of vertex names) -- the second is what
        ``set(reader.reach(...))`` gives, the first what the batched row above returns."""
        sub, index, names = self.sub, self.index, self.names

        def ids(name):
            return sub.neighborhood(index[name], order=2, mode="all", mindist=1)

        def with_names(name):
            return {names[v] for v in sub.neighborhood(index[name], order=2, mode="all", mindist=1)}

        return ids, with_names


# -------------------------------------------------------------- networkx side
class NetworkxSide:
    def __init__(self, names: list[str], frm: list[str], to: list[str], types: list[str]):
        self.G = nx.MultiDiGraph()
        self.G.add_nodes_from(names)
        self.G.add_edges_from((a, b, {"type": t}) for a, b, t in zip(frm, to, types))

    def ops(self):
        G = self.G
        typed = frozenset(TYPED_FILTER)
        traversal_types = frozenset(TRAVERSAL_TYPES)

        def neighbors(name, types=None, direction=None):
            out = []
            if direction in (None, "out"):
                for _, v, _, t in G.out_edges(name, keys=True, data="type"):
                    if types is None or t in types:
                        out.append((v, t, "out"))
            if direction in (None, "in"):
                for u, _, _, t in G.in_edges(name, keys=True, data="type"):
                    if types is None or t in types:
                        out.append((u, t, "in"))
            return out

        def all_types(name):
            return neighbors(name)

        def typed_out(name):
            return neighbors(name, typed, TYPED_DIRECTION)

        def two_hop(name):
            seen = {name}
            frontier = [name]
            for _ in range(2):
                nxt = []
                for node in frontier:
                    for _, v, _, t in G.out_edges(node, keys=True, data="type"):
                        if t in traversal_types and v not in seen:
                            seen.add(v)
                            nxt.append(v)
                    for u, _, _, t in G.in_edges(node, keys=True, data="type"):
                        if t in traversal_types and u not in seen:
                            seen.add(u)
                            nxt.append(u)
                frontier = nxt
            seen.discard(name)
            return seen

        return all_types, typed_out, two_hop


# -------------------------------------------------------------------- report
def verdict(crux: float, igraph_py: float, networkx: float) -> tuple[float, float, str]:
    r_ig = crux / igraph_py
    r_nx = networkx / crux
    misses = []
    if not r_ig <= TARGET_VS_IGRAPH:
        misses.append(f"{r_ig:.1f}x igraph > {TARGET_VS_IGRAPH:g}x")
    if not r_nx >= TARGET_VS_NETWORKX:
        misses.append(f"only {r_nx:.1f}x faster than networkx")
    return r_ig, r_nx, "pass" if not misses else "miss (" + "; ".join(misses) + ")"


def measure_values(res: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, float | None]]]:
    """(row label, figure per system) for every row of the results table; ``res`` as built in ``run``."""
    out: list[tuple[str, dict[str, float | None]]] = []
    cold = res["cold"]
    out.append(("neighbors(ref) - first pass, cold caches - mean (us)", {s: cold[s].mean_us for s in SYSTEMS}))
    for key, name in (("all", "neighbors(ref)"),
                      ("typed", f"neighbors(ref, types=[{','.join(TYPED_FILTER)}], direction={TYPED_DIRECTION})")):
        per = res[key]
        for stat in ("mean", "p50", "p95"):
            out.append((f"{name} - {stat} (us)", {s: getattr(per[s], f"{stat}_us") for s in SYSTEMS}))
    hop = res["two_hop"]
    out.append(("2-hop typed traversal, all seeds - total (ms)",
                {**{s: hop[s + "_total_ms"] for s in SYSTEMS}, "igraph_c": hop["igraph_c_total_ms"]}))
    out.append(("2-hop typed traversal - per seed mean (ms)",
                {**{s: hop[s].mean_ns / 1e6 for s in SYSTEMS}, "igraph_c": hop["igraph_c_total_ms"] / hop["n_seeds"]}))
    out.append(("2-hop typed traversal - per seed p95 (ms)", {s: hop[s].p95_ns / 1e6 for s in SYSTEMS}))
    assert [label for label, _ in out] == list(ROW_LABELS), [label for label, _ in out]
    return out


def result_rows(res: dict[str, dict[str, Any]]) -> list[list[str]]:
    """``res[op][system]`` holds Stats (per-call/per-seed) or a float (ms total); see ``run``."""
    target = f"<={TARGET_VS_IGRAPH:g}x igraph; >={TARGET_VS_NETWORKX:g}x faster than networkx"
    rows = []
    for label, values in measure_values(res):
        r_ig, r_nx, v = verdict(values["crux"], values["igraph"], values["networkx"])
        rows.append([label, fmt_num(values["crux"]), fmt_num(values["igraph"]), fmt_num(values.get("igraph_c")),
                     fmt_num(values["networkx"]), f"{r_ig:.2f}", f"{r_nx:.2f}", target, v])
    return rows


def summary_rows(res: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The results table as summary rows: each operation once against igraph (python), once against networkx."""
    rows = []
    for label, values in measure_values(res):
        r_ig, r_nx, _ = verdict(values["crux"], values["igraph"], values["networkx"])
        rows.append({"measure": label, "ours": values["crux"], "baseline": values["igraph"],
                     "baseline_name": "igraph (python)", "target": f"ratio <= {TARGET_VS_IGRAPH:g}",
                     "verdict": "pass" if r_ig <= TARGET_VS_IGRAPH else "miss"})
        rows.append({"measure": label, "ours": values["crux"], "baseline": values["networkx"],
                     "baseline_name": "networkx", "target": f"ratio <= {1 / TARGET_VS_NETWORKX:g} "
                     f"(>= {TARGET_VS_NETWORKX:g}x faster than networkx)",
                     "verdict": "pass" if r_nx >= TARGET_VS_NETWORKX else "miss"})
    return rows


def c_level_values(res: dict[str, dict[str, Any]]) -> list[tuple[str, float, float]]:
    """(label, crux_nb ms, igraph C ms) for every row of the igraph C table."""
    out = []
    for label, ours, theirs in C_ROWS:
        for stat in ("mean", "p95"):
            out.append((f"2-hop per seed, {label} - {stat} (ms)", getattr(res["c_level"][ours], f"{stat}_ns") / 1e6,
                        getattr(res["c_level"][theirs], f"{stat}_ns") / 1e6))
    return out


def c_level_rows(res: dict[str, dict[str, Any]]) -> list[list[str]]:
    rows = []
    for label, ours, theirs in c_level_values(res):
        name, stat = label.removeprefix("2-hop per seed, ").removesuffix(" (ms)").rsplit(" - ", 1)
        ratio = ours / theirs
        rows.append([name, stat, fmt_num(ours), fmt_num(theirs), f"{ratio:.2f}", f"<={TARGET_VS_IGRAPH:g}x igraph C",
                     "pass" if ratio <= TARGET_VS_IGRAPH else f"miss ({ratio:.1f}x igraph C > {TARGET_VS_IGRAPH:g}x)"])
    return rows


def c_level_summary(res: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"measure": label, "ours": ours, "baseline": theirs,
             "baseline_name": "igraph C + names" if "names" in label else "igraph C (vertex ids)",
             "target": f"ratio <= {TARGET_VS_IGRAPH:g}", "verdict": "pass" if ours / theirs <= TARGET_VS_IGRAPH else "miss"}
            for label, ours, theirs in c_level_values(res)]


# ----------------------------------------------------------------------- run
def run(cfg: Config, *, build: str, out_path: Path, label: str) -> str:
    phases = Phases()
    rss: dict[str, float] = {}
    t_start = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:7.1f}s rss {current_rss_mb():7.0f} MiB] {msg}", file=sys.stderr, flush=True)

    load_start = load_average()
    log(f"generating {cfg.n_nodes:,} nodes / {cfg.n_edges:,} edges (seed {cfg.seed})")
    with phases("generate synthetic graph (numpy)"):
        syn = make_graph(cfg)
        sources = source_frame(syn, cfg)
        entities = entity_frame(syn)

    # ---- crux_nb
    log("crux_nb: add_frame / add_entities / add_edges")
    rss_before = current_rss_mb()
    kb = crux_nb.knowledge_base(id="bench")
    with phases(f"crux_nb kb.add_frame ({cfg.n_sources:,} sources -> {cfg.n_chunks:,} chunks)"):
        kb.add_frame(sources, id_column="id", text_column="text", format="text")
    got = kb.chunks["ref"].tolist()
    assert got == syn.chunk_refs, "chunking did not give the expected one chunk per paragraph"
    with phases(f"crux_nb kb.add_entities ({cfg.n_entities:,})"):
        kb.add_entities(entities)
    base_state = kb.state
    if build == "api":
        log(f"crux_nb: kb.add_edges({cfg.n_edges:,} rows)")
        with phases(f"crux_nb kb.add_edges ({cfg.n_edges:,} edges)"):
            kb.add_edges(syn.edges)
    else:
        with phases(f"crux_nb direct frames -> KBState ({cfg.n_edges:,} edges)"):
            kb = KnowledgeBase(id="bench", namespace="bench", state=build_direct_state(base_state, syn.edges))
    assert len(kb.state.edges) == cfg.n_edges, (len(kb.state.edges), cfg.n_edges)
    reader = kb.reader
    with phases("crux_nb reader indexes (first neighbors() call)"):
        reader.neighbors(f"document:{syn.source_ids[0]}")  # not a sampled node: builds both indexes
    rss["crux_nb (knowledge base + reader indexes)"] = current_rss_mb() - rss_before
    crux_all, crux_typed, crux_hop, crux_hop_arrays, crux_triples, crux_names = crux_ops(reader)

    # ---- baselines
    names = [f"document:{s}" for s in syn.source_ids] + syn.chunk_refs + syn.entity_refs
    b_frm, b_to, b_types = baseline_edge_list(syn, cfg)
    log(f"igraph: {len(names):,} vertices, {len(b_frm):,} directed edges")
    rss_before = current_rss_mb()
    with phases(f"igraph Graph ({len(b_frm):,} directed edges incl. structural, + typed subgraph)"):
        igs = IgraphSide(names, b_frm, b_to, b_types)
    rss["igraph"] = current_rss_mb() - rss_before
    log("networkx: MultiDiGraph")
    rss_before = current_rss_mb()
    with phases(f"networkx MultiDiGraph ({len(b_frm):,} directed edges)"):
        nxs = NetworkxSide(names, b_frm, b_to, b_types)
    rss["networkx"] = current_rss_mb() - rss_before
    del b_frm, b_to, b_types
    ig_all, ig_typed, ig_hop = igs.ops()
    nx_all, nx_typed, nx_hop = nxs.ops()

    # ---- first pass over the samples: nothing cached yet (crux_nb's reader caches decoded refs)
    samples, seeds = syn.sample_refs, syn.seed_refs
    log("timing first (cold) pass")
    res: dict[str, dict[str, Any]] = {"all": {}, "typed": {}, "two_hop": {"n_seeds": len(seeds)}}
    res["cold"] = time_interleaved(dict(zip(SYSTEMS, (crux_all, ig_all, nx_all))), samples, warmup=0, repeats=1)

    # ---- same answers on every side
    log("checking that every side returns the same neighbours")
    sizes = {"all": [], "typed": [], "two_hop": []}
    for ref in samples:
        for key, c_fn, i_fn, n_fn in (("all", crux_all, ig_all, nx_all), ("typed", crux_typed, ig_typed, nx_typed)):
            c = crux_triples(c_fn(ref))
            i, n = collections.Counter(i_fn(ref)), collections.Counter(n_fn(ref))
            assert c == i == n, f"{key} neighbours of {ref} differ: crux={sorted(c)[:5]} igraph={sorted(i)[:5]} nx={sorted(n)[:5]}"
            sizes[key].append(sum(c.values()))
    c_hood = igs.c_two_hop(seeds)()
    for ref, hood in zip(seeds, c_hood):
        c, i, n = crux_names(crux_hop(ref)), ig_hop(ref), nx_hop(ref)
        h = {igs.names[v] for v in hood}
        assert c == i == n == h, f"2-hop sets of {ref} differ: sizes crux={len(c)} igraph={len(i)} nx={len(n)} C={len(h)}"
        sizes["two_hop"].append(len(c))

    # ---- timing: warm-up pass, then `repeats` passes interleaved across the sides; one sample per call
    for key, fns in (("all", (crux_all, ig_all, nx_all)), ("typed", (crux_typed, ig_typed, nx_typed))):
        log(f"timing {key} neighbours")
        res[key] = time_interleaved(dict(zip(SYSTEMS, fns)), samples, warmup=1, repeats=cfg.repeats)
    log("timing 2-hop traversal")
    compiled.wait("reach")  # the compiled reach started compiling in the background at the first reach() above
    hop = time_interleaved(dict(zip(SYSTEMS, (crux_hop, ig_hop, nx_hop))), seeds, warmup=1, repeats=cfg.repeats)
    for system, st in hop.items():
        res["two_hop"][system] = st
        res["two_hop"][system + "_total_ms"] = st.total_ns / cfg.repeats / 1e6
    log("timing 2-hop traversal: igraph C neighborhood()")
    c_stats, _ = time_once(igs.c_two_hop(seeds), warmup=1, repeats=max(5, cfg.repeats))
    res["two_hop"]["igraph_c_total_ms"] = c_stats.p50_ns / 1e6
    log("timing 2-hop traversal against igraph C per seed (ids; ids + names)")
    c_ids, c_names = igs.c_per_seed()
    for ref in seeds:
        assert set(crux_hop_arrays(ref).refs.tolist()) == c_names(ref) == {igs.names[v] for v in c_ids(ref)}, ref
    res["c_level"] = time_interleaved({"crux": crux_hop, "crux_arrays": crux_hop_arrays, "c_ids": c_ids,
                                       "c_names": c_names}, seeds, warmup=1, repeats=cfg.repeats)

    # ---- reference: the same edges built straight into frames (what a vectorised add_edges could cost)
    if build == "api":
        log("reference: direct frame build of the same edges")
        with phases(f"reference: same edges as frames -> KBState directly ({cfg.n_edges:,} edges)"):
            direct_state = build_direct_state(base_state, syn.edges)
        for table in ("edges", "edge_evidence", "entities"):
            pd.testing.assert_frame_equal(getattr(kb.state, table), getattr(direct_state, table), obj=table)
        del direct_state
    del base_state
    log("done")

    # ---- report
    degrees = np.asarray(igs.g.degree(mode="all"))
    node_deg = degrees[len(syn.source_ids):]  # chunks + entities
    table = markdown_table(COLUMNS, result_rows(res), align=["l"] + ["r"] * 6 + ["l", "l"])
    c_table = markdown_table(C_COLUMNS, c_level_rows(res), align=["l", "l", "r", "r", "r", "l", "l"])
    build_rows = [[name, f"{sec:,.2f}", f"{phases.peak_mb[name]:,.0f}"] for name, sec in phases.seconds.items()]
    build_table = markdown_table(["build phase", "seconds", "peak RSS after (MiB)"], build_rows)
    mem_table = markdown_table(["structure", "RSS increase (MiB)"], [[k, f"{v:,.0f}"] for k, v in rss.items()])
    info = machine_info(["pandas", "numpy", "pyarrow", "igraph", "networkx"])
    info["crux_nb"] = crux_nb.__version__
    info["load average (1/5/15 min) at start"] = load_start
    info["load average (1/5/15 min) at end"] = load_average()

    def mean(xs):
        return sum(xs) / len(xs) if xs else 0.0

    text = "\n".join([
        f"# neighbors() benchmark ({label})",
        "",
        f"Graph: {cfg.n_chunks:,} chunks in {cfg.n_sources:,} sources + {cfg.n_entities:,} entities "
        f"= {cfg.n_nodes:,} nodes; {cfg.n_edges:,} semantic edges (mentions {cfg.n_mentions:,} chunk->entity directed, "
        f"related {cfg.n_related:,} entity<->entity symmetric, references {cfg.n_references:,} chunk->chunk directed), "
        f"1 evidence chunk each; seed {cfg.seed}. Entries per node (all types, both directions, incl. structural): "
        f"mean {node_deg.mean():.1f}, p99 {np.percentile(node_deg, 99):.0f}, max {node_deg.max():,}.",
        f"Workload: {len(samples):,} sampled nodes (same for every side), {cfg.repeats} timed passes (interleaved across the sides, rotating order) after 1 warm-up "
        f"pass, one perf_counter_ns sample per call; 2-hop BFS over types {list(TRAVERSAL_TYPES)} in both directions "
        f"from {len(seeds)} seeds (distinct nodes within 2 hops, seed excluded). Mean result sizes: "
        f"neighbors(ref) {mean(sizes['all']):.1f}, typed {mean(sizes['typed']):.1f}, "
        f"2-hop {mean(sizes['two_hop']):,.0f} nodes.",
        f"Edge build: {'kb.add_edges() (public API)' if build == 'api' else 'frames built directly into KBState'}.",
        "",
        "## Results",
        "",
        table,
        "",
        "igraph (python): `g.incident(v, mode)` + type filter + vertex names, in Python. igraph C: one "
        "`neighborhood(seeds, order=2, mode='all', mindist=1)` call on the subgraph of the traversal types (median of "
        "runs; returns vertex ids, no names). networkx: `MultiDiGraph.out_edges/in_edges(n, keys=True, data='type')`. "
        "The first-pass row is one pass over the samples right after the graphs were built, before any "
        "warm-up (crux_nb's reader caches decoded refs, so its first call per node is slower). "
        "Every side was checked to return the same neighbour multisets (ref, type, direction) for every sampled "
        "node and the same 2-hop sets for every seed. crux/igraph = crux_nb time / igraph (python) time; "
        "networkx/crux = networkx time / crux_nb time.",
        "",
        "## Against igraph's C BFS",
        "",
        c_table,
        "",
        "The same 2-hop traversal, timed per seed and interleaved: crux_nb's public `reach()` (as the results "
        "table: `set(reader.reach(ref, depth=2, types=...))`, a set of encoded refs) and `reach_arrays()` (the "
        "same nodes as an object array of refs and an array of hops) against igraph's C "
        "`neighborhood(v, order=2, mode='all', mindist=1)` on the typed subgraph, called once per seed, returning "
        "vertex ids (no names), and the same call with the ids turned into a set of vertex names (what "
        "crux_nb returns). The results table's igraph C column is one batched call over all seeds.",
        "",
        "## Build",
        "",
        build_table,
        "",
        mem_table,
        "",
        f"Peak RSS of the whole run: {peak_rss_mb():,.0f} MiB.",
        "",
        "## Machine",
        "",
        markdown_table(["key", "value"], [[k, v] for k, v in info.items()], align=["l", "l"]),
        "",
    ])
    write_text(out_path, text)
    write_summary(out_path, "neighbors", summary_rows(res) + c_level_summary(res))
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="5,000 nodes / 25,000 edges / 200 samples (seconds)")
    parser.add_argument("--build", choices=("api", "direct"), default="api",
                        help="add edges with kb.add_edges() (default) or build the KBState frames directly")
    parser.add_argument("--samples", type=int, help="number of sampled nodes")
    parser.add_argument("--seeds", type=int, help="number of 2-hop traversal seeds")
    parser.add_argument("--repeats", type=int, help="timed passes per operation")
    parser.add_argument("--seed", type=int, help="random seed")
    parser.add_argument("--out", type=Path, help="Markdown output (default bench/out/neighbors[_small].md)")
    args = parser.parse_args(argv)
    cfg = SMALL if args.small else FULL
    overrides = {k: v for k, v in (("n_samples", args.samples), ("n_seeds", args.seeds),
                                   ("repeats", args.repeats), ("seed", args.seed)) if v is not None}
    cfg = replace(cfg, **overrides)
    out = args.out or OUT_DIR / ("neighbors_small.md" if args.small else "neighbors.md")
    text = run(cfg, build=args.build, out_path=out, label="small" if args.small else "full")
    print(text)
    print(f"written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
