"""``crux_nb.evaluate``: run recipes over labelled questions and compare them per question.

An :class:`Evaluation` keeps every run's hits and trace, so the per-question
frame, the summary, paired comparisons, plots and the drill-down view all read
the same runs. Latencies are measured but never shown in a repr (notebook
outputs stay deterministic).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import NotFoundError, ParameterError
from ..schema import require_columns
from .compare import Comparison, paired_comparison
from .metrics import Gold, GoldPassage, as_gold, hit_matches, metric_names, question_metrics

__all__ = ["Evaluation", "Run", "evaluate"]


@dataclass(frozen=True)
class Run:
    """One recipe on one question: its hits, trace, and which hits matched new gold items.

    Examples
    --------
    >>> import crux_nb
    >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
    >>> ev = crux_nb.evaluate({"top1": kb.recipe(steps=[crux_nb.retrieve(limit=1)]), "bm25": kb.recipe()}, qs)
    >>> run = ev.run("bm25", "q002")
    >>> run, run.relevant, run.metrics["recall@5"]
    (Run(recipe='bm25', question_id='q002', hits=3), (True, False, True), 1.0)
    """

    recipe: str
    question_id: str
    question: str
    gold: Gold
    hits: tuple
    relevant: tuple[bool, ...]
    trace: Any
    latency_ms: float
    metrics: Mapping[str, float]
    cold: bool = False  # the recipe's first question: its latency includes building the indexes it reads

    def __repr__(self) -> str:
        return f"Run(recipe={self.recipe!r}, question_id={self.question_id!r}, hits={len(self.hits)})"


def _model_cost(trace: Any) -> tuple[int, int]:
    """(model calls, input + output characters) recorded by the trace's steps."""
    calls = chars = 0
    for step in getattr(trace, "steps", ()):
        log = getattr(step.knowledge, "calls", None) if step.knowledge is not None else None
        for record in getattr(log, "records", ()) or ():
            calls += 1
            chars += int(record.input_chars) + int(record.output_chars)
    return calls, chars


def _check_k(k: Any) -> tuple[int, ...]:
    values = (k,) if isinstance(k, int) and not isinstance(k, bool) else tuple(k) if isinstance(k, Sequence) else ()
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        raise ParameterError("evaluate()", "k", "a positive integer or a sequence of them", k)
    return tuple(sorted(set(values)))


def _question_rows(questions: Any) -> list[tuple[str, str, Gold]]:
    require_columns(questions, ["question", "gold"], what="the questions passed to evaluate()")
    ids = questions["id"].astype(str).tolist() if "id" in questions.columns else [
        f"q{i + 1:03d}" for i in range(len(questions))]
    if len(set(ids)) != len(ids):
        raise ParameterError("evaluate()", "questions", "a frame with distinct ids", ids)
    rows = []
    for qid, text, gold in zip(ids, questions["question"].tolist(), questions["gold"].tolist()):
        if not isinstance(text, str) or not text.strip():
            raise ParameterError("evaluate()", "questions", "non-empty question strings", text)
        rows.append((qid, text, as_gold(gold, where=f"evaluate() question {qid!r}")))
    if not rows:
        raise ParameterError("evaluate()", "questions", "a frame with at least one question", len(questions))
    return rows


def _known(recipe: Any) -> tuple[set[str], set[str]] | None:
    """The chunk refs and source ids of a recipe's knowledge base, or None when it shows no state."""
    state = getattr(getattr(recipe, "kb", None), "state", None)
    if not hasattr(state, "chunks") or not hasattr(state, "documents"):
        return None
    return set(state.chunks["ref"].tolist()), set(state.documents["source_id"].tolist())


def _check_gold_exists(recipes: Mapping[str, Any], rows: list[tuple[str, str, Gold]]) -> None:
    """Refuse gold items found in none of the recipes' knowledge bases: they could never match, and would
    lower every recipe's recall in silence (a typo, a renamed source, a chunk of another chunk size)."""
    known = [k for k in (_known(r) for r in recipes.values()) if k is not None]
    if not known:
        return
    chunks, sources = set().union(*(k[0] for k in known)), set().union(*(k[1] for k in known))
    missing = []
    for qid, _, gold in rows:
        for item in gold.items:
            name = item.source_id if isinstance(item, GoldPassage) else item
            if name not in (chunks if name.startswith("chunk:") else sources):
                missing.append(f"{name!r} (question {qid!r})")
    if missing:
        raise NotFoundError(f"evaluate(): {len(missing)} gold item(s) name nothing in the recipes' knowledge bases: "
                            f"{', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}.",
                            hint="gold items are chunk refs (kb.chunks['ref']) or source ids (kb.documents"
                                 "['source_id']); fix or drop these, or the questions would score 0 on them.")


