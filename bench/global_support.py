"""Benchmark: does ``global_search`` tell questions a corpus answers from questions it cannot?

Three corpora, each with 10 questions it answers and 10 it cannot (``bench/global_support_questions.csv``:
``corpus,kind,question``; written as a user would ask them, not tuned to any scorer): the sample corpus
(``crux_nb.datasets.sample_path()``), *A Christmas Carol* (the shared data set; its answerable questions are the
first ten of ``carol_global_questions.csv``) and CPython's language reference topics (``pydoc_data.topics``,
as ``crux_nb.datasets.load_python_reference()`` chunks them). Each corpus gets communities and reports from
:class:`~crux_nb.models.OfflineModel`; every question is asked through ``global_search(scan=..., detail=...,
limit=10)`` with the offline map scorer of version 4 (``map_score="match"``: the share of the query's terms a
finding names, no idf) and the current default (``"idf"``: the same, weighted by the corpus idf the units
carry), and the best finding score (``KnowledgeTrace.support["best"]``, 0 without a finding) is recorded.

Reported: the mean best score of each kind, and for a range of thresholds how many answerable questions
would be flagged (best < threshold: a false alarm) and how many unanswerable ones would pass (best >=
threshold: a miss), per corpus and over all 60 questions; and the query terms no chunk holds.

Usage::

    PYTHONPATH=$PWD .venv/bin/python -m bench.global_support [--data ../shared/data] [--out FILE]
    PYTHONPATH=$PWD .venv/bin/python -m bench.global_support --small   # the sample corpus only (no shared data)

Exit status: 0 on success, 2 when the shared data folder is missing (full run).
"""

from __future__ import annotations

import argparse
import csv
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

import crux_nb  # noqa: E402
from crux_nb.models import OfflineModel  # noqa: E402
from crux_nb.retrieval.globalsearch import MIN_SUPPORT  # noqa: E402

from bench._common import OUT_DIR, markdown_table, write_summary, write_text  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "global_support_questions.csv"
THRESHOLDS = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)
SETTINGS = (("all", "detailed"), ("all", "overview"), ("adaptive", "detailed"))
SCORERS = ("match", "idf")


def build(corpus: str, data: Path) -> crux_nb.KnowledgeBase:
    kb = crux_nb.knowledge_base(id=corpus, communities=crux_nb.communities(model=OfflineModel()))
    if corpus == "sample":
        kb.add_path(crux_nb.datasets.sample_path())
    elif corpus == "carol":
        kb.add_path(data / "christmas-carol" / "a-christmas-carol.txt")
    else:
        from pydoc_data.topics import topics

        frame = pd.DataFrame({"id": sorted(topics), "text": [topics[k] for k in sorted(topics)]})
        kb.add_frame(frame[frame["text"].str.strip().str.len() > 0], format="text")
    kb.communities.prepare(progress=False)
    return kb


def measure(data: Path, corpora: tuple[str, ...] | None = None) -> pd.DataFrame:
    with open(QUESTIONS, newline="", encoding="utf-8") as fh:
        questions = [q for q in csv.DictReader(fh) if corpora is None or q["corpus"] in corpora]
    rows = []
    for corpus in dict.fromkeys(q["corpus"] for q in questions):
        kb = build(corpus, data)
        for q in (q for q in questions if q["corpus"] == corpus):
            for scan, detail in SETTINGS:
                for scorer in SCORERS:
                    step = crux_nb.global_search(model=OfflineModel(map_score=scorer), scan=scan, detail=detail,
                                                 limit=10)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        result = kb.recipe(steps=[step]).retrieve_with_trace(q["question"])
                    support = result.trace.steps[0].knowledge.support
                    rows.append({"corpus": corpus, "kind": q["kind"], "question": q["question"], "scan": scan,
                                 "detail": detail, "scorer": scorer, "best": support["best"] or 0.0,
                                 "absent": ", ".join(support["absent_terms"])})
    return pd.DataFrame(rows)


