"""Benchmark: retrieval on technical documentation -- plain ``retrieve(k)`` versus ``retrieve`` plus
``expand_relations`` at the same budget k, on hand-written questions with passage gold.

Corpora (one knowledge base each, built through the public API, then ``kb.extract_entities()`` with the
offline model):

* ``pyref``: CPython's language-reference topics (``pydoc_data.topics``, one source per topic,
  :func:`crux_nb.datasets.load_python_reference`); questions ``data/python_reference_questions.jsonl``
  (:func:`crux_nb.datasets.load_python_reference_questions`).
* ``cmake``: the reStructuredText help that ships inside the ``cmake`` wheel on PyPI (the ``dev`` extra):
  ``Help/command/*.rst`` (one file per CMake command) and ``Help/manual/*.rst`` (the manuals), one source
  per file (``command/add_library``, ``manual/cmake-buildsystem.7``), read as plain text (markup kept);
  questions ``bench/techdocs_cmake_questions.jsonl``. Skipped with a message when cmake is not installed.

Gold items are passages ``{"source_id", "phrase"}`` (:class:`crux_nb.evaluation.GoldPassage`): a hit matches
when it comes from that source and its whitespace-normalised text holds the phrase (or the phrase's first 40
characters), so the gold does not depend on the chunker. Scored with :func:`crux_nb.evaluate`.

Recipes come in budget pairs: each expanded recipe is compared with the plain recipe of the same budget
(``retrieve(3) + expand(2)`` with ``retrieve(5)`` at Recall@5, ``retrieve(5) + expand(5)`` with ``retrieve(10)``
at Recall@10). For an expanded recipe the table also shows the mean number of hits expansion added, the share
of them whose path used an entity edge, only ``sequence`` edges, or ``hierarchy`` edges (structural, no
entity), the share of added hits that matched new gold, and the questions that got fewer hits than the budget.

Variants (the lead's hook): ``register_variant("label", **expand_kwargs)`` from Python, or
``--variant "label: key=value, key=value"`` on the command line, adds an expanded recipe at both budgets with
those ``expand_relations`` parameters; every registered recipe runs in the same table.

    .venv/bin/python -m bench.techdocs                       # every corpus, every question
    .venv/bin/python -m bench.techdocs --small               # pyref, its first 16 questions (seconds)
    .venv/bin/python -m bench.techdocs --variant "d2: depth=2"
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from crux_nb import evaluate, knowledge_base  # noqa: E402
from crux_nb.datasets import load_python_reference, load_python_reference_questions, read_questions  # noqa: E402
from crux_nb.retrieval import expand_relations, retrieve  # noqa: E402

from bench._common import BENCH_DIR, OUT_DIR, load_average, machine_info, markdown_table, percentile, write_summary, write_text  # noqa: E402

TARGET_POINTS = 3.0  # issue 31: an expanded recipe beats plain retrieval at its budget by this many points
SMALL_QUESTIONS = 16
STRUCTURAL = ("sequence", "hierarchy")  # the knowledge base's own structural edge types; every other type is an entity edge
COLUMNS = ["corpus", "recipe", "k", "R@k", "gain (pts)", "MRR", "p50 ms", "added/q", "via entity", "via sequence",
           "via hierarchy", "useful", "short"]


@dataclass(frozen=True)
class Recipe:
    """One recipe of the table: fresh steps, its budget k, and the plain recipe it is compared with (None: a baseline).

    ``tail_from`` (plain recipes): the rank after which its hits stand where an expanded recipe of the same budget
    puts its added hits (3 for ``retrieve(5)`` against ``retrieve(3) + expand(2)``); their share of new gold is
    the yield expansion has to beat.
    """

    steps: Callable[[], list]
    k: int
    baseline: str | None = None
    tail_from: int | None = None


@dataclass(frozen=True)
class Corpus:
    """A corpus of the benchmark: its knowledge base, its questions, and why it cannot run here (None: it can)."""

    build: Callable[[], Any]
    questions: Callable[[], pd.DataFrame]
    missing: Callable[[], str | None] = lambda: None


BASE_RECIPES: dict[str, Recipe] = {
    "retrieve(5)": Recipe(lambda: [retrieve(limit=5)], 5, tail_from=3),
    "retrieve(3) + expand(2)": Recipe(lambda: [retrieve(limit=3), expand_relations(limit=2)], 5, "retrieve(5)"),
    "retrieve(10)": Recipe(lambda: [retrieve(limit=10)], 10, tail_from=5),
    "retrieve(5) + expand(5)": Recipe(lambda: [retrieve(limit=5), expand_relations(limit=5)], 10, "retrieve(10)"),
}
VARIANTS: dict[str, Recipe] = {}  # registered expansion variants, run after BASE_RECIPES

CMAKE_FOLDERS = ("command", "manual")


def cmake_help() -> Path | None:
    """The ``Help`` folder of an installed CMake: the PyPI wheel's (``cmake.CMAKE_DATA``), else this prefix's."""
    roots = []
    try:
        import cmake  # the PyPI wheel: a Python package around the binaries and their data

        roots.append(Path(cmake.CMAKE_DATA) / "share")
    except (ImportError, AttributeError):
        pass
    roots.append(Path(sys.prefix) / "share")  # conda-forge's cmake installs the same tree under the prefix
    for root in roots:
        found = sorted(root.glob("cmake-*/Help"))
        if found and (found[-1] / "command").is_dir():
            return found[-1]
    return None


def load_cmake_help():
    """A knowledge base of CMake's command and manual pages, one source per ``.rst`` file, read as plain text."""
    root = cmake_help()
    files = [path for folder in CMAKE_FOLDERS for path in sorted((root / folder).glob("*.rst"))]
    frame = pd.DataFrame({"id": [f"{path.parent.name}/{path.name.removesuffix('.rst')}" for path in files],
                          "text": [path.read_text(encoding="utf-8") for path in files]})
    kb = knowledge_base(id="cmake")
    kb.add_frame(frame, format="text")
    return kb


