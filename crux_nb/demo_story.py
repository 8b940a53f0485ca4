"""The story ``make demo`` tells, step by step; each step prints a short table and returns HTML.

Kept apart from :mod:`crux_nb.demo` (argument parsing, the page, notebooks) so each part stays
small. Nothing printed holds a timing or an address: a test pins the key lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from .community.config import communities as community_config
from .datasets import load_sample_questions, sample_path
from .knowledgebase import knowledge_base
from .evaluation import evaluate
from .models import OfflineModel
from .retrieval import expand_relations, global_search, retrieve
from .widgets import CoverageView, ExpansionView

GLOBAL_QUESTION = "What changed in the launch plan?"
PLAIN, EXPANDED = "retrieve(5)", "retrieve(3) + expand(2)"
Say = Callable[[str], None]


def table(frame: pd.DataFrame, *, width: int = 58) -> str:
    """A frame as aligned text, every row shown, long cells cut to ``width`` characters."""
    if frame.empty:
        return "(none)"

    def cut(value: object) -> str:
        text = " ".join(str(value).split())
        return text if len(text) <= width else text[: width - 3] + "..."

    return frame.astype(object).map(cut).to_string(index=False)


def heading(title: str) -> str:
    return f"\n== {title} " + "=" * max(3, 74 - len(title))


def build(say: Say) -> Any:
    # the sample's ids and chunking, so the labelled questions' gold refs hold
    kb = knowledge_base(id="lumen", communities=community_config(model=OfflineModel()))
    kb.add_path(sample_path())
    kb.extract_entities(progress=False)
    say(heading("1. The knowledge base and its entity graph"))
    say(repr(kb))
    counts = kb.edges.groupby("type").size().rename("edges").reset_index()
    say(table(counts))
    return kb


def expansion(kb: Any, say: Say) -> str:
    """Recall of retrieve alone vs retrieve + expand on the labelled questions, and one question in detail."""
    questions = load_sample_questions()
    recipes = {PLAIN: kb.recipe(steps=[retrieve(limit=5)]),
               EXPANDED: kb.recipe(steps=[retrieve(limit=3), expand_relations(limit=2)])}
    ev = evaluate(recipes, questions, k=(5,))
    say(heading(f"2. Graph expansion on {len(questions)} labelled questions"))
    summary = ev.summary()[["recall@5", "mrr"]].round(3).reset_index()
    say(table(summary))
    per = ev.to_frame().pivot(index="question_id", columns="recipe", values="recall@5")
    gain = (per[EXPANDED] - per[PLAIN]).reindex(questions["id"])
    wins, losses = int((gain > 0).sum()), int((gain < 0).sum())
    means = ev.summary()["recall@5"]
    verdict = "matches or beats" if means[EXPANDED] >= means[PLAIN] else "falls below"
    say(f"at equal budget, {EXPANDED} {verdict} {PLAIN}: Recall@5 {means[EXPANDED]:.3f} vs {means[PLAIN]:.3f}")
    say(f"expansion finds more gold on {wins} questions, less on {losses}")
    pick = questions.iloc[int(gain.to_numpy().argmax())]
    result = recipes[EXPANDED].retrieve_with_trace(pick["question"])
    gold = set(pick["gold"])
    say(f"\nquestion: {pick['question']!r}   (gold: {', '.join(sorted(gold))})")
    hits = result.hits.to_frame()
    filled = {x.ref for x in result.trace.step("expand-relations").details["filled"]}
    added = ["expand: graph" if pd.notna(d) else "expand: retrieve's next" if r in filled else "retrieve"
             for r, d in zip(hits["ref"], hits["distance"])]
    hits = hits.assign(gold=hits["ref"].isin(gold).map({True: "*", False: ""}), added=added)
    say(table(hits[["rank", "added", "ref", "gold"]]))
    view = ExpansionView(result, kb=kb)
    weight = result.trace.step("expand-relations").details["graph_weight"]
    rows = [{"added hit": x.ref, "seed": x.seed, "path": " -> ".join(x.edges),
             "reason": ", ".join(f"{ref} ({w:.2f})" for ref, w in x.reason.entities) if x.reason else "",
             "score": (f"relevance {x.reason.relevance:.3f} + {weight} x sqrt(graph {x.reason.graph:.3f})"
                       if x.reason else "")}
            for x in view.expansions]
    say("\nadded hits: seed -> path -> reason (entities on the path with their specificity)")
    say(table(pd.DataFrame(rows), width=48))
    return view.to_html()


def communities(kb: Any, say: Say) -> None:
    prepared = kb.communities.prepare(progress=False)
    frame = kb.communities.communities
    say(heading("3. Communities and their reports"))
    say(repr(prepared))
    shape = frame.groupby("level").size().rename("communities").reset_index()
    say(table(shape))


def global_searches(kb: Any, say: Say) -> str:
    model = OfflineModel()
    say(heading(f"4. Global search: {GLOBAL_QUESTION!r}"))
    rows, results = [], {}
    for scan in ("all", "adaptive"):
        recipe = kb.recipe(steps=[global_search(model=model, scan=scan, detail="detailed", limit=5)])
        result = recipe.retrieve_with_trace(GLOBAL_QUESTION)
        knowledge = result.trace.step("global-search").knowledge
        rows.append({"scan": scan, "coverage": knowledge.coverage,
                     "reports mapped": f"{knowledge.processed['reports']} of {knowledge.available['reports']}",
                     "model calls": len(knowledge.calls), "input chars": knowledge.input_chars,
                     "findings": len(result.hits),
                     "support": f"{knowledge.support['status']} ({knowledge.support['best'] or 0:.2f})"})
        results[scan] = result
    say(table(pd.DataFrame(rows)))
    base = {hit.content for hit in results["all"].hits}
    kept = len(base & {hit.content for hit in results["adaptive"].hits})
    say(f"adaptive keeps {kept} of scan-all's {len(base)} findings")
    findings = results["adaptive"].hits.to_frame()
    say("\nadaptive findings with the chunks they cite")
    say(table(findings[["rank", "content", "supports"]], width=52))
    return CoverageView(results["adaptive"], kb=kb).to_html()


def run_story(say: Say) -> list[tuple[str, str]]:
    """Run every step, printing through ``say``; return the (title, static HTML) sections of the report."""
    kb = build(say)
    expansion_html = expansion(kb, say)
    communities(kb, say)
    coverage_html = global_searches(kb, say)
    return [("Graph expansion: seed, path and reason of every added hit", expansion_html),
            (f"Global search coverage: {GLOBAL_QUESTION}", coverage_html)]
