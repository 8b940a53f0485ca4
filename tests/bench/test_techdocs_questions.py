"""The second technical corpus of bench/techdocs.py: CMake's help pages from the ``cmake`` wheel and the questions
written on them (``bench/techdocs_cmake_questions.jsonl``): well formed, and every gold passage found in one or a
few chunks of the knowledge base the benchmark builds (so the gold holds for the installed CMake)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace as N

import pytest

from crux_nb.evaluation import GoldPassage
from crux_nb.refs import ChunkRef
from crux_nb.testing import require_system

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import techdocs  # noqa: E402


@pytest.fixture(scope="module")
def questions():
    return techdocs.CORPORA["cmake"].questions()


@pytest.fixture(scope="module")
def kb():
    require_system(techdocs.cmake_help() is not None, "CMake's help files were not found (the dev extra's cmake)")
    return techdocs.load_cmake_help()


def test_the_cmake_questions_are_well_formed(questions):
    assert len(questions) >= 30 and questions["id"].is_unique
    assert set(questions["kind"]) == {"identifier", "keyword", "behaviour", "two-topic"}
    assert int((questions["kind"] == "two-topic").sum()) >= 10
    for kind, question, gold in zip(questions["kind"], questions["question"], questions["gold"]):
        assert all(isinstance(g, GoldPassage) and re.fullmatch(r"(command|manual)/[\w.-]+", g.source_id) for g in gold)
        assert all(5 <= len(g.phrase.split()) <= 12 for g in gold), gold
        assert (len({g.source_id for g in gold}) == 2) == (kind == "two-topic") == (len(gold) == 2)
        words = " ".join(re.findall(r"\w+", question.lower()))
        assert not any(" ".join(re.findall(r"\w+", g.phrase.lower())) in words for g in gold), question


def test_the_help_folder_is_read_one_source_per_page(kb):
    sources = set(kb.documents["source_id"])
    assert {"command/add_library", "command/target_link_libraries", "manual/cmake-buildsystem.7"} <= sources
    assert all(s.split("/")[0] in techdocs.CMAKE_FOLDERS for s in sources) and 30 <= len(sources) <= 300


def test_every_cmake_gold_passage_matches_one_or_a_few_chunks(kb, questions):
    chunks = kb.chunks
    hits = [N(kind="evidence", ref=ChunkRef(s, c), source=N(id=s), content=t)
            for s, c, t in zip(chunks["source_id"], chunks["chunk_id"], chunks["content"])]
    for qid, gold in zip(questions["id"], questions["gold"]):
        for g in gold:
            matched = sum(g.matches(h) for h in hits)
            assert 1 <= matched <= 3, (qid, g, matched)
