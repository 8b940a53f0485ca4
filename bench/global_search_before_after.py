"""One-off benchmark: global search before / after the batch-independent map score and the overview rule (issue 16).

Same process, same trees, same questions (``bench/carol_global_questions.csv``):

* before: ``OfflineModel(map_score="batch-bm25")`` (offline model v3's map, BM25 with idf over the batch) and
  the previous overview rule (parents only), patched in for the run;
* after: ``OfflineModel()`` (v4, :func:`crux_nb.models.text.match_scores`) and the current
  :func:`~crux_nb.retrieval.globalsearch.units.select_detail` (parents plus the leaves no report one level up
  covers).

Per tree (crux_nb's own community tree of the Carol, and GraphRAG's index read with ``read_graphrag``) and
detail: adaptive / scan-all input characters and overlap@10 (as ``bench.global_search``) for all questions
and for each half (even and odd positions in the file, a fixed split), scan all's self-agreement when its
batches are packed in reverse (the noise floor), and scan all's gold-chunk citation on the 37 local
questions of ``bench/carol_questions.csv`` (a top-10 finding cites a chunk holding a gold passage).

Usage: ``python -m bench.global_search_before_after`` (about 6 minutes on 2 loaded cores).
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

import crux_nb
from crux_nb.io import read_graphrag
from crux_nb.models import OfflineModel
from crux_nb.retrieval.globalsearch import step as step_module, units as units_module

from bench import global_search as gs
from bench._common import load_average

GOLD_PATH = Path(__file__).resolve().parent / "carol_questions.csv"
CURRENT_RULE = units_module.select_detail


def previous_rule(units, detail):
    """The overview rule before this change: every parent (and detailed: every other unit)."""
    parents = {u.parent_id for u in units if u.parent_id is not None}
    chosen = [u for u in units if (u.community_id in parents) == (detail == "overview")]
    return sorted(chosen, key=lambda u: (u.level, u.community_id))


def gold_hit(kb, hits, gold: str) -> int:
    text = {c: " ".join(t.split()) for c, t in zip(kb.state.chunks["chunk_id"], kb.state.chunks["content"])}
    parts = [" ".join(p.split()) for p in gold.split("||") if p.strip()]
    return int(any(p in text.get(s.chunk_id, "") for h in hits for s in h.citation.supports for p in parts))


def main() -> int:
    started, load_start = time.perf_counter(), load_average()
    kb = crux_nb.knowledge_base(id="carol", communities=crux_nb.communities(model=OfflineModel()))
    kb.add_path(gs.BOOK_PATH)
    kb.communities.prepare(progress=False)
    gkb = read_graphrag(gs.GRAPHRAG_PATH, id="graphrag")
    questions = gs.load_questions(gs.QUESTIONS_PATH)
    with open(GOLD_PATH, newline="", encoding="utf-8") as fh:
        gold = list(csv.DictReader(fh))
    print("| setting | tree | detail | ratio / kept, all | even half | odd half | scan all re-packed | "
          "scan all gold@10 (37 local questions) |")
    print("| :-- | :-- | :-- | --: | --: | --: | --: | --: |")
    runs = {}
    for setting, model, rule in (("before", OfflineModel(map_score="batch-bm25"), previous_rule),
                                 ("after", OfflineModel(), CURRENT_RULE)):
        step_module.select_detail = units_module.select_detail = rule
        try:
            for tree, k in (("crux_nb", kb), ("graphrag", gkb)):
                for d in gs.DETAILS:
                    ps = [gs.Pair(q, d, gs.ask(k, model, q.question, scan="all", detail=d),
                                  gs.ask(k, model, q.question, scan="adaptive", detail=d)) for q in questions]
                    runs[setting, tree, d] = ps
                    cells = [f"{s.ratio:.3f} / {s.overlap:.3f}" for s in
                             (gs.summarise(ps, d), gs.summarise(ps[0::2], d), gs.summarise(ps[1::2], d))]
                    floor = gs.mean([gs.overlap(p.all.statements, gs.repacked(k, model, p.question.question, d))
                                     for p in ps])
                    step = crux_nb.global_search(model=model, scan="all", detail=d, limit=gs.LIMIT)
                    g = [gold_hit(k, list(k.recipe(steps=[step]).retrieve_with_trace(r["question"]))[0], r["gold"])
                         for r in gold]
                    print(f"| {setting} | {tree} | {d} | " + " | ".join(cells) +
                          f" | {floor:.3f} | {sum(g)}/{len(g)} (even {sum(g[0::2])}, odd {sum(g[1::2])}) |", flush=True)
        finally:
            step_module.select_detail = units_module.select_detail = CURRENT_RULE
    print()
    for tree in ("crux_nb", "graphrag"):
        for d in gs.DETAILS:
            a, b = runs["before", tree, d], runs["after", tree, d]
            kept = gs.mean([gs.overlap(x.all.statements, y.all.statements) for x, y in zip(a, b)])
            print(f"- {tree} {d}: scan all's top 10 after holds {kept:.3f} of its top 10 before; scan-all input "
                  f"chars {gs.mean([x.all.chars for x in a]):,.0f} before, {gs.mean([y.all.chars for y in b]):,.0f} after")
    print(f"\n{time.perf_counter() - started:,.0f} s; load average {load_start} at start, {load_average()} at end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
