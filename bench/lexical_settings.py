"""Benchmark: BM25 lexical settings (token rule, stop words, stemmer) side by side, Recall@5 and Recall@10 on
every corpus, in one run.

Corpora (each question's recall = the share of its gold found in the first k hits, averaged):

* ``pyref``: CPython's language reference topics (``crux_nb.datasets.load_python_reference()``) with the
  technical-docs questions (``data/python_reference_questions.jsonl``, or the ``techdocs-bench`` branch's copy,
  or ``--questions``); passage gold: a hit matches when it is from the gold ``source_id`` and its
  whitespace-normalised content contains the phrase (or its first 40 characters). Without them: ``bench/lexical_quick_questions.jsonl``
  (10 quick questions of ours);
* the other technical corpora of ``bench/techdocs.py`` (CMake's help from the ``cmake`` wheel), with their
  ``bench/techdocs_<name>_questions.jsonl``, when that benchmark and the corpus are here (not with ``--small``);
* ``carol``: A Christmas Carol (``../shared/data/christmas-carol``) with ``bench/carol_questions.csv``; a hit
  matches a gold snippet when its whitespace-normalised content holds the snippet's first 40 characters;
* ``sample``: the sample corpus and its 37 questions (chunk gold);
* ``musique``, ``hotpotqa``, ``2wiki``: the multi-hop samples (one chunk per passage, source gold), when
  ``../shared/data/multihop`` is there.

Every setting is a ``BM25Leg`` override on one knowledge base per corpus (``retrieve(limit=10, legs=(leg,))``),
so the rows differ in the lexical settings alone. ``auto`` stop words: the language's list, or none when the
corpus reads as code (``crux_nb.store.lexical.code_like``); the table notes what it chose per corpus. ``today`` is the behaviour before the settings existed
(bm25s' split, English stop words; scores equal bm25s' bit for bit).

    .venv/bin/python bench/lexical_settings.py            # every corpus, every question
    .venv/bin/python bench/lexical_settings.py --small    # pyref, sample, MuSiQue's first 300 passages
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import crux_nb  # noqa: E402
from crux_nb.retrieval import BM25Leg, retrieve  # noqa: E402
from crux_nb.store.lexical import DEFAULT_SETTINGS  # noqa: E402

from bench._common import OUT_DIR, machine_info, markdown_table, write_summary, write_text  # noqa: E402

TODAY = "today: bm25s split, English stop words"
SETTINGS = {
    TODAY: dict(tokenizer="bm25s", stopwords="language", stemmer=None),
    "bm25s split, no stop words": dict(tokenizer="bm25s", stopwords=None, stemmer=None),
    "crux split, English stop words": dict(tokenizer="crux", stopwords="language", stemmer=None),
    "crux split, no stop words": dict(tokenizer="crux", stopwords=None, stemmer=None),
    "crux split, auto stop words": dict(tokenizer="crux", stopwords="auto", stemmer=None),
    "crux split, English stop words, stemmer": dict(tokenizer="crux", stopwords="language", stemmer="language"),
    "crux split, no stop words, stemmer": dict(tokenizer="crux", stopwords=None, stemmer="language"),
    "crux split, auto stop words, stemmer": dict(tokenizer="crux", stopwords="auto", stemmer="language"),
    "bm25s split, English stop words, stemmer": dict(tokenizer="bm25s", stopwords="language", stemmer="language"),
}
# the row equal to what knowledge_base() uses (crux_nb.store.lexical.DEFAULT_SETTINGS)
DEFAULT = next(label for label, s in SETTINGS.items()
               if all(getattr(DEFAULT_SETTINGS, k) == v for k, v in s.items()) and DEFAULT_SETTINGS.language == "en")
SMALL_PASSAGES = 300
QUICK = Path(__file__).resolve().parent / "lexical_quick_questions.jsonl"


def _norm(text: str) -> str:
    return " ".join(text.split())


def _stemmer_available() -> bool:
    try:
        import Stemmer  # noqa: F401
    except ImportError:
        return False
    return True


def pyref_questions(path: str | None) -> tuple[list[dict], str]:
    """The technical-docs questions and where they came from."""
    candidates = [Path(path)] if path else [ROOT / "data" / "python_reference_questions.jsonl"]
    for candidate in candidates:
        if candidate.is_file():
            return [json.loads(x) for x in candidate.read_text(encoding="utf-8").splitlines() if x.strip()], str(candidate)
    if not path:
        shown = subprocess.run(["git", "-C", str(ROOT), "show", "techdocs-bench:data/python_reference_questions.jsonl"],
                               capture_output=True, text=True)
        if shown.returncode == 0 and shown.stdout.strip():
            return [json.loads(x) for x in shown.stdout.splitlines() if x.strip()], "techdocs-bench branch"
    return [json.loads(x) for x in QUICK.read_text(encoding="utf-8").splitlines() if x.strip()], QUICK.name


def passage_matcher(gold: list[dict]):
    """A function from one hit to the index of the gold passage it matches (or None)."""
    # the techdocs-bench rule: the phrase, or its first 40 normalised characters (a chunk boundary may cut it)
    wanted = [(g["source_id"], _norm(g["phrase"])[:40]) for g in gold]

    def match(hit) -> int | None:
        content = _norm(hit.content)
        return next((i for i, (source, start) in enumerate(wanted) if hit.source.id == source and start in content),
                    None)
    return match


def passage_items(questions: list[dict]) -> list:
    """(question, gold count, function hits -> matched gold indices) per question with passage gold."""
    items = []
    for q in questions:
        match = passage_matcher(q["gold"])
        items.append((q["question"], len(q["gold"]),
                      lambda hits, match=match: {i for i in map(match, hits) if i is not None}))
    return items


def technical_corpora(notes: list[str]) -> list:
    """The other technical corpora of ``bench/techdocs.py`` (its ``CORPORA`` beside pyref: CMake's help...), each
    with its questions ``bench/techdocs_<name>_questions.jsonl``; none when that benchmark is not here."""
    try:
        from bench import techdocs
    except ImportError:
        return []
    out = []
    for name, corpus in getattr(techdocs, "CORPORA", {}).items():
        path = QUICK.parent / f"techdocs_{name}_questions.jsonl"
        if name == "pyref" or not path.is_file():
            continue
        why = corpus.missing()
        if why:
            notes.append(f"{name}: skipped ({why})")
            continue
        questions = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        out.append((name, corpus.build(), passage_items(questions)))
    return out


def carol(notes: list[str]) -> list:
    """A Christmas Carol, one source, with the expansion benchmark's questions (snippet gold)."""
    roots = [ROOT.parent / "shared" / "data"]
    if crux_nb.datasets.multihop_root() is not None:  # beside the multi-hop samples ($CRUX_MULTIHOP)
        roots.append(crux_nb.datasets.multihop_root().parent)
    book = next((r / "christmas-carol" / "a-christmas-carol.txt" for r in roots
                 if (r / "christmas-carol" / "a-christmas-carol.txt").is_file()), None)
    if book is None:
        notes.append("A Christmas Carol not found: skipped")
        return []
    import csv

    kb = crux_nb.knowledge_base(id="carol")
    kb.add_text("a-christmas-carol.txt", book.read_text(encoding="utf-8"), format="text")
    rows = list(csv.DictReader((QUICK.parent / "carol_questions.csv").open(encoding="utf-8")))
    questions = [{"question": r["question"], "gold": [{"source_id": "a-christmas-carol.txt", "phrase": s}
                                                      for s in r["gold"].split("||") if s.strip()]} for r in rows]
    return [("carol", kb, passage_items(questions))]


def corpora(small: bool, questions_path: str | None):
    """(name, kb, [(question, gold count, function hits -> matched gold ids)]) per corpus, and notes."""
    out, notes = [], []
    kb = crux_nb.datasets.load_python_reference()
    qs, origin = pyref_questions(questions_path)
    notes.append(f"pyref questions: {len(qs)} from {origin}")
    out.append(("pyref", kb, passage_items(qs)))
    if not small:
        out += technical_corpora(notes)
    out += carol(notes)
    kb = crux_nb.datasets.load_sample()
    questions = crux_nb.datasets.load_sample_questions()
    out.append(("sample", kb, [(q, len(gold), lambda hits, gold=frozenset(gold): {str(h.ref) for h in hits} & gold)
                               for q, gold in zip(questions["question"], questions["gold"])]))
    if crux_nb.datasets.multihop_root() is None:
        notes.append("multi-hop samples not found: skipped")
        return out, notes
    for name in (("musique",) if small else ("musique", "hotpotqa", "2wiki")):
        kb, questions = crux_nb.datasets.load_multihop(name, chunk_size=8_000)
        if small:
            keep = sorted(set(kb.documents["source_id"]))[:SMALL_PASSAGES]
            kb.remove(sorted(set(kb.documents["source_id"]) - set(keep)))
            questions = questions[[set(g) <= set(keep) for g in questions["gold"]]]
        out.append((name, kb, [(q, len(gold), lambda hits, gold=frozenset(gold): {h.source.id for h in hits} & gold)
                               for q, gold in zip(questions["question"], questions["gold"])]))
    return out, notes


def measure(kb, items, settings: dict) -> tuple[float, float, float]:
    """(Recall@5, Recall@10, ms per query) of ``retrieve(limit=10)`` with one BM25 leg under ``settings``."""
    recipe = kb.recipe(steps=[retrieve(limit=10, legs=(BM25Leg(language="en", **settings),))])
    recipe.retrieve(items[0][0])  # warm-up: the index under these settings
    r5 = r10 = 0.0
    started = time.perf_counter()
    for question, n_gold, matched in items:
        hits = recipe.retrieve(question)
        r5 += len(matched(hits[:5])) / n_gold
        r10 += len(matched(hits[:10])) / n_gold
    ms = (time.perf_counter() - started) * 1000 / len(items)
    return r5 / len(items), r10 / len(items), ms


def run(small: bool, out_path: Path | None, questions_path: str | None) -> str:
    import warnings

    settings = {k: v for k, v in SETTINGS.items() if v["stemmer"] is None or _stemmer_available()}
    data, notes = corpora(small, questions_path)
    if len(settings) < len(SETTINGS):
        notes.append("PyStemmer not installed: stemmer rows skipped (pip install 'crux_nb[stem]')")
    results = {}
    with warnings.catch_warnings():  # queries of only stop words warn; the table counts them as misses
        warnings.simplefilter("ignore", UserWarning)
        for name, kb, items in data:
            for label, setting in settings.items():
                results[name, label] = measure(kb, items, setting)
    names = [name for name, _, _ in data]
    header = ["setting"] + [f"{n} R@{k}" for n in names for k in (5, 10)] + ["mean R@5", "mean R@10"]
    rows = []
    for label in settings:
        cells = [results[n, label] for n in names]
        mean5 = sum(c[0] for c in cells) / len(cells)
        mean10 = sum(c[1] for c in cells) / len(cells)
        mark = " [default]" if label == DEFAULT else ""
        rows.append([label + mark] + [f"{v:.3f}" for c in cells for v in c[:2]] + [f"{mean5:.3f}", f"{mean10:.3f}"])
    auto = BM25Leg(stopwords="auto")
    counts = ", ".join(f"{n}: {len(items)} questions, {len(kb.chunks)} chunks, auto stop words "
                       f"{auto.settings(kb.state).stopwords!r}" for n, kb, items in data)
    text = "\n".join([
        "# BM25 lexical settings: Recall@5 / Recall@10 per corpus", "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info(["bm25s", "PyStemmer"]).items()), "", *[f"- {note}" for note in notes], f"- {counts}", "",
        "## Results", "", markdown_table(header, rows), "",
        "Delta of the default against today (points of Recall@5 / Recall@10): "
        + ", ".join(f"{n} {(results[n, DEFAULT][0] - results[n, TODAY][0]) * 100:+.1f} / "
                    f"{(results[n, DEFAULT][1] - results[n, TODAY][1]) * 100:+.1f}" for n in names), ""])
    print(text)
    target = out_path or OUT_DIR / f"lexical_settings{'_small' if small else ''}.md"
    write_text(target, text)
    summary = []
    for n in names:
        for k, i in ((5, 0), (10, 1)):
            summary.append({"measure": f"{n} Recall@{k}, default lexical settings", "ours": results[n, DEFAULT][i],
                            "baseline": results[n, TODAY][i], "baseline_name": TODAY})
    write_summary(target, "lexical_settings", summary)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="pyref, sample and MuSiQue's first 300 passages")
    parser.add_argument("--questions", help="a JSON-lines file of technical-docs questions (passage gold)")
    parser.add_argument("--out", type=Path, help="the Markdown report (default bench/out/lexical_settings[_small].md)")
    args = parser.parse_args(argv)
    run(args.small, args.out, args.questions)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
