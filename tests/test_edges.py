import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import InputError, RefError


@pytest.fixture
def kb2():
    kb = crux_nb.knowledge_base(id="e")
    kb.add_text("a", "# A\n\n" + "Alpha one is the first paragraph of source a.\n\nAlpha two is the second paragraph of it.", chunk_size=50)
    kb.add_text("b", "Beta one.", format="text")
    return kb


def edges(*rows):
    return pd.DataFrame(rows)


def test_add_edges_with_evidence_and_entities(kb2):
    kb2.add_edges(edges(
        {"from_ref": "chunk:a:c0000", "to_ref": "entity:alpha", "type": "mentions", "evidence": ["chunk:a:c0000"]},
        {"from_ref": "entity:beta", "to_ref": "entity:alpha", "type": "related", "direction": "symmetric",
         "evidence": ["chunk:a:c0001", "chunk:b:c0000"], "description": "both Greek", "weight": 2.5},
    ))
    e = kb2.edges
    assert e["type"].tolist() == sorted(e["type"].tolist(), key=lambda t: e.set_index("type").loc[t, "edge_id"])
    related = e[e["type"] == "related"].iloc[0]
    assert (related["from_ref"], related["to_ref"]) == ("entity:alpha", "entity:beta")  # symmetric: sorted ends
    assert related["weight"] == 2.5 and related["description"] == "both Greek" and related["stage"] == "user"
    ev = kb2.edge_evidence
    assert set(ev["chunk_ref"]) == {"chunk:a:c0000", "chunk:a:c0001", "chunk:b:c0000"}
    assert set(ev["provenance"]) == {"exact"}
    assert kb2.entities["entity_id"].tolist() == ["alpha", "beta"]
    assert kb2.entities["canonical_name"].tolist() == ["alpha", "beta"]


def test_same_edge_twice_unions_evidence(kb2):
    row = {"from_ref": "entity:x", "to_ref": "entity:y", "type": "related", "direction": "symmetric"}
    kb2.add_edges(edges({**row, "evidence": ["chunk:a:c0000"]}))
    kb2.add_edges(edges({**row, "from_ref": "entity:y", "to_ref": "entity:x", "evidence": ["chunk:b:c0000"],
                         "description": "late description"}))
    assert len(kb2.edges) == 1 and kb2.edges["description"].iloc[0] == "late description"
    assert sorted(kb2.edge_evidence["chunk_ref"]) == ["chunk:a:c0000", "chunk:b:c0000"]


BAD = [
    ({"type": "has:colon"}, InputError, "without ':'"),
    ({"type": "50%"}, InputError, "without ':'"),
    ({"type": ""}, InputError, "non-empty"),
    ({"type": "sequence"}, InputError, "structural"),
    ({"direction": "both"}, InputError, "'directed' or 'symmetric'"),
    ({"from_ref": "nonsense"}, RefError, "not a valid knowledge ref"),
    ({"from_ref": "chunk:a:c9999"}, InputError, "does not exist"),
    ({"evidence": []}, InputError, "evidence is empty"),
    ({"evidence": "chunk:a:c0000"}, InputError, "must be a list"),
    ({"evidence": ["entity:x"]}, RefError, "must be a chunk ref"),
    ({"evidence": ["chunk:zz:c0000"]}, InputError, "not a chunk of this knowledge base"),
    ({"weight": -1}, InputError, "positive number"),
]


@pytest.mark.parametrize("change,error,message", BAD)
def test_bad_edges_are_rejected_and_kb_unchanged(kb2, change, error, message):
    before = {k: v.copy() for k, v in kb2.frames().items()}
    good = {"from_ref": "chunk:a:c0000", "to_ref": "entity:x", "type": "mentions", "evidence": ["chunk:a:c0000"]}
    with pytest.raises(error, match=message) as info:
        kb2.add_edges(edges(good, {**good, **change}))
    assert "row 1" in str(info.value)
    for name, frame in before.items():
        pd.testing.assert_frame_equal(frame, kb2.frames()[name])


def test_missing_columns(kb2):
    with pytest.raises(InputError, match="missing column"):
        kb2.add_edges(pd.DataFrame({"from_ref": ["entity:x"]}))


def test_removing_a_source_leaves_no_dangling_edges_or_evidence(kb2):
    kb2.add_edges(edges(
        {"from_ref": "chunk:a:c0000", "to_ref": "entity:x", "type": "mentions", "evidence": ["chunk:a:c0000"]},
        {"from_ref": "entity:x", "to_ref": "entity:y", "type": "related", "direction": "symmetric",
         "evidence": ["chunk:a:c0001", "chunk:b:c0000"]},
        {"from_ref": "entity:y", "to_ref": "entity:z", "type": "related", "evidence": ["chunk:a:c0001"]},
        {"from_ref": "chunk:b:c0000", "to_ref": "document:a", "type": "references", "evidence": ["chunk:b:c0000"]},
    ))
    kb2.remove("a")
    e = kb2.edges
    assert e["type"].tolist() == ["related"]  # only the edge still supported by b survives
    assert kb2.edge_evidence["chunk_ref"].tolist() == ["chunk:b:c0000"]
    assert kb2.entities["entity_id"].tolist() == ["x", "y"]
    assert set(kb2.edge_evidence["edge_id"]) <= set(e["edge_id"])
    refs = set(kb2.chunks["ref"]) | {"document:b"}
    for col in ("from_ref", "to_ref"):
        assert all(r.startswith("entity:") or r in refs for r in e[col])


def test_replacing_a_source_drops_evidence_from_its_old_chunks(kb2):
    kb2.add_edges(edges({"from_ref": "entity:x", "to_ref": "entity:y", "type": "related",
                         "evidence": ["chunk:b:c0000"]}))
    kb2.add_text("b", "Beta rewritten.", format="text")
    assert kb2.edges.empty and kb2.edge_evidence.empty and kb2.entities.empty


def test_add_entities(kb2):
    kb2.add_entities(pd.DataFrame({"entity_id": ["x"], "canonical_name": ["Xavier"], "aliases": [["X", "Xav"]],
                                   "type": ["person"]}))
    row = kb2.entities.iloc[0]
    assert (row["canonical_name"], row["aliases"], row["type"], row["ref"]) == ("Xavier", ("X", "Xav"), "person", "entity:x")
    with pytest.raises(InputError, match="aliases"):
        kb2.add_entities(pd.DataFrame({"entity_id": ["y"], "canonical_name": ["Y"], "aliases": ["Y"]}))
    with pytest.raises(InputError, match="non-empty"):
        kb2.add_entities(pd.DataFrame({"entity_id": [""], "canonical_name": ["Y"]}))
