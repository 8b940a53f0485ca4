"""Benchmark: offline ``extract_entities()`` time per document as the corpus grows (issue 35).

Short real passages (2WikiMultihopQA, then MuSiQue and HotpotQA: about 460 characters each; 9,003 in all,
from ``../shared/data/multihop``) are added as one source each and extracted with the offline model.
Per-document time should stay flat as the corpus (and its entity count) grows. Main's cross-source name
folding scanned every full name for every one-word name (quadratic in the entity count); its code runs in
the same benchmark on the smaller corpora (its 6,119-passage run took 809 s), each run in its own process,
and the extracted graphs (entities, edges, evidence) are checked identical.

    python bench/extract_scale.py [--sizes 1000,3000,9003] [--previous 1000,2000] [--baseline main]
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


def side(n: int) -> dict:
    """Extract the first ``n`` passages (in this process: ``crux_nb`` from ``PYTHONPATH``)."""
    import crux_nb
    from _multihop import CHUNK_SIZE, load_sample  # this checkout's (bench/ is the script's folder): the data path

    corpus = pd.concat([load_sample(name).passages.assign(id=lambda f, s=name: s + "-" + f["id"])
                        for name in ("2wiki", "musique", "hotpotqa")], ignore_index=True)
    frame = corpus.iloc[:n]
    kb = crux_nb.knowledge_base(id="scale", chunk_size=CHUNK_SIZE)
    kb.add_frame(pd.DataFrame({"id": frame["id"], "text": frame["title"] + "\n\n" + frame["text"]}),
                 id_column="id", text_column="text", format="text")
    t = time.perf_counter()
    kb.extract_entities(progress=False)
    seconds = time.perf_counter() - t
    h = hashlib.sha256()
    for f in (kb.entities, kb.edges, kb.edge_evidence):
        h.update(pd.util.hash_pandas_object(f.astype(str), index=False).values.tobytes())
    return {"n": len(frame), "seconds": seconds, "digest": h.hexdigest()[:12], "entities": len(kb.entities),
            "edges": len(kb.edges)}


def run(sizes, previous_sizes, baseline: str, out: Path) -> str:
    from bench._baseline import checkout, run_side
    from bench._common import load_average, markdown_table, write_text

    codes = {"this branch": ROOT, baseline: checkout(baseline)}
    rows, ours = [], []
    for n in sorted(set(sizes) | set(previous_sizes)):
        digests = set()
        for name in ["this branch"] + ([baseline] if n in previous_sizes else []):
            r = run_side(codes[name], Path(__file__), ["--side", str(n)])
            digests.add(r["digest"])
            rows.append([f"{r['n']:,}", name, f"{r['entities']:,}", f"{r['edges']:,}", f"{r['seconds']:.1f}",
                         f"{1000 * r['seconds'] / r['n']:.1f}"])
            if name == "this branch":
                ours.append(1000 * r["seconds"] / r["n"])
            print(rows[-1], flush=True)
        assert len(digests) == 1, f"the graphs differ at {n} passages"
    text = "\n".join([
        "# Offline extraction per document as the corpus grows (issue 35)", "",
        "Short passages (2Wiki, then MuSiQue and HotpotQA), one source each, `extract_entities()` with the offline "
        f"model; each run in its own process, {baseline}'s code (bench/_baseline.py) on the smaller corpora; the "
        "extracted graphs (entities, edges, evidence) hashed equal on both sides. Shared 2-core machine, load "
        f"average {load_average()}.",
        "", markdown_table(["passages", "code", "entities", "edges", "seconds", "ms / passage"], rows), "",
        f"Per-passage time of this branch: max / min = {max(ours) / min(ours):.2f} (target <= 1.5).", ""])
    write_text(out, text)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,3000,9003")
    parser.add_argument("--previous", default="1000,2000")
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--side", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "extract_scale.md")
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(side(args.side)))
        return 0
    parse = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    print(run(parse(args.sizes), parse(args.previous), args.baseline, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