def evaluate(recipes: Mapping[str, Any], questions: pd.DataFrame, *, k: Sequence[int] | int = (1, 5, 10)) -> Evaluation:
    """Run each recipe on each question and score its hits against the gold.

    Parameters
    ----------
    recipes : mapping of name to recipe
        Anything with ``retrieve_with_trace(query)`` (``kb.recipe(...)``, ``view.recipe(...)``).
    questions : DataFrame
        Columns ``question`` and ``gold`` (a list of chunk refs or source ids, or a
        predicate ``hit -> bool``); an ``id`` column names the questions.
    k : int or sequence of int
        The cut-offs of ``recall@k``, ``precision@k``, ``hit@k`` and ``ndcg@k``.

    Examples
    --------
    >>> import crux_nb, pandas as pd
    >>> kb = crux_nb.knowledge_base(id="ev")
    >>> kb.add_text("plan.md", "# Plan\\n\\nThe launch plan moved to April.")
    >>> kb.add_text("team.md", "# Team\\n\\nPriya leads the platform team.")
    >>> questions = pd.DataFrame({"question": ["When is the launch?", "Who leads platform?"],
    ...                           "gold": [["plan.md"], ["team.md"]]})
    >>> ev = crux_nb.evaluate({"bm25": kb.recipe()}, questions, k=(1, 5))
    >>> ev
    Evaluation(recipes=['bm25'], questions=2, k=(1, 5))
    >>> ev.summary()[["recall@1", "mrr"]]
            recall@1  mrr
    recipe
    bm25         1.0  1.0
    """
    if not isinstance(recipes, Mapping) or not recipes:
        raise ParameterError("evaluate()", "recipes", "a non-empty mapping of names to recipes", recipes)
    for name, recipe in recipes.items():
        if not isinstance(name, str) or not hasattr(recipe, "retrieve_with_trace"):
            raise ParameterError("evaluate()", "recipes", "names (str) mapped to recipes (kb.recipe(...))", name)
    ks = _check_k(k)
    rows = _question_rows(questions)
    _check_gold_exists(recipes, rows)
    runs = []
    for name, recipe in recipes.items():
        for i, (qid, text, gold) in enumerate(rows):
            started = time.perf_counter()
            result = recipe.retrieve_with_trace(text)
            latency = (time.perf_counter() - started) * 1000.0
            hits = tuple(result.hits)
            runs.append(Run(recipe=name, question_id=qid, question=text, gold=gold, hits=hits,
                            relevant=tuple(hit_matches(hits, gold)), trace=result.trace, latency_ms=latency,
                            metrics=question_metrics(hits, gold, ks), cold=i == 0))
    return Evaluation(runs=tuple(runs), recipes=tuple(recipes), question_ids=tuple(r[0] for r in rows), ks=ks)


