"""Benchmark: retrieval quality of ``retrieve`` alone versus ``retrieve`` + ``expand_relations`` on a real book.

Builds one knowledge base from Charles Dickens' *A Christmas Carol* (the shared
data set, ``../shared/data/christmas-carol/a-christmas-carol.txt``) with the
public API -- ``add_path`` (default chunk size 1,200) and ``extract_entities``
with the offline model -- then asks the questions of ``bench/carol_questions.csv``
through several recipes and reports Recall@5, Recall@10 and the mean latency
per query as a Markdown table (printed, and written to
``bench/out/expand_quality.md``), followed by per-question rows for the two
headline configurations.

Questions (``id,question,gold``): the id's letter is the question kind -- ``d``
direct lookup (shares words with the answer), ``c`` character question (needs
connecting passages), ``m`` multi-hop (the answer passage names an entity of the
question but shares few other words). ``gold`` holds one or more verbatim
snippets (8-20 words, separated by `` || ``), each occurring exactly once in the
whitespace-normalised book; the script checks this before it runs.

Gold rule: the book and every chunk are whitespace-normalised and each chunk is
located in the book (chunks are consecutive, non-overlapping pieces of it). A
snippet's gold chunks are the chunks whose span overlaps the snippet's span:
one chunk when the snippet lies inside a chunk, two when it straddles a chunk
boundary, and then retrieving *either* chunk counts as finding it. A question's
Recall@k is the share of its snippets found in the top k hits of the recipe's
result; the table macro-averages over questions.

Fair comparison: ``expand_relations`` is additive (the incoming hits stay first,
expansions are appended), so every expansion configuration spends the same
budget of 10 hits as the baseline: ``retrieve(limit=R) + expand_relations(limit=10-R)``
is compared with ``retrieve(limit=10)``. Recall@5 of a ``retrieve(5) + ...``
configuration therefore equals the baseline's by construction.

Headline: ``retrieve(limit=10)`` versus ``retrieve(limit=5) +
expand_relations(limit=5)`` with every other default (all edge types, depth 1,
seeds ``hits`` and ``query``, ``ranking="relevance"``), at an even 5 + 5 split.
The target is that the expansion does not lower Recall@10. (Before the relevance
ranking the headline was upstream's ``expand_relations(types=["mentions",
"related"])``; it stays in the table as the old default.)

Usage::

    .venv/bin/python bench/expand_quality.py            # 37 questions x 18 configurations (a few minutes:
                                                        # almost all of it in expand_relations on the entity graph)
    .venv/bin/python bench/expand_quality.py --small    # first 6 questions, the 2 headline configurations (seconds)

Exit status: 0 on success (whether or not the target is met), 1 when the
question file is invalid, 2 when the shared data folder is missing.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import crux_nb  # noqa: E402
from crux_nb.retrieval import expand_relations, retrieve  # noqa: E402

from bench._common import (OUT_DIR, Phases, fmt_num, load_average, machine_info, markdown_table,  # noqa: E402
                     peak_rss_mb, quiet_gc, write_summary, write_text)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BOOK_PATH = SHARED_DATA / "christmas-carol" / "a-christmas-carol.txt"
QUESTIONS_PATH = Path(__file__).resolve().parent / "carol_questions.csv"
SEPARATOR = " || "
MIN_WORDS, MAX_WORDS = 8, 20
BUDGET = 10
KINDS = {"d": "direct", "c": "character", "m": "multi-hop"}
SMALL_QUESTIONS = 6
COLUMNS = ("config", "Recall@5", "Recall@10", "mean latency (ms)")


# ----------------------------------------------------------------- questions
class QuestionError(ValueError):
    """The question file is malformed or a gold snippet does not match the book."""


def normalise(text: str) -> str:
    """Collapse every run of whitespace to one space (and trim)."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    gold: tuple[str, ...]

    @property
    def kind(self) -> str:
        return KINDS.get(self.id[:1], "other")


