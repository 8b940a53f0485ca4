"""``crux_nb.store.integrity.check_tables`` (run by every ``crux_nb.open``) against a set-based oracle.

The check runs on the columns' Arrow arrays; the oracle below states each rule with Python sets, row by row.
Each crafted state breaks one rule (or none) and both must name the same problems.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import StorageError
from crux_nb.refs import DocumentRef, ParentRef, encode_ref
from crux_nb.schema import SCHEMAS
from crux_nb.store.integrity import check_tables
from crux_nb.store.state import KBState

MANIFEST = {"tables": {"embeddings": {}}}


def _kb() -> crux_nb.KnowledgeBase:
    kb = crux_nb.knowledge_base(id="integrity")
    kb.add_text("a.md", "# A\n\nAlpha notes.\n\n## Sub\n\nMore alpha about Ada.")
    kb.add_text("b.md", "# B\n\nBeta notes.")
    kb.add_text("c.md", "# C\n\nGamma notes.")
    kb.add_edges(pd.DataFrame({
        "from_ref": ["chunk:a.md:c0000", "chunk:b.md:c0000", "document:c.md", "chunk:c.md:c0000"],
        "to_ref": ["chunk:b.md:c0000", "parent:a.md:sub", "chunk:a.md:c0001", "document:a.md"],
        "type": ["references"] * 4,
        "evidence": [["chunk:a.md:c0000"], ["chunk:b.md:c0000"], ["chunk:c.md:c0000"], ["chunk:c.md:c0000"]]}))
    return kb


def _oracle(state: KBState) -> list[str]:
    documents = set(state.documents["source_id"].tolist())
    chunks = set(state.chunks["ref"].tolist())
    problems = [f"{t} of sources with no document row" for t in ("parents", "chunks")
                if not set(state.frame(t)["source_id"].tolist()) <= documents]
    evidence, edges = state.edge_evidence, state.edges
    if not set(evidence["chunk_ref"].tolist()) <= chunks:
        problems.append("edge evidence pointing at chunks that do not exist")
    if not set(evidence["edge_id"].tolist()) <= set(edges["edge_id"].tolist()):
        problems.append("edge evidence for edges that do not exist")
    if len(edges):
        existing = chunks | {encode_ref(DocumentRef(s)) for s in documents} | {
            encode_ref(ParentRef(s, p)) for s, p in zip(state.parents["source_id"], state.parents["parent_id"])}
        ends = edges["from_ref"].tolist() + edges["to_ref"].tolist()
        if any(not e.startswith("entity:") and e not in existing for e in ends):
            problems.append("edges between refs that do not exist")
        if not set(edges["edge_id"].tolist()) <= set(evidence["edge_id"].tolist()):
            problems.append("edges without evidence")
    return problems


def _problems(state: KBState) -> list[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_tables(Path("kb"), "g000001", MANIFEST, state)
    except StorageError as exc:
        assert exc.code == "inconsistent_generation"
        return exc.message.split("is inconsistent: ", 1)[1].rstrip(".").split("; ")
    return []


def _with(state: KBState, **frames: pd.DataFrame) -> KBState:
    return KBState(**{**{t: state.frame(t) for t in SCHEMAS}, **frames})


def test_a_consistent_state_passes_with_document_section_and_entity_ends():
    kb = _kb()
    kb.add_entities(pd.DataFrame({"entity_id": ["ada"], "canonical_name": ["Ada"]}))
    kb.add_edges(pd.DataFrame({"from_ref": ["chunk:a.md:c0001"], "to_ref": ["entity:ada"], "type": ["mentions"],
                               "evidence": [["chunk:a.md:c0001"]]}))
    assert len(kb.edges) == 5 and _oracle(kb.state) == [] and _problems(kb.state) == []


@pytest.mark.parametrize("break_it,expected", [
    (lambda s: {"documents": s.documents[s.documents["source_id"] != "b.md"]},
     ["parents of sources with no document row", "chunks of sources with no document row"]),
    (lambda s: {"chunks": s.chunks[s.chunks["source_id"] != "c.md"]},
     ["edge evidence pointing at chunks that do not exist", "edges between refs that do not exist"]),
    (lambda s: {"edges": s.edges.iloc[1:]}, ["edge evidence for edges that do not exist"]),
    (lambda s: {"edge_evidence": s.edge_evidence.iloc[1:]}, ["edges without evidence"]),
    (lambda s: {"parents": s.parents[s.parents["parent_id"] != "sub"]}, ["edges between refs that do not exist"]),
    (lambda s: {"edges": s.edges.assign(to_ref=s.edges["to_ref"].str.replace("document:a.md", "document:zz.md"))},
     ["edges between refs that do not exist"]),
    (lambda s: {"edges": s.edges.assign(from_ref=s.edges["from_ref"].str.replace("chunk:b", "chunk:x"))},
     ["edges between refs that do not exist"]),
])
def test_each_broken_rule_is_named(break_it, expected):
    state = _kb().state
    crafted = _with(state, **break_it(state))
    assert _oracle(crafted) == expected
    assert _problems(crafted) == expected


def test_random_row_drops_and_shuffles_agree_with_the_oracle():
    state = _kb().state
    rng = random.Random(36)
    seen = set()
    for _ in range(40):
        frames = {}
        for table in ("documents", "parents", "chunks", "edges", "edge_evidence"):
            frame = state.frame(table)
            if rng.random() < 0.4 and len(frame):
                frame = frames[table] = frame.drop(frame.index[rng.randrange(len(frame))])
            if rng.random() < 0.3:  # rows out of key order: the check cannot take its sorted shortcut
                frames[table] = frame.sample(frac=1.0, random_state=rng.randrange(1000))
        crafted = _with(state, **frames)
        expected = _oracle(crafted)
        assert _problems(crafted) == expected
        seen.add(tuple(expected))
    assert len(seen) >= 4  # the drops reached several different rules