def report(frame: pd.DataFrame) -> str:
    out = ["# global_search support: questions a corpus answers vs questions it cannot", ""]
    means = frame.groupby(["scan", "detail", "scorer", "corpus", "kind"])["best"].mean().unstack("kind").reset_index()
    out += ["## Mean best finding score", "",
            markdown_table(["scan", "detail", "scorer", "corpus", "answerable", "unanswerable"],
                           [[r.scan, r.detail, r.scorer, r.corpus, f"{r.answerable:.3f}", f"{r.unanswerable:.3f}"]
                            for r in means.itertuples()]), ""]
    rows = []
    for (scan, detail, scorer), group in frame.groupby(["scan", "detail", "scorer"], sort=False):
        for t in THRESHOLDS:
            cells = []
            for corpus in [*dict.fromkeys(group["corpus"]), "all"]:
                g = group if corpus == "all" else group[group["corpus"] == corpus]
                flagged = int(((g["kind"] == "answerable") & (g["best"] < t)).sum())
                passed = int(((g["kind"] == "unanswerable") & (g["best"] >= t)).sum())
                cells.append(f"{flagged} / {passed}")
            rows.append([scan, detail, scorer, t, *cells])
    corpora = list(dict.fromkeys(frame["corpus"]))
    out += ["## Answerable flagged / unanswerable passed, by threshold", "",
            "Each cell: answerable questions whose best finding is below the threshold (of 10 per corpus) / "
            "unanswerable questions at or above it (of 10).", "",
            markdown_table(["scan", "detail", "scorer", "threshold", *corpora, "all (of 30 / 30)"], rows), ""]
    per = frame[(frame["scan"] == "all") & (frame["detail"] == "detailed")]
    wide = per.pivot_table(index=["corpus", "kind", "question", "absent"], columns="scorer",
                           values="best").reset_index()
    out += ["## Per question (scan all, detailed)", "",
            markdown_table(["corpus", "kind", "question", "absent terms", "match", "idf"],
                           [[r.corpus, r.kind, r.question, r.absent, f"{r.match:.3f}", f"{r.idf:.3f}"]
                            for r in wide.itertuples()]), ""]
    return "\n".join(out)


def summary_rows(frame: pd.DataFrame) -> list[dict]:
    """At the default threshold: answerable questions flagged and unanswerable ones passed, idf (ours) against
    version 4's map without idf (baseline), per setting."""
    rows = []
    for (scan, detail), group in frame.groupby(["scan", "detail"], sort=False):
        counts = {}
        for scorer in SCORERS:
            g = group[group["scorer"] == scorer]
            counts[scorer] = (int(((g["kind"] == "answerable") & (g["best"] < MIN_SUPPORT)).sum()),
                              int(((g["kind"] == "unanswerable") & (g["best"] >= MIN_SUPPORT)).sum()),
                              int((g["kind"] == "answerable").sum()))
        n = counts["idf"][2]
        for i, what in enumerate(("answerable flagged", "unanswerable passed")):
            rows.append({"measure": f"{what} at {MIN_SUPPORT:g}, scan {scan}, {detail} (of {n})",
                         "ours": counts["idf"][i], "baseline": counts["match"][i],
                         "baseline_name": "map without idf (v4)"})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data", help="the shared data folder")
    parser.add_argument("--small", action="store_true", help="the sample corpus only (no shared data needed)")
    parser.add_argument("--out", type=Path, help="Markdown output (default bench/out/global_support[_small].md)")
    args = parser.parse_args(argv)
    out = args.out or OUT_DIR / ("global_support_small.md" if args.small else "global_support.md")
    if not args.small and not (args.data / "christmas-carol").is_dir():
        print(f"shared data not found at {args.data}", file=sys.stderr)
        return 2
    frame = measure(args.data, ("sample",) if args.small else None)
    text = report(frame)
    write_text(out, text)
    write_summary(out, "global_support", summary_rows(frame))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
