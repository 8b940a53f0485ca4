"""The three multi-hop samples (MuSiQue, HotpotQA, 2WikiMultihopQA) as passages and questions with gold ids,
and their knowledge bases built through the public API (cached under ``bench/out/multihop_kb``).

Every passage is one source (id ``p00000`` ...) whose text is its title, a blank line and its text; the
chunk size is large enough that each passage is exactly one chunk. Entities come from the offline model
(``kb.extract_entities()``). Gold: MuSiQue's supporting paragraphs (matched by title and text),
HotpotQA's supporting-fact titles, 2Wiki's ground-truth titles -- each mapped to passage source ids.
"""

from __future__ import annotations

import ast
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

import crux_nb

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "multihop"
CACHE = Path(__file__).resolve().parent / "out" / "multihop_kb"
SAMPLES = ("musique", "hotpotqa", "2wiki")
CHUNK_SIZE = 8_000  # every passage (at most 6,434 characters) is one chunk
# code whose change changes the built graph: the cache key hashes these files
GRAPH_CODE = ("crux_nb/extract", "crux_nb/models/offline_extract.py", "crux_nb/models/offline.py",
              "crux_nb/models/offline_names.py", "crux_nb/models/offline_concepts.py", "crux_nb/models/offline_code.py",
              "crux_nb/models/offline_assemble.py",
              "crux_nb/models/text.py", "crux_nb/store/chunking.py", "crux_nb/store/ingest.py")


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    gold: frozenset[str]  # source ids of the gold passages


@dataclass(frozen=True)
class Sample:
    name: str
    passages: pd.DataFrame  # id, title, text
    questions: tuple[Question, ...]


def _parse(value):
    return ast.literal_eval(value) if isinstance(value, str) else value


def load_sample(name: str) -> Sample:
    corpus = json.loads((DATA / name / "corpus.json").read_text(encoding="utf-8"))
    raw = json.loads((DATA / name / "questions.json").read_text(encoding="utf-8"))
    if isinstance(corpus, dict):  # HotpotQA: title -> sentences
        corpus = [{"title": t, "text": "".join(s)} for t, s in corpus.items()]
    ids = [f"p{i:05d}" for i in range(len(corpus))]
    passages = pd.DataFrame({"id": ids, "title": [p["title"] for p in corpus], "text": [p["text"] for p in corpus]})
    by_title: dict[str, list[str]] = {}
    by_pair: dict[tuple[str, str], str] = {}
    for pid, p in zip(ids, corpus):
        by_title.setdefault(p["title"], []).append(pid)
        by_pair.setdefault((p["title"], p["text"].strip()), pid)
    questions = []
    for i, q in enumerate(raw):
        if name == "musique":
            paras = [p for p in _parse(q["paragraphs"]) if p["is_supporting"]]
            gold = {by_pair.get((p["title"], p["paragraph_text"].strip())) or by_title[p["title"]][0] for p in paras}
            qid = q["id"]
        elif name == "hotpotqa":
            gold = {by_title[t][0] for t, _ in _parse(q["supporting_facts"])}
            qid = q["_id"]
        else:
            gold = {by_title[t][0] for t in _parse(q["ground_truth"])}
            qid = f"2wiki-{i:03d}"
        questions.append(Question(qid, q["question"], frozenset(gold)))
    return Sample(name, passages, tuple(questions))


def _code_hash() -> str:
    h = hashlib.sha256()
    for rel in GRAPH_CODE:
        path = ROOT / rel
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            if f.is_file():
                h.update(f.relative_to(ROOT).as_posix().encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _data_hash(name: str, n_passages: int | None) -> str:
    h = hashlib.sha256((DATA / name / "corpus.json").read_bytes())
    h.update(str(n_passages).encode())
    return h.hexdigest()[:12]


def build_kb(sample: Sample, *, passages: pd.DataFrame | None = None, cache: bool = True):
    """The sample's knowledge base (passages as documents, offline entities); (kb, build seconds, cached?)."""
    frame = sample.passages if passages is None else passages
    key = f"{sample.name}-{len(frame)}-{_data_hash(sample.name, len(frame))}-{_code_hash()}"
    path = CACHE / key
    if cache and path.is_dir():
        return crux_nb.open(path, verify=False), 0.0, True
    started = time.perf_counter()
    kb = crux_nb.knowledge_base(id=f"multihop-{sample.name}", chunk_size=CHUNK_SIZE)
    docs = pd.DataFrame({"id": frame["id"], "text": frame["title"] + "\n\n" + frame["text"], "title": frame["title"]})
    kb.add_frame(docs, id_column="id", text_column="text", format="text")
    kb.extract_entities(progress=False)
    seconds = time.perf_counter() - started
    if cache:
        CACHE.mkdir(parents=True, exist_ok=True)
        kb.save(path)
    return kb, seconds, False
