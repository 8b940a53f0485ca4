"""Benchmark: crux_nb at scale -- a 20,000-chunk corpus end to end, and a 1,000,000-edge knowledge base's memory.

Part 1 -- corpus pipeline. Paragraphs of the shared Christmas Carol
(``/work/shared/data`` or ``../shared/data`` beside the checkout) and of the
sample corpus (``crux_nb.datasets.sample_path()``) are packed into passages of
600..1,100 characters (each becomes one chunk), then copied into many variant
sources: every source holds ``CHUNKS_PER_SOURCE`` passages drawn with a fixed
seed, each prefixed by its own id line. Stages, each timed with the peak RSS
*during that stage* (Linux: the process's high-water mark is reset with
``/proc/self/clear_refs`` before each stage) and the resident memory after it:

* ingest -- ``kb.add_frame`` (text format);
* extract -- ``kb.extract_entities()`` with the offline model;
* communities -- ``kb.communities.prepare()`` (clustering + reports, offline model).

Part 2 -- a 1,000,000-edge knowledge base built with ``bench/neighbors.py``'s
generator (``make_graph`` with a scaled ``Config``) and ``build_direct_state``
(the state ``kb.add_edges`` produces). The generator's inputs are freed before
measuring; resident memory of the process is reported after the build and
after the reader's indexes (first ``neighbors()`` call), against the 1 GB
target, with a per-frame / per-column breakdown and the measured saving of
categorical dtypes for the low-cardinality columns.

Each part runs in a fresh subprocess (``--part``), so neither sees the other's
memory. ``--small`` runs both at about 1/10 of the size in seconds.

Usage::

    .venv/bin/python bench/scale.py            # full run (a few minutes on 2 cores)
    .venv/bin/python bench/scale.py --small
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench._common import (OUT_DIR, current_rss_mb, fmt_num, hwm_mb, machine_info, markdown_table, reset_peak,  # noqa: E402
                     write_summary, write_text)

CAROL = [ROOT.parent / "shared" / "data" / "christmas-carol" / "a-christmas-carol.txt",
         Path("/work/shared/data/christmas-carol/a-christmas-carol.txt")]
TARGET_MB = 1024.0
CHUNKS_PER_SOURCE = 20
MIN_PASSAGE, MAX_PASSAGE = 600, 1_100


@dataclass(frozen=True)
class Scale:
    n_chunks: int
    n_edges: int
    n_entities: int
    n_graph_sources: int


FULL = Scale(n_chunks=20_000, n_edges=1_000_000, n_entities=150_000, n_graph_sources=2_000)
SMALL = Scale(n_chunks=1_000, n_edges=100_000, n_entities=15_000, n_graph_sources=200)


# ------------------------------------------------------------------ memory
def peak_mb() -> float:
    """The peak-RSS mark since the last reset (NaN where the kernel has none)."""
    peak = hwm_mb()
    return float("nan") if peak is None else peak


def frame_mb(frame: Any) -> float:
    return float(frame.memory_usage(deep=True, index=True).sum()) / 2**20


# ------------------------------------------------------------------ part 1
def _passages() -> list[str]:
    from crux_nb.datasets import sample_path

    texts = []
    carol = next((p for p in CAROL if p.is_file()), None)
    if carol is not None:
        texts.append(carol.read_text(encoding="utf-8"))
    texts += [p.read_text(encoding="utf-8") for p in sorted(sample_path().glob("*.md"))]
    paragraphs = []
    for text in texts:
        text = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S)  # front matter
        for para in re.split(r"\n\s*\n", text):
            para = " ".join(para.split()).lstrip("#").strip()
            if len(para) >= 40:
                paragraphs.append(para)
    passages, current = [], ""
    for para in paragraphs:
        para = para[:MAX_PASSAGE - 80]
        if current and len(current) + len(para) + 1 > MAX_PASSAGE - 80:
            if len(current) >= MIN_PASSAGE:
                passages.append(current)
            current = ""
        current = (current + " " + para).strip()
    if len(current) >= MIN_PASSAGE:
        passages.append(current)
    return passages


def corpus_frame(n_chunks: int, seed: int = 20_261_129):
    import pandas as pd

    passages = _passages()
    rng = random.Random(seed)
    n_sources = -(-n_chunks // CHUNKS_PER_SOURCE)
    ids, texts = [], []
    for s in range(n_sources):
        sid = f"v{s:05d}"
        picks = rng.sample(range(len(passages)), CHUNKS_PER_SOURCE)
        texts.append("\n\n".join(f"Passage {sid}-{j:02d} (variant {s % 97}). {passages[k]}"
                                 for j, k in enumerate(picks)))
        ids.append(sid)
    return pd.DataFrame({"id": ids, "text": texts}), len(passages)


def part_corpus(scale: Scale) -> dict[str, Any]:
    import crux_nb
    from crux_nb.models import OfflineModel

    out: dict[str, Any] = {"stages": [], "peak_reset": reset_peak()}
    base = current_rss_mb()
    frame, n_passages = corpus_frame(scale.n_chunks)
    out.update(n_passages=n_passages, n_sources=len(frame), input_chars=int(frame["text"].str.len().sum()),
               rss_start=base)
    kb = crux_nb.knowledge_base(id="scale", communities=crux_nb.communities(model=OfflineModel()))

    def stage(name: str, fn) -> Any:
        gc.collect()
        reset_peak()
        before = current_rss_mb()
        t0 = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - t0
        gc.collect()
        out["stages"].append({"stage": name, "seconds": seconds, "peak_mb": peak_mb(), "rss_before_mb": before,
                              "rss_after_mb": current_rss_mb()})
        print(f"[scale] {name}: {seconds:.1f}s rss {current_rss_mb():.0f} MiB", file=sys.stderr, flush=True)
        return result

    stage("ingest (kb.add_frame)", lambda: kb.add_frame(frame, id_column="id", text_column="text", format="text"))
    del frame
    out["n_chunks"] = int(len(kb.chunks))
    res = stage("extract (kb.extract_entities, offline)", lambda: kb.extract_entities(progress=False))
    out.update(n_entities=int(res.entities), n_mentions=int(res.mentions), n_related=int(res.related),
               extract_calls=int(res.calls))
    prep = stage("communities (kb.communities.prepare, offline)", lambda: kb.communities.prepare(progress=False))
    out.update(n_communities=int(prep.communities), reports_written=int(prep.reports_written),
               n_edges=int(len(kb.state.edges)))
    out["frames_mb"] = {name: frame_mb(f) for name, f in kb.frames().items()}
    return out


# ------------------------------------------------------------------ part 2
CATEGORICAL = {"edges": ("type", "direction", "stage"), "edge_evidence": ("source_id", "provenance")}


def part_edges(scale: Scale) -> dict[str, Any]:
    from dataclasses import replace

    from bench import neighbors as nb
    import crux_nb
    from crux_nb import KnowledgeBase

    out: dict[str, Any] = {"peak_reset": reset_peak()}
    import pandas  # noqa: F401  (import cost is not the knowledge base's)

    gc.collect()
    out["rss_start"] = current_rss_mb()
    n_sem = scale.n_edges
    cfg = replace(nb.FULL, n_sources=scale.n_graph_sources, chunks_per_source=10, n_entities=scale.n_entities,
                  n_mentions=int(n_sem * 0.58), n_related=int(n_sem * 0.25),
                  n_references=n_sem - int(n_sem * 0.58) - int(n_sem * 0.25))
    t0 = time.perf_counter()
    syn = nb.make_graph(cfg)
    sources, entities = nb.source_frame(syn, cfg), nb.entity_frame(syn)
    kb = crux_nb.knowledge_base(id="bench")
    kb.add_frame(sources, id_column="id", text_column="text", format="text")
    kb.add_entities(entities)
    kb = KnowledgeBase(id="bench", namespace="bench", state=nb.build_direct_state(kb.state, syn.edges))
    out["build_seconds"] = time.perf_counter() - t0
    first = f"document:{syn.source_ids[0]}"
    del syn, sources, entities
    gc.collect()
    out["peak_build_mb"] = peak_mb()
    out["rss_built_mb"] = current_rss_mb()
    out["n_edges"] = int(len(kb.state.edges))
    out["n_nodes"] = int(len(kb.chunks) + len(kb.state.entities) + len(kb.state.documents))
    reset_peak()
    t0 = time.perf_counter()
    kb.reader.neighbors(first)
    out["index_seconds"] = time.perf_counter() - t0
    gc.collect()
    out["rss_indexed_mb"] = current_rss_mb()
    out["peak_index_mb"] = peak_mb()
    frames = kb.frames()
    out["frames_mb"] = {name: frame_mb(f) for name, f in frames.items() if len(f)}
    columns = {}
    for table in ("edges", "edge_evidence"):
        f = frames[table]
        for col in f.columns:
            mb = float(f[col].memory_usage(deep=True, index=False)) / 2**20
            cat = float(f[col].astype("category").memory_usage(deep=True, index=False)) / 2**20 \
                if col in CATEGORICAL.get(table, ()) else None
            columns[f"{table}.{col}"] = {"dtype": str(f[col].dtype), "mb": mb, "categorical_mb": cat,
                                         "distinct": int(f[col].nunique())}
    out["columns"] = columns
    return out


# ------------------------------------------------------------------ report
def run_part(part: str, small: bool) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--part", part] + (["--small"] if small else [])
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"bench/scale.py --part {part} failed with status {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report(corpus: dict[str, Any], edges: dict[str, Any], scale: Scale, label: str) -> tuple[str, bool]:
    n = lambda v: fmt_num(v, 3)  # noqa: E731
    rows = [[s["stage"], n(s["seconds"]), n(s["peak_mb"]), n(s["rss_after_mb"]),
             n(s["rss_after_mb"] - s["rss_before_mb"])] for s in corpus["stages"]]
    stage_table = markdown_table(["stage", "seconds", "peak RSS in stage (MiB)", "RSS after (MiB)",
                                  "RSS delta (MiB)"], rows)
    ok_chunks = corpus["n_chunks"] >= scale.n_chunks
    ok_edges = edges["n_edges"] >= scale.n_edges
    kb_mb = edges["rss_indexed_mb"]
    verdict = "pass" if kb_mb <= TARGET_MB else f"miss ({kb_mb / TARGET_MB:.2f}x target)"
    mem_rows = [
        ["process RSS before building (interpreter + imports)", n(edges["rss_start"]), "-"],
        [f"process RSS after building ({edges['n_edges']:,} edges)", n(edges["rss_built_mb"]),
         "pass" if edges["rss_built_mb"] <= TARGET_MB else f"miss ({edges['rss_built_mb'] / TARGET_MB:.2f}x target)"],
        ["process RSS after reader indexes", n(edges["rss_indexed_mb"]), verdict],
        ["peak RSS while building", n(edges["peak_build_mb"]), "-"],
        ["peak RSS while indexing", n(edges["peak_index_mb"]), "-"],
    ]
    mem_table = markdown_table(["measure", "MiB", f"target {TARGET_MB:,.0f} MiB"], mem_rows)
    frame_rows = [[k, n(v)] for k, v in sorted(edges["frames_mb"].items(), key=lambda kv: -kv[1])]
    col_rows = [[k, c["dtype"], f"{c['distinct']:,}", n(c["mb"]), n(c["categorical_mb"]) if c["categorical_mb"] else "-",
                 n(c["mb"] - c["categorical_mb"]) if c["categorical_mb"] else "-"]
                for k, c in edges["columns"].items()]
    saving = sum(c["mb"] - c["categorical_mb"] for c in edges["columns"].values() if c["categorical_mb"])
    text = "\n".join([
        f"# Scale benchmark ({label})",
        "",
        "## Corpus pipeline",
        "",
        f"{corpus['n_chunks']:,} chunks in {corpus['n_sources']:,} sources ({corpus['input_chars']:,} characters; "
        f"variants of {corpus['n_passages']:,} passages from the Christmas Carol and the sample corpus); "
        f"{corpus['n_entities']:,} entities, {corpus['n_mentions']:,} mentions, {corpus['n_related']:,} related edges, "
        f"{corpus['extract_calls']:,} extraction calls; {corpus['n_communities']:,} communities, "
        f"{corpus['reports_written']:,} reports written. Peak RSS is per stage "
        f"({'reset before each stage' if corpus['peak_reset'] else 'NOT reset: process peak so far'}).",
        "",
        stage_table,
        "",
        "## 1M-edge memory",
        "",
        f"{edges['n_nodes']:,} nodes; {edges['n_edges']:,} edges (neighbors.py generator, build_direct_state); "
        f"built in {edges['build_seconds']:.1f} s, reader indexes in {edges['index_seconds']:.2f} s. "
        "Generator inputs freed before measuring.",
        "",
        mem_table,
        "",
        "### Frames (pandas deep memory, MiB)",
        "",
        markdown_table(["frame", "MiB"], frame_rows),
        "",
        "### Columns of edges / edge_evidence (MiB)",
        "",
        markdown_table(["column", "dtype", "distinct", "MiB", "as category", "saved"], col_rows),
        "",
        f"Categorical dtypes for the listed low-cardinality columns would save {saving:,.0f} MiB of frame memory.",
        "",
        "## Machine",
        "",
        markdown_table(["key", "value"], [[k, v] for k, v in machine_info(["pandas", "numpy", "pyarrow"]).items()],
                       align=["l", "l"]),
        "",
    ])
    return text, ok_chunks and ok_edges


def summary_rows(corpus: dict[str, Any], edges: dict[str, Any]) -> list[dict[str, Any]]:
    """Resident memory of the edge knowledge base against the 1 GB target (after building, after the reader's
    indexes), and the corpus pipeline's stage times (information; no baseline)."""
    target = f"ours <= {TARGET_MB:g}"
    rows = [{"measure": f"process RSS after {label}, {edges['n_edges']:,} edges (MiB)", "ours": edges[key],
             "target": target, "verdict": "pass" if edges[key] <= TARGET_MB else "miss"}
            for label, key in (("building", "rss_built_mb"), ("reader indexes", "rss_indexed_mb"))]
    rows += [{"measure": f"{s['stage']} time, {corpus['n_chunks']:,} chunks (s)", "ours": s["seconds"]}
             for s in corpus["stages"]]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="1,000 chunks / 100,000 edges (about 30 s)")
    parser.add_argument("--part", choices=("corpus", "edges"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help="Markdown output (default bench/out/scale[_small].md)")
    args = parser.parse_args(argv)
    scale = SMALL if args.small else FULL
    if args.part:
        result = part_corpus(scale) if args.part == "corpus" else part_edges(scale)
        print(json.dumps(result))
        return 0
    corpus, edges = run_part("corpus", args.small), run_part("edges", args.small)
    text, complete = report(corpus, edges, scale, "small" if args.small else "full")
    out = args.out or OUT_DIR / ("scale_small.md" if args.small else "scale.md")
    write_text(out, text)
    write_summary(out, "scale", summary_rows(corpus, edges))
    print(text)
    print(f"written to {out}", file=sys.stderr)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
