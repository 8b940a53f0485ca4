"""Passage gold (a source and a phrase of its text) in the evaluation workbench, and the Python reference questions."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace as N

import pandas as pd
import pytest

import crux_nb
from crux_nb.datasets import load_python_reference, load_python_reference_questions, read_questions
from crux_nb.errors import ParameterError
from crux_nb.evaluation import GoldPassage, as_gold, evaluate, question_metrics
from crux_nb.evaluation.metrics import PREFIX_CHARS
from crux_nb.refs import ChunkRef


def hit(source: str, content: str, chunk: str = "c0000"):
    return N(kind="evidence", ref=ChunkRef(source, chunk), source=N(id=source), content=content)


def test_a_passage_matches_its_source_and_normalised_phrase_only():
    gold = GoldPassage("with", "the suite\n  is executed")
    assert gold.phrase == "the suite is executed"
    assert gold.matches(hit("with", "6. The\tsuite is executed.\n7. Then the suite is\nexecuted again"))
    assert not gold.matches(hit("compound", "then the suite is executed"))  # same text, other source
    assert not gold.matches(hit("with", "then the Suite is executed"))  # case-sensitive
    assert not gold.matches(hit("with", "then the suite was executed"))


def test_a_phrase_cut_by_a_chunk_boundary_matches_the_chunk_holding_its_start():
    phrase = "a" * 10 + " the start of a long phrase that a chunk boundary cuts in two"
    start, rest = phrase[:PREFIX_CHARS], phrase[PREFIX_CHARS:]
    gold = GoldPassage("doc", phrase)
    assert gold.matches(hit("doc", "text before " + start))
    assert not gold.matches(hit("doc", rest + " text after"))
    assert not gold.matches(hit("doc", "text before " + start[:-1]))


def test_each_passage_counts_once_and_recall_mixes_with_source_gold():
    gold = as_gold([{"source_id": "a", "phrase": "alpha beta"}, "b", GoldPassage("c", "gamma")])
    hits = [hit("a", "alpha beta one", "c0"), hit("a", "two alpha  beta", "c1"), hit("x", "gamma"), hit("b", "")]
    m = question_metrics(hits, gold, [2, 4])
    assert m["recall@2"] == pytest.approx(1 / 3) and m["recall@4"] == pytest.approx(2 / 3)
    assert m["precision@2"] == 0.5 and m["mrr"] == 1.0


def test_passages_are_deduplicated_and_accept_the_dataclass_or_a_mapping():
    gold = as_gold([GoldPassage("a", "x  y"), {"source_id": "a", "phrase": "x y"}])
    assert gold.items == (GoldPassage("a", "x y"),) and gold.size == 1
    assert as_gold({"source_id": "a", "phrase": "x"}).items == (GoldPassage("a", "x"),)


@pytest.mark.parametrize("bad", [
    {"source_id": "a", "phrase": "x", "chunk": "c0"},  # unknown key
    {"source_id": "a"},  # missing phrase
    {"source_id": "a", "phrase": ""},
    {"source_id": "a", "phrase": "  \n "},
    {"source_id": "", "phrase": "x"},
    {"source_id": "a", "phrase": 3},
])
def test_a_bad_passage_is_a_parameter_error(bad):
    with pytest.raises(ParameterError, match="gold"):
        as_gold([bad])


def test_the_dataclass_validates_too():
    with pytest.raises(ParameterError, match="phrase"):
        GoldPassage("a", " ")
    with pytest.raises(ParameterError, match="source_id"):
        GoldPassage("", "x")


def test_passage_gold_survives_rechunking_and_round_trips_through_jsonl(tmp_path):
    text = "\n\n".join(f"Paragraph {i}. " + "filler words here " * 12 + f"marker{i} sits in the middle." for i in range(8))
    questions = pd.DataFrame({"id": ["q1", "q2"], "question": ["where is marker3", "where is marker6"],
                              "gold": [(GoldPassage("doc.md", "marker3 sits in the middle"),),
                                       (GoldPassage("doc.md", "marker6 sits in"), "other.md")]})
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "kind": "k",
                                        "gold": [g.to_dict() if isinstance(g, GoldPassage) else g for g in gold]}) + "\n"
                            for i, q, gold in zip(questions["id"], questions["question"], questions["gold"])))
    loaded = read_questions(path=path)
    assert loaded["gold"].tolist() == questions["gold"].tolist() and loaded["kind"].tolist() == ["k", "k"]
    recalls = []
    for size in (200, 400, 1200):
        kb = crux_nb.knowledge_base(id=f"p{size}", chunk_size=size)
        kb.add_text("doc.md", text)
        kb.add_text("other.md", "Nothing about markers.")
        frame = evaluate({"bm25": kb.recipe()}, loaded, k=3).to_frame()
        recalls.append(frame["recall@3"].tolist())
    assert recalls[0] == recalls[1] == recalls[2] == [1.0, 0.5]


def test_the_drilldown_names_a_passage():
    kb = crux_nb.knowledge_base(id="dd")
    kb.add_text("doc.md", "The launch moved to April.")
    qs = pd.DataFrame({"id": ["q1"], "question": ["launch"], "gold": [[{"source_id": "doc.md", "phrase": "moved to April"}]]})
    html = evaluate({"bm25": kb.recipe()}, qs, k=1).drilldown("q1").to_html()
    assert "<span class='crux-ref'>doc.md: &quot;moved to April&quot;</span>" in html and "class='crux-gold'" in html


# ------------------------------------------------------------ the Python reference questions
@pytest.fixture(scope="module")
def pyref():
    kb = load_python_reference()
    chunks = kb.chunks
    hits = [hit(s, c, ch) for s, c, ch in zip(chunks["source_id"], chunks["content"], chunks["chunk_id"])]
    return kb, hits, load_python_reference_questions()


def test_the_reference_questions_are_well_formed(pyref):
    kb, _, questions = pyref
    assert len(questions) >= 45 and questions["id"].is_unique
    assert set(questions["kind"]) == {"identifier", "keyword", "behaviour", "two-topic"}
    topics = set(kb.documents["source_id"])
    for kind, gold in zip(questions["kind"], questions["gold"]):
        assert all(isinstance(g, GoldPassage) and g.source_id in topics for g in gold)
        assert all(5 <= len(g.phrase.split()) <= 12 for g in gold), gold
        assert (len({g.source_id for g in gold}) == 2) == (kind == "two-topic") == (len(gold) == 2)
    assert int((questions["kind"] == "two-topic").sum()) >= 12


def test_every_reference_gold_passage_matches_one_or_a_few_chunks(pyref):
    _, hits, questions = pyref
    for qid, gold in zip(questions["id"], questions["gold"]):
        for g in gold:
            matched = [h for h in hits if g.matches(h)]
            assert 1 <= len(matched) <= 3, (qid, g, len(matched))


def test_reference_questions_are_not_their_own_answers(pyref):
    # a question copied from its gold phrase would test string matching, not retrieval
    _, _, questions = pyref
    for question, gold in zip(questions["question"], questions["gold"]):
        for g in gold:
            words = re.findall(r"\w+", g.phrase.lower())
            assert " ".join(words) not in " ".join(re.findall(r"\w+", question.lower())), (question, g)
