"""Benchmark: turning text into BM25 terms, this checkout against a baseline commit, in alternating fresh processes.

Every chunk is tokenized once when a knowledge base is first queried or saved (later states tokenize only the
sources that changed), so on a big knowledge base built in the notebook this is the first query's, or the first
save's, longest step. Two measures per side:

* **split**: every text of each corpus into its BM25 terms (``crux_nb.store.lexical.analyzer`` under a knowledge
  base's default settings: the ``crux`` token rule and English stop words), in MB of text per second; a SHA-256
  of every text's terms must be the same on both sides;
* **first query**: a knowledge base of every corpus's texts (one source per text, ``add_frame``) and its
  first ``retrieve(limit=10)``, which builds the lexical index over every chunk (the split, the vocabulary,
  the per-source arrays); both sides must return the same hits.

Corpora: A Christmas Carol's paragraphs and the multi-hop samples' passages (``../shared/data``; their names
bring many non-ASCII words), and CPython's language reference topics (``pydoc_data``: code and identifiers).

    python -m bench.tokenize_cost [--baseline REF] [--rounds 3] [--out bench/out/tokenize_cost.md]
    python -m bench.tokenize_cost --small            # a tenth of the passages, one round
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
OURS = "this checkout"
QUERY = "Scrooge counting-house clerk"


def corpora(fraction: float = 1.0) -> dict[str, list[str]]:
    """Name -> texts: the carol's paragraphs, each multi-hop sample's passages, the language reference topics."""
    import pydoc_data.topics

    out = {}
    carol = DATA / "christmas-carol" / "a-christmas-carol.txt"
    if carol.is_file():
        out["carol"] = [p for p in carol.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    for name in ("2wiki", "hotpotqa", "musique"):
        path = DATA / "multihop" / name / "corpus.json"
        if path.is_file():
            passages = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(passages, dict):  # HotpotQA: title -> sentences
                passages = [{"title": title, "text": "".join(sentences)} for title, sentences in passages.items()]
            out[name] = [f"{p['title']}\n\n{p['text']}" for p in passages]
    out["pyref"] = list(pydoc_data.topics.topics.values())
    return {name: texts[:max(1, int(len(texts) * fraction))] for name, texts in out.items()}


def step_tokenize(fraction: float) -> dict:
    """Seconds, MB and digest per corpus: every text split into its terms (``crux_nb.store.lexical.analyzer``)."""
    from crux_nb.store.lexical import analyzer, lexical_settings

    out = {}
    for name, texts in corpora(fraction).items():
        split = analyzer(lexical_settings("bench"))
        start = time.perf_counter()
        terms = [split(text) for text in texts]
        seconds = time.perf_counter() - start
        digest = hashlib.sha256("\n".join("\t".join(words) for words in terms).encode()).hexdigest()
        out[name] = {"s": seconds, "mb": sum(len(t.encode()) for t in texts) / 1e6, "digest": digest}
    return out


def step_first_query(fraction: float) -> dict:
    """A knowledge base of every corpus's texts, then the first query (the whole lexical index built)."""
    import pandas as pd

    import crux_nb
    from crux_nb import retrieve

    kb = crux_nb.knowledge_base(id="tokenize-bench")
    for name, texts in corpora(fraction).items():
        kb.add_frame(pd.DataFrame({"id": [f"{name}/{i:06d}.md" for i in range(len(texts))], "text": texts}))
    recipe = kb.recipe(steps=[retrieve(limit=10)])
    start = time.perf_counter()
    hits = recipe.retrieve(QUERY)
    seconds = time.perf_counter() - start
    return {"s": seconds, "chunks": len(kb.chunks), "hits": [str(h.ref) for h in hits]}


def run(baseline: str, rounds: int, fraction: float, out: Path) -> str:
    from bench._baseline import checkout, run_side
    from bench._common import load_average, machine_info, markdown_table, write_summary, write_text

    sides = {OURS: ROOT, f"baseline {baseline}": checkout(baseline)}
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, code in sides.items():  # alternated: a slow minute hits both sides
            runs[name].append({step: run_side(code, Path(__file__).resolve(), ["--step", step, str(fraction)])
                               for step in ("tokenize", "first")})
    name = f"baseline {baseline}"
    ours, theirs = runs[OURS], runs[name]
    rows, summary = [], []
    for corpus in ours[0]["tokenize"]:
        mb = ours[0]["tokenize"][corpus]["mb"]
        a = statistics.median(r["tokenize"][corpus]["s"] for r in ours)
        b = statistics.median(r["tokenize"][corpus]["s"] for r in theirs)
        same = ours[0]["tokenize"][corpus]["digest"] == theirs[0]["tokenize"][corpus]["digest"]
        rows.append([f"split {corpus} ({mb:.1f} MB)", f"{mb / a:.1f} MB/s", f"{mb / b:.1f} MB/s", f"{b / a:.2f}x",
                     "yes" if same else "NO"])
        summary.append({"measure": f"split {corpus} into terms, MB/s ({mb:.1f} MB)", "ours": mb / a, "baseline": mb / b,
                        "baseline_name": name, "target": "same terms on both sides",
                        "verdict": "pass" if same else "miss"})
    a = statistics.median(r["first"]["s"] for r in ours)
    b = statistics.median(r["first"]["s"] for r in theirs)
    same = ours[0]["first"]["hits"] == theirs[0]["first"]["hits"]
    rows.append([f"first query of a new knowledge base ({ours[0]['first']['chunks']:,} chunks)", f"{a:.2f} s",
                 f"{b:.2f} s", f"{b / a:.2f}x", "yes" if same else "NO"])
    summary.append({"measure": f"first query of a new knowledge base, {ours[0]['first']['chunks']:,} chunks (s)",
                    "ours": a, "baseline": b, "baseline_name": name, "target": "same hits on both sides",
                    "verdict": "pass" if same else "miss"})
    table = markdown_table([f"measure (medians of {rounds} alternated rounds)", OURS, name,
                            "speed-up", "same result"], rows)
    info = machine_info(["pandas", "numpy"])
    text = (f"# Tokenize cost\n\n{table}\n\nMachine: {info['cpu']}, {info['cpus']} CPUs, Python {info['python']}; "
            f"load average at the end {load_average()}.\n")
    write_text(out, text)
    write_summary(out, "tokenize_cost", summary)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=None, help="the commit to compare with (default: before this change)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="a tenth of the texts, one round")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "tokenize_cost.md")
    parser.add_argument("--step", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step:
        step, fraction = args.step[0], float(args.step[1])
        result = step_tokenize(fraction) if step == "tokenize" else step_first_query(fraction)
        print(json.dumps(result))
        return 0
    from bench._baseline import BEFORE_FAST_TOKENIZE

    print(run(args.baseline or BEFORE_FAST_TOKENIZE, 1 if args.small else args.rounds, 0.1 if args.small else 1.0,
              args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
