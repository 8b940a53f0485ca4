"""Labelled questions: the bundled sample corpus's, and loaders for the public multi-hop samples.

``data/sample_questions.jsonl`` (one JSON object a line: ``id``, ``question``, ``gold``
as chunk refs of :func:`crux_nb.datasets.load_sample` with its default chunk size,
``kind``) was written by hand from reading the sample corpus;
``data/python_reference_questions.jsonl`` (same fields, ``gold`` as passages
``{"source_id": <topic>, "phrase": ...}`` of :func:`crux_nb.datasets.load_python_reference`)
was written by hand from reading CPython's language-reference topics. The multi-hop samples
(MuSiQue, HotpotQA, 2WikiMultihopQA) live outside the package, in ``shared/data/multihop``
beside a checkout; :func:`load_multihop` builds one knowledge base per sample (one
source per passage) and a question frame whose gold are the supporting passages' sources.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ..errors import NotFoundError, ParameterError
from .paths import data_path

__all__ = ["load_sample_questions", "sample_questions_path", "load_python_reference_questions",
           "python_reference_questions_path", "read_questions", "load_multihop", "multihop_root", "MULTIHOP"]

MULTIHOP = ("musique", "hotpotqa", "2wiki")


def sample_questions_path() -> Path:
    """The JSON-lines file of the sample corpus's labelled questions.

    Examples
    --------
    >>> import json
    >>> first = json.loads(sample_questions_path().read_text(encoding="utf-8").splitlines()[0])
    >>> sorted(first)
    ['gold', 'id', 'kind', 'question']
    """
    return data_path("sample_questions.jsonl")


def load_sample_questions() -> pd.DataFrame:
    """The sample corpus's labelled questions: ``id``, ``question``, ``gold`` (chunk refs), ``kind``.

    >>> q = load_sample_questions()
    >>> list(q.columns), bool(q["gold"].map(len).min() >= 1)
    (['id', 'question', 'gold', 'kind'], True)
    """
    return read_questions(path=sample_questions_path())


def python_reference_questions_path() -> Path:
    """The JSON-lines file of the Python language reference's labelled questions (passage gold).

    Examples
    --------
    >>> python_reference_questions_path().name
    'python_reference_questions.jsonl'
    """
    return data_path("python_reference_questions.jsonl")


def load_python_reference_questions() -> pd.DataFrame:
    """Labelled questions on :func:`~crux_nb.datasets.load_python_reference`: ``id``, ``question``, ``gold``, ``kind``.

    Each gold item is a :class:`~crux_nb.evaluation.GoldPassage` (a topic and a phrase of its
    answer), so the gold does not depend on the chunk size. ``kind`` is ``identifier``,
    ``keyword``, ``behaviour`` or ``two-topic`` (two passages in different topics).

    Examples
    --------
    >>> q = load_python_reference_questions()
    >>> list(q.columns), len(q) >= 45, q["gold"].iloc[0][0].source_id
    (['id', 'question', 'gold', 'kind'], True, 'typesmapping')
    >>> int((q["kind"] == "two-topic").sum()) >= 12
    True
    """
    return read_questions(path=python_reference_questions_path())


def read_questions(*, path: str | os.PathLike) -> pd.DataFrame:
    """A question frame (``id``, ``question``, ``gold``, ``kind``) from a JSON-lines file.

    ``gold`` becomes a tuple per question; a gold object ``{"source_id": ..., "phrase": ...}``
    becomes a :class:`~crux_nb.evaluation.GoldPassage` (strings stay chunk refs or source ids).
    ``kind`` is optional (empty when absent).

    Examples
    --------
    >>> import json, tempfile
    >>> path = Path(tempfile.mkdtemp()) / "q.jsonl"
    >>> _ = path.write_text(json.dumps({"id": "a", "question": "Why?", "gold": ["x.md",
    ...     {"source_id": "y.md", "phrase": "because"}]}), encoding="utf-8")
    >>> read_questions(path=path)["gold"].iloc[0]
    ('x.md', GoldPassage(source_id='y.md', phrase='because'))
    """
    from ..evaluation.metrics import GoldPassage

    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    frame = pd.DataFrame(rows, columns=["id", "question", "gold", "kind"])
    frame["kind"] = frame["kind"].astype(object).fillna("")  # all missing: a float column, no str fill
    for column in ("id", "question", "kind"):
        frame[column] = frame[column].astype("str")
    frame["gold"] = pd.Series(
        [tuple(GoldPassage.from_value(g, where=f"read_questions() {path}") if isinstance(g, dict) else g for g in gold)
         for gold in frame["gold"]], dtype="object")
    return frame


def multihop_root(root: str | os.PathLike | None = None) -> Path | None:
    """The ``multihop`` folder: ``root``, else ``$CRUX_MULTIHOP``, else ``../shared/data/multihop`` of a checkout.

    None when no candidate holds a ``musique`` folder.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> multihop_root(root) == root  # no musique/ inside: the next candidate (or None)
    False
    >>> (root / "musique").mkdir()
    >>> multihop_root(root) == root
    True
    """
    candidates = [root, os.environ.get("CRUX_MULTIHOP"),
                  Path(__file__).resolve().parents[3] / "shared" / "data" / "multihop"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "musique").is_dir():
            return Path(candidate)
    return None


def _passages(name: str, corpus) -> list[tuple[str, str]]:
    """(title, text) per passage, in corpus order."""
    if name == "hotpotqa":  # a dict of title -> sentences
        return [(title, "".join(sentences)) for title, sentences in corpus.items()]
    return [(p["title"], p["text"]) for p in corpus]


def _source_ids(passages: list[tuple[str, str]]) -> list[str]:
    """One source id per passage: its title, numbered when a title repeats (``Title #2``)."""
    seen: dict[str, int] = {}
    out = []
    for title, _ in passages:
        seen[title] = seen.get(title, 0) + 1
        out.append(title if seen[title] == 1 else f"{title} #{seen[title]}")
    return out


def _gold(name: str, question: dict, by_title: dict[str, list[str]], by_text: dict[str, str]) -> tuple[str, ...]:
    if name == "musique":
        texts = [p["paragraph_text"] for p in question["paragraphs"] if p.get("is_supporting")]
        ids = [by_text.get(t) or by_title.get(p["title"], [None])[0]
               for t, p in zip(texts, [p for p in question["paragraphs"] if p.get("is_supporting")])]
    elif name == "hotpotqa":
        ids = [by_title.get(title, [None])[0] for title, _sentence in question["supporting_facts"]]
    else:
        ids = [by_title.get(title, [None])[0] for title in question["ground_truth"]]
    return tuple(dict.fromkeys(i for i in ids if i))


def load_multihop(name: str, *, root: str | os.PathLike | None = None, limit: int | None = None,
                  chunk_size: int = 1200):
    """``(kb, questions)`` for one multi-hop sample: one source per passage; gold = supporting sources.

    Examples
    --------
    >>> from crux_nb.datasets import load_multihop, multihop_root
    >>> if multihop_root() is not None:
    ...     kb, questions = load_multihop("hotpotqa", limit=3)
    ...     print(len(questions), list(questions.columns))
    ... else:
    ...     print(3, ['id', 'question', 'gold'])
    3 ['id', 'question', 'gold']
    """
    from ..knowledgebase import knowledge_base

    if name not in MULTIHOP:
        raise ParameterError("load_multihop()", "name", f"one of {list(MULTIHOP)}", name)
    folder = multihop_root(root)
    if folder is None:
        raise NotFoundError("the multi-hop samples were not found.",
                            hint="pass root= (the folder holding musique/, hotpotqa/, 2wiki/) or set $CRUX_MULTIHOP.")
    corpus = json.loads((folder / name / "corpus.json").read_text(encoding="utf-8"))
    raw = json.loads((folder / name / "questions.json").read_text(encoding="utf-8"))
    passages = _passages(name, corpus)
    ids = _source_ids(passages)
    by_title: dict[str, list[str]] = {}
    by_text: dict[str, str] = {}
    for sid, (title, text) in zip(ids, passages):
        by_title.setdefault(title, []).append(sid)
        by_text.setdefault(text, sid)
    rows = []
    for i, q in enumerate(raw[:limit] if limit else raw):
        gold = _gold(name, q, by_title, by_text)
        if gold:
            rows.append({"id": str(q.get("id") or q.get("_id") or f"{name}-{i:03d}"), "question": q["question"],
                         "gold": gold})
    kb = knowledge_base(id=name, chunk_size=chunk_size)
    kb.add_frame(pd.DataFrame({"id": ids, "text": [f"{t}\n\n{x}" for t, x in passages]}), format="text")
    questions = pd.DataFrame(rows, columns=["id", "question", "gold"])
    questions["id"] = questions["id"].astype("str")
    questions["question"] = questions["question"].astype("str")
    return kb, questions