class Evaluation:
    """The runs of :func:`evaluate`: frames, a paired comparison, plots and a drill-down view.

    Examples
    --------
    >>> import crux_nb
    >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
    >>> ev = crux_nb.evaluate({"top1": kb.recipe(steps=[crux_nb.retrieve(limit=1)]), "bm25": kb.recipe()}, qs)
    >>> ev
    Evaluation(recipes=['top1', 'bm25'], questions=2, k=(1, 5, 10))
    >>> ev.summary()[["recall@1", "recall@5", "mrr"]]
            recall@1  recall@5  mrr
    recipe
    top1        0.75      0.75  1.0
    bm25        0.75      1.00  1.0
    >>> ev.compare("top1", "bm25").wins
    1
    """

    def __init__(self, *, runs: tuple[Run, ...], recipes: tuple[str, ...], question_ids: tuple[str, ...],
                 ks: tuple[int, ...]):
        self.runs = runs
        self.recipes = recipes
        self.question_ids = question_ids
        self.ks = ks
        self._by_key = {(r.recipe, r.question_id): r for r in runs}

    def run(self, recipe: str, question_id: str) -> Run:
        """The run of ``recipe`` on question ``question_id``.

        Examples
        --------
        >>> import crux_nb
        >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
        >>> ev = crux_nb.evaluate({"top1": kb.recipe(steps=[crux_nb.retrieve(limit=1)]), "bm25": kb.recipe()}, qs)
        >>> ev.run("top1", "q002")
        Run(recipe='top1', question_id='q002', hits=1)
        >>> [str(h.ref) for h in ev.run("top1", "q002").hits]
        ['chunk:team.md:c0000']
        """
        self._check_recipe(recipe)
        if question_id not in self.question_ids:
            raise ParameterError("Evaluation.run()", "question_id", f"one of {list(self.question_ids)[:5]}...",
                                 question_id)
        return self._by_key[(recipe, question_id)]

    def _check_recipe(self, name: str, param: str = "recipe") -> None:
        if name not in self.recipes:
            raise ParameterError("Evaluation", param, f"one of {list(self.recipes)}", name)

    @property
    def metrics(self) -> list[str]:
        return metric_names(self.ks)

    def to_frame(self) -> pd.DataFrame:
        """One row per (recipe, question): the metrics, ``latency_ms``, ``model_calls``, ``model_chars``, ``n_hits``.

        Examples
        --------
        >>> import crux_nb
        >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
        >>> ev = crux_nb.evaluate({"top1": kb.recipe(steps=[crux_nb.retrieve(limit=1)]), "bm25": kb.recipe()}, qs)
        >>> ev.to_frame()[["recipe", "question_id", "recall@5", "n_hits"]]
          recipe question_id  recall@5  n_hits
        0   top1        q001       1.0       1
        1   top1        q002       0.5       1
        2   bm25        q001       1.0       1
        3   bm25        q002       1.0       3
        """
        records = []
        for run in self.runs:
            calls, chars = _model_cost(run.trace)
            records.append({"recipe": run.recipe, "question_id": run.question_id, "question": run.question,
                            "n_gold": run.gold.size, **run.metrics, "latency_ms": run.latency_ms, "cold": run.cold,
                            "model_calls": calls, "model_chars": chars, "n_hits": len(run.hits)})
        frame = pd.DataFrame(records)
        for column in ("recipe", "question_id", "question"):
            frame[column] = frame[column].astype("str")
        return frame

    def summary(self) -> pd.DataFrame:
        """One row per recipe (in the given order): mean metrics, latency p50/p95, total model calls and characters.

        ``cold_ms`` is the latency of the recipe's first question, which builds the indexes it reads (BM25,
        vectors, the graph); ``latency_p50_ms``/``latency_p95_ms`` are over the other questions (over that one
        only when there is no other).

        Examples
        --------
        >>> import crux_nb
        >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
        >>> ev = crux_nb.evaluate({"top1": kb.recipe(steps=[crux_nb.retrieve(limit=1)]), "bm25": kb.recipe()}, qs)
        >>> ev.summary()[["recall@5", "ndcg@5", "model_calls", "questions"]].round(3)
                recall@5  ndcg@5  model_calls  questions
        recipe
        top1        0.75   0.807            0          2
        bm25        1.00   0.960            0          2
        """
        frame = self.to_frame()
        grouped = frame.groupby("recipe", sort=False)
        out = grouped[self.metrics].mean()
        warm = frame[~frame["cold"] | (frame.groupby("recipe", sort=False)["cold"].transform("size") == 1)]
        out["cold_ms"] = frame[frame["cold"]].groupby("recipe", sort=False)["latency_ms"].first()
        out["latency_p50_ms"] = warm.groupby("recipe", sort=False)["latency_ms"].median()
        out["latency_p95_ms"] = warm.groupby("recipe", sort=False)["latency_ms"].quantile(0.95)
        out["model_calls"] = grouped["model_calls"].sum()
        out["model_chars"] = grouped["model_chars"].sum()
        out["questions"] = grouped.size()
        return out.reindex(list(self.recipes))

    def compare(self, a: str, b: str, *, metric: str = "recall@5", n_boot: int = 2000, seed: int = 0,
                confidence: float = 0.95) -> Comparison:
        """Paired comparison of recipe ``b`` against ``a`` on ``metric`` (wins = questions where ``b`` scores higher).

        Examples
        --------
        >>> import crux_nb
        >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
        >>> ev = crux_nb.evaluate({"top1": kb.recipe(steps=[crux_nb.retrieve(limit=1)]), "bm25": kb.recipe()}, qs)
        >>> ev.compare("top1", "bm25")
        Comparison('bm25' vs 'top1' on recall@5: wins=1, losses=0, ties=1, mean_diff=+0.250, 95% CI [+0.000, +0.500])
        >>> ev.compare("top1", "bm25", metric="recall@1").ties
        2
        """
        self._check_recipe(a, "a")
        self._check_recipe(b, "b")
        if metric not in self.metrics:
            raise ParameterError("Evaluation.compare()", "metric", f"one of {self.metrics}", metric)
        left = np.array([self._by_key[(a, q)].metrics[metric] for q in self.question_ids])
        right = np.array([self._by_key[(b, q)].metrics[metric] for q in self.question_ids])
        return paired_comparison(a, b, metric, left, right, question_ids=self.question_ids, n_boot=n_boot,
                                 seed=seed, confidence=confidence)

    def recall_curve(self, *, max_k: int | None = None) -> pd.DataFrame:
        """Mean Recall@k for k = 1..``max_k`` (default: the largest k), one column per recipe.

        Examples
        --------
        >>> import crux_nb
        >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
        >>> ev = crux_nb.evaluate({"top1": kb.recipe(steps=[crux_nb.retrieve(limit=1)]), "bm25": kb.recipe()}, qs)
        >>> ev.recall_curve(max_k=3)
           top1  bm25
        k
        1  0.75  0.75
        2  0.75  0.75
        3  0.75  1.00
        """
        top = max(self.ks) if max_k is None else max_k
        data = {}
        for name in self.recipes:
            runs = [self._by_key[(name, q)] for q in self.question_ids]
            data[name] = [float(np.mean([sum(r.relevant[:k]) / r.gold.size for r in runs])) for k in range(1, top + 1)]
        return pd.DataFrame(data, index=pd.Index(range(1, top + 1), name="k"))

    def plot_recall(self, *, max_k: int | None = None, ax: Any = None):
        """Recall@k curves per recipe (matplotlib); returns the axes.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")  # no window
        >>> import crux_nb
        >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
        >>> ev = crux_nb.evaluate({"top1": kb.recipe(steps=[crux_nb.retrieve(limit=1)]), "bm25": kb.recipe()}, qs)
        >>> ax = ev.plot_recall(max_k=3)
        >>> [line.get_label() for line in ax.get_lines()], ax.get_lines()[1].get_ydata().tolist()
        (['top1', 'bm25'], [0.75, 0.75, 1.0])
        >>> matplotlib.pyplot.close(ax.figure)
        """
        from .plots import recall_curves

        return recall_curves(self.recall_curve(max_k=max_k), ax=ax)

    def plot_scatter(self, a: str, b: str, *, metric: str = "recall@5", ax: Any = None):
        """Per-question ``metric`` of recipe ``a`` (x) against ``b`` (y); returns the axes.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")  # no window
        >>> import crux_nb
        >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
        >>> ev = crux_nb.evaluate({"top1": kb.recipe(steps=[crux_nb.retrieve(limit=1)]), "bm25": kb.recipe()}, qs)
        >>> ax = ev.plot_scatter("top1", "bm25")
        >>> ax.get_title(), ax.get_xlabel()
        ('1 wins / 0 losses / 1 ties', 'top1 recall@5')
        >>> matplotlib.pyplot.close(ax.figure)
        """
        from .plots import paired_scatter

        return paired_scatter(self.compare(a, b, metric=metric, n_boot=1), ax=ax)

    def drilldown(self, question: str | int = 0, *, recipes: Sequence[str] | None = None, top: int | None = None):
        """A static view of one question: each recipe's hits side by side, gold marked, expansion paths shown.

        Examples
        --------
        >>> import crux_nb
        >>> kb, qs = crux_nb.datasets.load_tiny(), crux_nb.datasets.load_tiny_questions()
        >>> ev = crux_nb.evaluate({"top1": kb.recipe(steps=[crux_nb.retrieve(limit=1)]), "bm25": kb.recipe()}, qs)
        >>> ev.drilldown(1, top=3)
        DrillDown(question_id='q002', recipes=['top1', 'bm25'], top=3)
        >>> ev.drilldown("q001", recipes=["bm25"]).to_html().count("class='crux-gold'")
        1
        >>> ev.drilldown(qs["question"][1], top=3).question_id  # the question's text serves as well
        'q002'
        """
        from .drilldown import DrillDown

        qid = self.question_ids[question] if isinstance(question, int) else self._question_id(question)
        names = tuple(self.recipes if recipes is None else recipes)
        for name in names:
            self._check_recipe(name, "recipes")
        return DrillDown(self, qid, names, top=top or max(self.ks))

    def _question_id(self, question: Any) -> str:
        """A question id, or the id of the question with this text (exact, then ignoring case and spacing)."""
        if question in self.question_ids:
            return question
        texts = {run.question_id: run.question for run in self.runs}
        for same in (lambda t: t.strip(), lambda t: " ".join(t.casefold().split())):
            if isinstance(question, str):
                found = [q for q in self.question_ids if same(texts[q]) == same(question)]
                if found:
                    return found[0]
        raise ParameterError("Evaluation.drilldown()", "question",
                             f"a question id ({', '.join(self.question_ids[:3])}...), its text or its position", question)

    def __repr__(self) -> str:
        return f"Evaluation(recipes={list(self.recipes)}, questions={len(self.question_ids)}, k={self.ks})"