def load_questions(path: Path) -> list[Question]:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != ["id", "question", "gold"]:
            raise QuestionError(f"{path}: columns {reader.fieldnames} != ['id', 'question', 'gold']")
        return [Question(row["id"].strip(), row["question"].strip(),
                         tuple(normalise(s) for s in row["gold"].split(SEPARATOR) if s.strip()))
                for row in reader]


def question_problems(questions: list[Question], book: str) -> list[str]:
    """Everything wrong with the questions against the normalised book text (empty when valid)."""
    problems = []
    ids = Counter(q.id for q in questions)
    problems += [f"duplicate id {i!r}" for i, n in ids.items() if n > 1]
    for q in questions:
        if not q.question:
            problems.append(f"{q.id}: empty question")
        if not q.gold:
            problems.append(f"{q.id}: no gold snippet")
        for snippet in q.gold:
            words = len(snippet.split())
            if not MIN_WORDS <= words <= MAX_WORDS:
                problems.append(f"{q.id}: snippet has {words} words (want {MIN_WORDS}-{MAX_WORDS}): {snippet!r}")
            count = book.count(snippet)
            if count != 1:
                problems.append(f"{q.id}: snippet occurs {count} times in the book (want exactly 1): {snippet!r}")
    return problems


# ---------------------------------------------------------------- gold chunks
def chunk_spans(book: str, contents: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each normalised chunk in the normalised book; chunks are consecutive pieces of it."""
    spans, pos = [], 0
    for content in contents:
        text = normalise(content)
        start = book.find(text, pos)
        if start < 0:
            raise AssertionError(f"chunk text not found in the book after offset {pos}: {text[:80]!r}")
        spans.append((start, start + len(text)))
        pos = start + len(text)
    return spans


def gold_chunks(book: str, refs: list[str], spans: list[tuple[int, int]], snippet: str) -> frozenset[str]:
    """The chunks whose span overlaps the snippet's span (one, or two when it straddles a boundary)."""
    start = book.find(snippet)
    end = start + len(snippet)
    hit = frozenset(ref for ref, (a, b) in zip(refs, spans) if a < end and start < b)
    if not hit:
        raise AssertionError(f"snippet lies in no chunk: {snippet!r}")
    return hit


# -------------------------------------------------------------- configurations
@dataclass(frozen=True)
class Config:
    name: str
    retrieve_limit: int
    expand: dict[str, Any] | None = None
    headline: bool = False

    def steps(self) -> list:
        steps = [retrieve(limit=self.retrieve_limit)]
        if self.expand is not None:
            steps.append(expand_relations(**self.expand))
        return steps


def _x(types, depth, limit, seeds=("hits", "query"), ranking="relevance", entity_hops=None) -> dict[str, Any]:
    return {"types": types, "depth": depth, "limit": limit, "seeds": seeds, "ranking": ranking,
            "entity_hops": entity_hops}


MR = ["mentions", "related"]
BASELINE = Config("retrieve(10)", 10, headline=True)
DEFAULT = Config("retrieve(5) + expand(5) [default]", 5, {"limit": 5}, headline=True)
UPSTREAM = "; upstream"
CONFIGS = [
    BASELINE,
    DEFAULT,
    Config("retrieve(5) + expand(mentions,related; d1; 5; upstream) [old default]", 5, _x(MR, 1, 5, ranking="upstream")),
    Config("retrieve(5) + expand(all types; d1; 5; upstream)", 5, _x(None, 1, 5, ranking="upstream")),
    Config("retrieve(5) + expand(mentions,related; d1; 5)", 5, _x(MR, 1, 5)),
    Config("retrieve(5) + expand(mentions; d1; 5)", 5, _x(["mentions"], 1, 5)),
    Config("retrieve(5) + expand(sequence; d1; 5)", 5, _x(["sequence"], 1, 5)),
    Config("retrieve(5) + expand(all types; d2; 5)", 5, _x(None, 2, 5)),
    Config("retrieve(5) + expand(all types; d1; 5; seeds=hits)", 5, _x(None, 1, 5, ("hits",))),
    Config("retrieve(5) + expand(all types; d1; 5; entity_hops=free)", 5, _x(None, 1, 5, entity_hops="free")),
    Config("retrieve(3) + expand(all types; d1; 7)", 3, _x(None, 1, 7)),
    Config("retrieve(7) + expand(all types; d1; 3)", 7, _x(None, 1, 3)),
    Config("retrieve(3) (reference, 3 hits)", 3),
    Config("retrieve(5) (reference, 5 hits)", 5),
    Config("retrieve(7) (reference, 7 hits)", 7),
]


# ------------------------------------------------------------------ evaluation
@dataclass
class Outcome:
    """One configuration's results over the questions."""

    config: Config
    refs: dict[str, list[str]] = field(default_factory=dict)      # question id -> ranked chunk refs
    recall5: dict[str, float] = field(default_factory=dict)
    recall10: dict[str, float] = field(default_factory=dict)
    found10: dict[str, list[int | None]] = field(default_factory=dict)  # per snippet: 1-based rank or None
    latency_ms: float = float("nan")

    def mean(self, metric: str, ids: list[str] | None = None) -> float:
        values = getattr(self, metric)
        ids = list(values) if ids is None else [i for i in ids if i in values]
        return sum(values[i] for i in ids) / len(ids) if ids else float("nan")


def first_rank(refs: list[str], gold: frozenset[str]) -> int | None:
    return next((i for i, ref in enumerate(refs, start=1) if ref in gold), None)


def outcome(config: Config, refs: dict[str, list[str]], questions: list[Question],
            gold: dict[str, list[frozenset[str]]], samples_ns: list[int]) -> Outcome:
    """Score one configuration's ranked refs per question."""
    out = Outcome(config, latency_ms=sum(samples_ns) / len(samples_ns) / 1e6)
    for q in questions:
        ranked = refs[q.id]
        ranks = [first_rank(ranked, g) for g in gold[q.id]]
        out.refs[q.id] = ranked
        out.found10[q.id] = ranks
        out.recall5[q.id] = sum(r is not None and r <= 5 for r in ranks) / len(ranks)
        out.recall10[q.id] = sum(r is not None and r <= 10 for r in ranks) / len(ranks)
    return out


def run_configs(kb: Any, configs: list[Config], questions: list[Question], *, repeats: int
                ) -> tuple[dict[str, dict[str, list[str]]], dict[str, list[int]]]:
    """Ask every question through every configuration, timing each call.

    One untimed warm-up query per recipe first builds what all recipes share (the
    BM25 index, the graph reader's indexes, the entity-name index). Then each
    pass asks every question of every recipe, starting from a rotating recipe
    so background load drifting over the run affects every configuration alike.
    The first pass's results are scored; later passes (``repeats`` > 1) only add
    timing samples and must return the same hits.
    """
    recipes = {c.name: kb.recipe(steps=c.steps()) for c in configs}
    for recipe in recipes.values():
        recipe.retrieve(questions[0].question)
    refs: dict[str, dict[str, list[str]]] = {c.name: {} for c in configs}
    samples: dict[str, list[int]] = {c.name: [] for c in configs}
    clock = time.perf_counter_ns
    with quiet_gc():
        for p in range(repeats):
            for i, q in enumerate(questions):
                k = (i + p) % len(configs)
                for config in configs[k:] + configs[:k]:
                    t0 = clock()
                    hits = recipes[config.name].retrieve(q.question)
                    samples[config.name].append(clock() - t0)
                    ranked = [str(hit.ref) for hit in hits]
                    if p == 0:
                        if len(ranked) > BUDGET or len(set(ranked)) != len(ranked):
                            raise AssertionError(f"{config.name} returned {ranked} for {q.id}: more than "
                                                 f"{BUDGET} hits or a chunk twice")
                        refs[config.name][q.id] = ranked
                    elif ranked != refs[config.name][q.id]:
                        raise AssertionError(f"{config.name} is not deterministic for {q.id}")
    return refs, samples


# ---------------------------------------------------------------------- report
def f3(x: float) -> str:
    return f"{x:.3f}"


def results_table(outcomes: list[Outcome]) -> str:
    rows = [[o.config.name, f3(o.mean("recall5")), f3(o.mean("recall10")), fmt_num(o.latency_ms)] for o in outcomes]
    return markdown_table(COLUMNS, rows)


def kinds_table(outcomes: list[Outcome], questions: list[Question]) -> str:
    kinds = [k for k in KINDS.values() if any(q.kind == k for q in questions)]
    by_kind = {k: [q.id for q in questions if q.kind == k] for k in kinds}
    headers = ["config"] + [f"R@10 {k} ({len(by_kind[k])})" for k in kinds] + ["hits returned (mean)"]
    rows = []
    for o in outcomes:
        n_hits = sum(len(r) for r in o.refs.values()) / max(1, len(o.refs))
        rows.append([o.config.name] + [f3(o.mean("recall10", by_kind[k])) for k in kinds] + [f"{n_hits:.1f}"])
    return markdown_table(headers, rows)


def _ranks(ranks: list[int | None]) -> str:
    return " ".join("-" if r is None else str(r) for r in ranks)


def per_question_table(base: Outcome, default: Outcome, best: Outcome, questions: list[Question]) -> str:
    headers = ["id", "kind", "question", "snippets", "base R@5", "base R@10", "default R@5", "default R@10",
               "delta R@10", "base ranks", "default ranks", "best expanded ranks"]
    rows = []
    for q in questions:
        delta = default.recall10[q.id] - base.recall10[q.id]
        rows.append([q.id, q.kind, q.question, len(q.gold), f3(base.recall5[q.id]), f3(base.recall10[q.id]),
                     f3(default.recall5[q.id]), f3(default.recall10[q.id]), f"{delta:+.3f}",
                     _ranks(base.found10[q.id]), _ranks(default.found10[q.id]), _ranks(best.found10[q.id])])
    return markdown_table(headers, rows, align=["l", "l", "l"] + ["r"] * 6 + ["l", "l", "l"])


def expansion_notes(outcomes: list[Outcome], base: Outcome, questions: list[Question]) -> list[str]:
    """Per expanded configuration: questions gained/lost at @10 versus the baseline, and the most added chunks."""
    lines = []
    for o in outcomes:
        if o.config.expand is None:
            continue
        gained = [q.id for q in questions if o.recall10[q.id] > base.recall10[q.id]]
        lost = [q.id for q in questions if o.recall10[q.id] < base.recall10[q.id]]
        added = Counter(ref for q in questions for ref in o.refs[q.id][o.config.retrieve_limit:])
        n_added = sum(added.values())
        top = ", ".join(f"{ref.rsplit(':', 1)[-1]} x{n}" for ref, n in added.most_common(3)) or "-"
        lines.append(f"- `{o.config.name}`: better than the baseline on {len(gained)} "
                     f"({', '.join(gained) or '-'}), worse on {len(lost)} ({', '.join(lost) or '-'}); "
                     f"{n_added} expansion hits over {len(questions)} questions, most added chunks: {top}.")
    return lines


def summary_rows(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    """The headline as summary rows: the pre-declared expansion against ``retrieve(10)`` (Recall@10 is the
    target: not lowered; Recall@5 and latency for information)."""
    base = next(o for o in outcomes if o.config is BASELINE)
    default = next(o for o in outcomes if o.config is DEFAULT)
    lowered = default.mean("recall10") < base.mean("recall10") - 1e-12
    name = f"{BASELINE.name} (same run)"
    return [
        {"measure": f"Recall@10, {DEFAULT.name}", "ours": default.mean("recall10"), "baseline": base.mean("recall10"),
         "baseline_name": name, "target": "ratio >= 1 (expansion does not lower Recall@10)",
         "verdict": "miss" if lowered else "pass"},
        {"measure": f"Recall@5, {DEFAULT.name}", "ours": default.mean("recall5"), "baseline": base.mean("recall5"),
         "baseline_name": name},
        {"measure": f"mean latency per query (ms), {DEFAULT.name}", "ours": default.latency_ms,
         "baseline": base.latency_ms, "baseline_name": name},
    ]


def build_report(outcomes: list[Outcome], questions: list[Question], *, label: str, kb_summary: str,
                 straddling: int, n_snippets: int, phases: Phases, load_start: str, total_s: float,
                 repeats: int) -> str:
    base = next(o for o in outcomes if o.config is BASELINE)
    default = next(o for o in outcomes if o.config is DEFAULT)
    lowered = default.mean("recall10") < base.mean("recall10") - 1e-12
    expanded = [o for o in outcomes if o.config.expand is not None]
    worse = [o.config.name for o in expanded if o.mean("recall10") < base.mean("recall10") - 1e-12]
    best = max(expanded, key=lambda o: (o.mean("recall10"), o.mean("recall5")))
    verdict = ("MISS: the pre-declared default expansion lowers Recall@10" if lowered
               else "PASS: the pre-declared default expansion does not lower Recall@10")
    build_rows = [[name, f"{sec:,.2f}", f"{phases.peak_mb[name]:,.0f}"] for name, sec in phases.seconds.items()]
    info = machine_info(["pandas", "numpy", "bm25s"])
    info["crux_nb"] = crux_nb.__version__
    info["load average (1/5/15 min) at start"] = load_start
    info["load average (1/5/15 min) at end"] = load_average()
    counts = Counter(q.kind for q in questions)
    return "\n".join([
        f"# expand_relations quality benchmark ({label})",
        "",
        f"Corpus: *A Christmas Carol* ({BOOK_PATH.name}), {kb_summary}; entities and relations by the offline "
        f"model (`kb.extract_entities()`). Questions: {len(questions)} from {QUESTIONS_PATH.name} "
        f"({', '.join(f'{n} {k}' for k, n in counts.items())}), {n_snippets} gold snippets, "
        f"{straddling} of them straddling two chunks (either chunk counts).",
        "Recall@k: share of a question's gold snippets whose chunk is among the top k hits, macro-averaged over "
        "questions. Every configuration returns at most 10 hits: retrieve(R) + expand(10-R). Latency: mean of "
        f"`recipe.retrieve(question)` over {repeats} timed pass(es) (configurations interleaved per question, "
        "rotating order) after one warm-up query per recipe.",
        f"Headline (pre-declared): `{BASELINE.name}` versus `{DEFAULT.name}` = "
        "`retrieve(limit=5) + expand_relations(limit=5)` with every other default (all edge types, depth 1, seeds hits+query, "
        "ranking='relevance'). Configurations without `upstream` use the relevance ranking.",
        "",
        "## Results",
        "",
        results_table(outcomes),
        "",
        "## Headline",
        "",
        f"- `{BASELINE.name}`: Recall@5 {f3(base.mean('recall5'))}, Recall@10 {f3(base.mean('recall10'))}, "
        f"{fmt_num(base.latency_ms)} ms/query",
        f"- `{DEFAULT.name}`: Recall@5 {f3(default.mean('recall5'))}, Recall@10 {f3(default.mean('recall10'))}, "
        f"{fmt_num(default.latency_ms)} ms/query",
        f"- Expansion lowers Recall@10: {'yes' if lowered else 'no'} "
        f"(delta {default.mean('recall10') - base.mean('recall10'):+.3f}). Verdict: {verdict}.",
        f"- Expanded configurations with a lower Recall@10 than the baseline: {len(worse)} of {len(expanded)}.",
        f"- Best expanded configuration (not pre-declared, for information): `{best.config.name}` with "
        f"Recall@10 {f3(best.mean('recall10'))}.",
        "",
        "## Recall@10 by question kind",
        "",
        kinds_table(outcomes, questions),
        "",
        "## Where expansion gains and loses (Recall@10 versus the baseline)",
        "",
        *expansion_notes(outcomes, base, questions),
        "",
        "## Per question (headline configurations)",
        "",
        "Ranks: the 1-based rank of the first gold chunk of each snippet, in snippet order (`-` = not in the top 10). "
        f"Base = `{BASELINE.name}`, default = `{DEFAULT.name}`, best expanded = `{best.config.name}` "
        "(the expanded configuration with the highest Recall@10 in this run).",
        "",
        per_question_table(base, default, best, questions),
        "",
        "## Build and run",
        "",
        markdown_table(["phase", "seconds", "peak RSS after (MiB)"], build_rows),
        "",
        f"Whole run: {total_s:,.1f} s; peak RSS {peak_rss_mb():,.0f} MiB.",
        "",
        "## Machine",
        "",
        markdown_table(["key", "value"], [[k, v] for k, v in info.items()], align=["l", "l"]),
        "",
    ])


# ------------------------------------------------------------------------ main
def run(*, small: bool, out_path: Path, repeats: int) -> str:
    started = time.perf_counter()
    load_start = load_average()
    phases = Phases()
    book_raw = BOOK_PATH.read_text(encoding="utf-8")
    book = normalise(book_raw)
    questions = load_questions(QUESTIONS_PATH)
    problems = question_problems(questions, book)
    if problems:
        raise QuestionError("invalid questions:\n  " + "\n  ".join(problems))
    configs = [BASELINE, DEFAULT] if small else CONFIGS
    if small:
        questions = questions[:SMALL_QUESTIONS]

    with phases("kb.add_path (chunking)"):
        kb = crux_nb.knowledge_base(id="carol")
        kb.add_path(BOOK_PATH)
    with phases("kb.extract_entities (offline model)"):
        extraction = kb.extract_entities(progress=False)
    chunks = kb.chunks.sort_values("ordinal", kind="stable")
    refs = chunks["ref"].tolist()
    spans = chunk_spans(book, chunks["content"].tolist())
    gold = {q.id: [gold_chunks(book, refs, spans, s) for s in q.gold] for q in questions}
    n_snippets = sum(len(g) for g in gold.values())
    straddling = sum(len(c) > 1 for g in gold.values() for c in g)

    with phases(f"ask: {repeats} pass(es) x {len(configs)} configurations x {len(questions)} questions"):
        refs_by_config, samples = run_configs(kb, configs, questions, repeats=repeats)
    outcomes = [outcome(c, refs_by_config[c.name], questions, gold, samples[c.name]) for c in configs]

    s = kb.summary()
    kb_summary = (f"{s['chunks']} chunks (chunk_size {kb.chunk_size}), {s['entities']} entities, "
                  f"{extraction.mentions} mentions + {extraction.related} related edges")
    text = build_report(outcomes, questions, label="small" if small else "full", kb_summary=kb_summary,
                        straddling=straddling, n_snippets=n_snippets, phases=phases, load_start=load_start,
                        total_s=time.perf_counter() - started, repeats=repeats)
    write_text(out_path, text)
    write_summary(out_path, "expand_quality", summary_rows(outcomes))
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true",
                        help=f"first {SMALL_QUESTIONS} questions and the 2 headline configurations")
    parser.add_argument("--repeats", type=int, help="timed passes over all questions (default 1; later passes "
                        "must return the same hits)")
    parser.add_argument("--out", type=Path, help="Markdown output (default bench/out/expand_quality[_small].md)")
    args = parser.parse_args(argv)
    if not SHARED_DATA.is_dir() or not BOOK_PATH.is_file():
        missing = SHARED_DATA if not SHARED_DATA.is_dir() else BOOK_PATH
        print(f"expand_quality: shared data not found at {missing}; this benchmark needs "
              f"../shared/data/christmas-carol/a-christmas-carol.txt next to the project folder.", file=sys.stderr)
        return 2
    repeats = args.repeats or 1
    out = args.out or OUT_DIR / ("expand_quality_small.md" if args.small else "expand_quality.md")
    try:
        text = run(small=args.small, out_path=out, repeats=repeats)
    except QuestionError as exc:
        print(f"expand_quality: {exc}", file=sys.stderr)
        return 1
    print(text)
    print(f"written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