CORPORA: dict[str, Corpus] = {
    "pyref": Corpus(load_python_reference, load_python_reference_questions),
    "cmake": Corpus(load_cmake_help, lambda: read_questions(path=BENCH_DIR / "techdocs_cmake_questions.jsonl"),
                    lambda: None if cmake_help() else "CMake's help files were not found (pip install cmake, "
                    "or the dev extra)"),
}


def register_variant(label: str, **expand_kwargs: Any) -> list[str]:
    """Add ``retrieve(3) + expand(2, **kw)`` and ``retrieve(5) + expand(5, **kw)`` under ``label``; returns their names."""
    names = []
    for first, added, k, base in ((3, 2, 5, "retrieve(5)"), (5, 5, 10, "retrieve(10)")):
        name = f"retrieve({first}) + expand({added}) {label}"
        expand_relations(limit=added, **expand_kwargs)  # a bad parameter fails here, before any corpus is built
        VARIANTS[name] = Recipe(lambda a=added, kw=dict(expand_kwargs), f=first: [retrieve(limit=f),
                                                                                   expand_relations(limit=a, **kw)],
                                k, base)
        names.append(name)
    return names


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``"label: depth=2, ranking='upstream'"`` -> ``("label", {"depth": 2, "ranking": "upstream"})``."""
    label, _, params = text.partition(":")
    call = ast.parse(f"f({params})", mode="eval").body
    if not label.strip() or not isinstance(call, ast.Call) or call.args:
        raise SystemExit(f"--variant wants 'label: key=value, ...', got {text!r}")
    return label.strip(), {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}


def recipes(kb) -> dict[str, Any]:
    """Every recipe of the table (base, then variants) bound to ``kb``, by name."""
    return {name: kb.recipe(steps=spec.steps(), id=f"techdocs-{i}")
            for i, (name, spec) in enumerate({**BASE_RECIPES, **VARIANTS}.items())}


def _path_class(edges: tuple[str, ...]) -> str:
    if any(e not in STRUCTURAL for e in edges):
        return "entity"
    return "sequence" if all(e == "sequence" for e in edges) else "hierarchy"


def _added(run) -> list[tuple[str, bool]]:
    """(path class, matched new gold) per hit the expand step added, in hit order."""
    step = next((s for s in getattr(run.trace, "steps", ()) if isinstance(s.details, Mapping)
                 and "expansions" in s.details), None)
    if step is None:
        return []
    classes = {x.ref: _path_class(tuple(x.edges)) for x in step.details["expansions"]}
    return [(classes[str(h.ref)], rel) for h, rel in zip(run.hits, run.relevant) if str(h.ref) in classes]


def _useful(spec: Recipe, runs, added: list[tuple[str, bool]]) -> float:
    """The share of new gold among an expanded recipe's added hits, or among a plain recipe's hits past ``tail_from``."""
    if spec.baseline is not None:
        return sum(a[1] for a in added) / len(added) if added else float("nan")
    if spec.tail_from is None:
        return float("nan")
    tail = [rel for r in runs for rel in r.relevant[spec.tail_from:spec.k]]
    return sum(tail) / len(tail) if tail else float("nan")


def corpus_rows(name: str, kb, questions: pd.DataFrame) -> tuple[list[list[str]], dict[str, dict], list[list[str]]]:
    """The table rows of one corpus, the numbers behind them (per recipe), and the rows of R@k per question kind."""
    bound = recipes(kb)
    for recipe in bound.values():  # warm-up: indexes are built outside the timed runs
        recipe.retrieve(questions["question"].iloc[0])
    ev = evaluate(bound, questions, k=sorted({spec.k for spec in {**BASE_RECIPES, **VARIANTS}.values()}))
    specs = {**BASE_RECIPES, **VARIANTS}
    numbers: dict[str, dict[str, float]] = {}
    for recipe in bound:
        spec, runs = specs[recipe], [ev.run(recipe, q) for q in ev.question_ids]
        recall = sum(r.metrics[f"recall@{spec.k}"] for r in runs) / len(runs)
        added = [a for r in runs for a in _added(r)]
        numbers[recipe] = {"k": spec.k, "recall": recall, "mrr": sum(r.metrics["mrr"] for r in runs) / len(runs),
                           "p50": percentile(sorted(r.latency_ms for r in runs), 50),
                           "short": sum(len(r.hits) < spec.k for r in runs), "added": len(added) / len(runs),
                           **{f"via {c}": (sum(a[0] == c for a in added) / len(added) if added else float("nan"))
                              for c in ("entity", "sequence", "hierarchy")},
                           "useful": _useful(spec, runs, added)}
    kinds = dict(zip(questions["id"].astype(str), questions["kind"])) if "kind" in questions else {}
    kind_rows = []
    for kind in sorted(set(kinds.values())):
        ids = [q for q in ev.question_ids if kinds.get(q) == kind]
        kind_rows.append([name, kind, str(len(ids))] + [
            f"{sum(ev.run(r, q).metrics[f'recall@{specs[r].k}'] for q in ids) / len(ids):.3f}" for r in bound])
    rows = []
    for recipe, n in numbers.items():
        base = specs[recipe].baseline
        gain = "" if base is None else f"{(n['recall'] - numbers[base]['recall']) * 100:+.1f}"
        expanded = base is not None
        share = (lambda v: f"{v:.2f}" if expanded and v == v else "")  # noqa: E731 (NaN: no hit was added)
        rows.append([name, recipe, str(n["k"]), f"{n['recall']:.3f}", gain, f"{n['mrr']:.3f}", f"{n['p50']:.1f}",
                     f"{n['added']:.2f}" if expanded else "", share(n["via entity"]), share(n["via sequence"]),
                     share(n["via hierarchy"]), "" if n["useful"] != n["useful"] else f"{n['useful']:.3f}",
                     f"{int(n['short'])}/{len(questions)}"])
    return rows, numbers, kind_rows


def run(small: bool = False, out_path: Path | None = None, corpora: tuple[str, ...] | None = None) -> str:
    rows, builds, summary, skipped, kind_rows = [], [], [], [], []
    for name in corpora or (("pyref",) if small else tuple(CORPORA)):
        corpus = CORPORA[name]
        reason = corpus.missing()
        if reason:
            skipped.append(f"- `{name}` skipped: {reason}")
            print(f"techdocs: {name} skipped: {reason}", file=sys.stderr)
            continue
        started = time.perf_counter()
        kb = corpus.build()
        kb.extract_entities(progress=False)
        seconds = time.perf_counter() - started
        questions = corpus.questions()
        if small:
            questions = questions.iloc[:SMALL_QUESTIONS]
        s = kb.summary()
        builds.append([name, str(s["documents"]), str(s["chunks"]), str(s["entities"]), str(s["edges"]),
                       str(len(questions)), f"{seconds:.1f}"])
        corpus_table, numbers, kind_table = corpus_rows(name, kb, questions)
        rows += corpus_table
        kind_rows += kind_table
        for recipe, n in numbers.items():
            base = {**BASE_RECIPES, **VARIANTS}[recipe].baseline
            if base is None:
                continue
            gain = (n["recall"] - numbers[base]["recall"]) * 100
            summary += [
                {"measure": f"{name}: Recall@{n['k']} gain of {recipe} over {base} (points)", "ours": gain,
                 "target": f"ours >= {TARGET_POINTS:g}", "verdict": "pass" if gain >= TARGET_POINTS else "miss"},
                {"measure": f"{name}: Recall@{n['k']}, {recipe}", "ours": n["recall"], "baseline": numbers[base]["recall"],
                 "baseline_name": f"{base} (same run)"},
                {"measure": f"{name}: share of added hits via sequence edges only, {recipe}", "ours": n["via sequence"]}]
        print(f"  {name}: done", file=sys.stderr, flush=True)
    info = machine_info(["pandas", "numpy", "bm25s"])
    text = "\n".join([
        f"# Technical documentation retrieval ({'small' if small else 'full'})", "",
        "R@k = share of a question's gold passages among the first k hits (k = the recipe's budget), averaged over "
        "questions; gain = R@k minus the plain recipe's at the same k, in points; MRR over all hits; p50 = median "
        "latency per query. For expanded recipes: added/q = hits the expand step added per question; via entity / "
        "sequence / hierarchy = share of added hits whose path used an entity edge / only sequence edges / "
        "hierarchy (structural, no entity) edges; useful = share of the added hits (expanded) or of the hits past rank "
        "3 / 5 (plain: the places expansion fills) that matched new gold; "
        "short = questions with fewer hits than k.", "",
        markdown_table(COLUMNS, rows), "",
        *([*skipped, ""] if skipped else []),
        "## R@k by question kind", "",
        markdown_table(["corpus", "kind", "questions", *(f"{r} R@{s.k}" for r, s in {**BASE_RECIPES, **VARIANTS}.items())],
                       kind_rows), "",
        "## Knowledge bases", "",
        markdown_table(["corpus", "documents", "chunks", "entities", "edges", "questions", "build s"], builds),
        "", f"Load average at end: {load_average()}; python {info.get('python')}.", ""])
    path = write_text(out_path or OUT_DIR / ("techdocs_small.md" if small else "techdocs.md"), text)
    if summary:
        write_summary(path, "techdocs", summary)
    print(text)
    print(f"written to {path}", file=sys.stderr)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help=f"pyref only, its first {SMALL_QUESTIONS} questions")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--corpora", nargs="+", choices=list(CORPORA), help="only these corpora")
    parser.add_argument("--variant", action="append", default=[], metavar="'LABEL: key=value, ...'",
                        help="an expand_relations variant at both budgets (repeatable)")
    args = parser.parse_args(argv)
    for text in args.variant:
        label, params = parse_variant(text)
        register_variant(label, **params)
    run(args.small, args.out, tuple(args.corpora) if args.corpora else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
