"""Graph exports: kb.to_networkx / to_igraph, GraphML, edges back from networkx, the expansion subgraph."""

from __future__ import annotations

import json
from collections import Counter

import networkx as nx
import pandas as pd
import pytest

import crux_nb
from crux_nb.datasets import load_sample
from crux_nb.errors import CruxError, InputError, ParameterError
from crux_nb.io import edges_from_networkx, expansion_graph, write_graphml
from crux_nb.refs import encode_ref
from crux_nb.retrieval import expand_relations, retrieve

USER_EDGE = pd.DataFrame({"from_ref": ["chunk:team-data.md:c0000"], "to_ref": ["chunk:team-platform.md:c0000"],
                          "type": ["see_also"], "evidence": [["chunk:team-data.md:c0000", "chunk:team-platform.md:c0001"]],
                          "weight": [2.5], "description": ["both teams own the pipeline"]})


@pytest.fixture(scope="module")
def kb():
    kb = load_sample()
    kb.extract_entities(progress=False)
    kb.add_edges(USER_EDGE)
    return kb


def _edge_set(graph) -> Counter:
    return Counter((u, v, d["type"]) for u, v, d in graph.edges(data=True))


def test_nodes_and_edges_match_the_frames(kb):
    graph = kb.to_networkx()
    assert isinstance(graph, nx.MultiDiGraph)
    assert set(graph) == set(kb.chunks["ref"]) | set(kb.entities["ref"])
    edges = kb.edges
    symmetric = int((edges["direction"] == "symmetric").sum())
    assert graph.number_of_edges() == len(edges) + symmetric
    support = kb.edge_evidence.groupby("edge_id")["chunk_ref"].apply(lambda s: tuple(sorted(set(s))))
    for row in edges.itertuples():
        data = graph.edges[row.from_ref, row.to_ref, row.edge_id]
        assert (data["type"], data["direction"], data["weight"]) == (row.type, row.direction, row.weight)
        assert data["evidence_refs"] == support[row.edge_id] and data["evidence"] == len(support[row.edge_id])
        if row.direction == "symmetric":
            assert graph.edges[row.to_ref, row.from_ref, row.edge_id] == data
    user = edges[edges["type"] == "see_also"].iloc[0]
    assert graph.edges[user.from_ref, user.to_ref, user.edge_id]["description"] == "both teams own the pipeline"


def test_node_attributes(kb):
    graph = kb.to_networkx(include_structural=True)
    chunk = graph.nodes["chunk:team-data.md:c0000"]
    assert chunk == {"kind": "chunk", "label": "team-data.md c0000", "source_id": "team-data.md", "title": "Data Team"}
    entity_ref, name = kb.entities[["ref", "canonical_name"]].iloc[0]
    assert graph.nodes[entity_ref]["kind"] == "entity" and graph.nodes[entity_ref]["title"] == name
    assert "source_id" not in graph.nodes[entity_ref]  # missing values are left out, not None/NaN
    doc = graph.nodes["document:team-data.md"]
    assert doc["kind"] == "document" and doc["title"] == kb.documents.set_index("source_id").loc["team-data.md", "title"]
    assert Counter(kind for _, kind in graph.nodes(data="kind")) == {
        "chunk": len(kb.chunks), "entity": len(kb.entities), "document": len(kb.documents), "parent": len(kb.parents)}


def test_structural_edges_are_the_readers(kb):
    graph = kb.to_networkx(include_structural=True)
    structural = [(u, v, d["type"]) for u, v, d in graph.edges(data=True) if d.get("structural")]
    counts = Counter(t for _, _, t in structural)
    assert counts["sequence"] == len(kb.chunks) - len(kb.documents)
    assert counts["hierarchy"] == len(kb.parents) + len(kb.chunks)
    reader = kb.reader
    for ref in ("document:team-data.md", "parent:team-data.md:data-team", "chunk:team-data.md:c0001"):
        out = {(encode_ref(n.ref), n.type) for n in reader.neighbors(ref, types=["hierarchy", "sequence"], direction="out")}
        assert {(v, d["type"]) for _, v, d in graph.out_edges(ref, data=True) if d.get("structural")} == out
    assert kb.to_networkx().number_of_edges() == graph.number_of_edges() - len(structural)


def test_types_keep_only_those_edges(kb):
    graph = kb.to_networkx(types=["related"])
    assert {d["type"] for _, _, d in graph.edges(data=True)} == {"related"}
    assert graph.number_of_edges() == 2 * int((kb.edges["type"] == "related").sum())
    assert set(graph) == set(kb.chunks["ref"]) | set(kb.entities["ref"])
    only_sequence = kb.to_networkx(types=["sequence"], include_structural=True)
    assert {d["type"] for _, _, d in only_sequence.edges(data=True)} == {"sequence"}


def test_igraph_is_the_same_graph(kb):
    graph, ig_graph = kb.to_networkx(include_structural=True), kb.to_igraph(include_structural=True)
    assert ig_graph.is_directed() and ig_graph.vcount() == graph.number_of_nodes()
    assert ig_graph.vs["name"] == list(graph)
    names = ig_graph.vs["name"]
    assert Counter((names[e.source], names[e.target], e["type"]) for e in ig_graph.es) == _edge_set(graph)
    first = ig_graph.es[ig_graph.es["edge_id"].index(kb.edges["edge_id"].iloc[0])]
    row = kb.edges.iloc[0]
    assert (first["type"], first["direction"], first["weight"]) == (row["type"], row["direction"], row["weight"])
    entity = ig_graph.vs.find(name=kb.entities["ref"].iloc[0])
    assert entity["kind"] == "entity" and entity["source_id"] is None


def test_views_export_what_the_view_sees(kb):
    view = kb.view(id="product", where={"team": "product"})
    members = view.members()
    graph = kb.to_networkx(view=view, include_structural=True)
    chunk_refs = set(kb.chunks.loc[kb.chunks["source_id"].isin(members), "ref"])
    assert {n for n, kind in graph.nodes(data="kind") if kind == "chunk"} == chunk_refs
    assert all(d["source_id"] in members for _, d in graph.nodes(data=True) if d["kind"] != "entity")
    for u, v, d in graph.edges(data=True):
        assert set(d["evidence_refs"]) <= chunk_refs and d["evidence"] == len(d["evidence_refs"])
    # an edge whose evidence lies outside the view is not exported; one with some evidence inside is, counted there
    everything = kb.to_networkx()
    outside = [(u, v, k) for u, v, k, d in everything.edges(keys=True, data=True) if not set(d["evidence_refs"]) & chunk_refs]
    partly = [(u, v, k) for u, v, k, d in everything.edges(keys=True, data=True)
              if set(d["evidence_refs"]) & chunk_refs and not set(d["evidence_refs"]) <= chunk_refs]
    assert outside and partly
    assert not any(graph.has_edge(*e) for e in outside)
    assert all(graph.edges[e]["evidence"] < everything.edges[e]["evidence"] for e in partly)
    entities = {n for n, kind in graph.nodes(data="kind") if kind == "entity"}
    assert 0 < len(entities) < len(kb.entities) and all(graph.degree(e) > 0 for e in entities)
    assert kb.to_igraph(view=view).vcount() == kb.to_networkx(view=view).number_of_nodes()


def test_a_pinned_view_whose_members_changed_refuses_to_export():
    kb = load_sample()
    view = kb.view(id="design", where={"team": "design"})
    pinned = view.at(view.resolve().revision)
    assert kb.to_networkx(view=pinned).number_of_nodes() > 0
    source = sorted(pinned.members())[0]
    kb.add_text(source, "# Replaced\n\nNew text.", metadata={"team": "design"})
    with pytest.raises(CruxError) as err:
        kb.to_networkx(view=pinned)
    assert err.value.code == "revision_not_replayable"


def test_parameters_are_checked(kb):
    with pytest.raises(ParameterError, match="parameter 'types'"):
        kb.to_networkx(types="related")
    with pytest.raises(ParameterError, match="parameter 'include_structural'"):
        kb.to_networkx(include_structural="yes")
    other = crux_nb.knowledge_base(id="other")
    other.add_text("a.md", "# A\n\nText.", metadata={"team": "x"})
    with pytest.raises(ParameterError, match="parameter 'view'"):
        kb.to_networkx(view=other.view(id="x", where={"team": "x"}))
    with pytest.raises(ParameterError, match="parameter 'graph'"):
        edges_from_networkx(kb.edges)


def test_exports_are_deterministic(kb):
    a, b = kb.to_networkx(include_structural=True), kb.to_networkx(include_structural=True)
    assert list(a.nodes(data=True)) == list(b.nodes(data=True))
    assert list(a.edges(keys=True, data=True)) == list(b.edges(keys=True, data=True))


def test_graphml_opens_in_networkx_again(kb, tmp_path):
    path = write_graphml(kb, tmp_path / "lumen.graphml", include_structural=True)
    back = nx.read_graphml(path, force_multigraph=True)
    graph = kb.to_networkx(include_structural=True)
    assert back.is_directed() and back.is_multigraph()
    assert list(back.nodes(data=True)) == list(graph.nodes(data=True))
    assert back.number_of_edges() == graph.number_of_edges()
    for u, v, key, data in graph.edges(keys=True, data=True):
        read = back.edges[u, v, key]
        assert json.loads(read.pop("evidence_refs")) == list(data["evidence_refs"])
        assert {k: val for k, val in read.items() if k != "id"} == {k: val for k, val in data.items() if k != "evidence_refs"}


def _semantic(kb) -> set:
    evidence = kb.edge_evidence.groupby("edge_id")["chunk_ref"].apply(frozenset)
    return {(r.from_ref, r.to_ref, r.type, r.direction, r.weight, r.description if isinstance(r.description, str) else None,
             evidence[r.edge_id]) for r in kb.edges.itertuples()}


@pytest.mark.parametrize("through_graphml", [False, True])
def test_edges_round_trip_into_a_fresh_knowledge_base(kb, tmp_path, through_graphml):
    if through_graphml:
        graph = nx.read_graphml(write_graphml(kb, tmp_path / "kb.graphml", include_structural=True))
    else:
        graph = kb.to_networkx(include_structural=True)
    frame = edges_from_networkx(graph)
    assert len(frame) == len(kb.edges)  # structural skipped, symmetric edges once
    fresh = load_sample()
    fresh.add_edges(frame)
    assert _semantic(fresh) == _semantic(kb)
    assert len(fresh.entities) == len(kb.entities)
    assert fresh.to_networkx().number_of_edges() == kb.to_networkx().number_of_edges()


def test_edges_from_a_plain_graph_use_the_defaults():
    kb = crux_nb.knowledge_base(id="g")
    kb.add_text("a.md", "Ada Lovelace worked with Charles Babbage on the engine.")
    graph = nx.DiGraph()
    graph.add_edge("entity:ada", "entity:engine", type="designed", weight=3.0)
    graph.add_edge("entity:charles", "entity:engine")
    frame = edges_from_networkx(graph, type="built", evidence=["chunk:a.md:c0000"])
    assert frame[["type", "direction", "weight"]].values.tolist()[0] == ["designed", "directed", 3.0]
    assert frame["type"].tolist()[1] == "built"
    kb.add_edges(frame)
    assert sorted(kb.edges["type"]) == ["built", "designed"]
    assert kb.edges.set_index("type").loc["built", "weight"] == 1.0


def test_edges_from_networkx_validates_like_add_edges():
    kb = crux_nb.knowledge_base(id="g")
    kb.add_text("a.md", "Ada Lovelace worked with Charles Babbage.")
    untyped = nx.Graph([("entity:ada", "entity:charles")])
    with pytest.raises(InputError, match="has no type"):
        edges_from_networkx(untyped, evidence=["chunk:a.md:c0000"])
    with pytest.raises(InputError, match="no evidence"):
        edges_from_networkx(untyped, type="knows")
    with pytest.raises(ParameterError, match="parameter 'direction'"):
        edges_from_networkx(untyped, type="knows", direction="both")
    # what add_edges rejects, it rejects from a graph too, and the knowledge base is unchanged
    for graph, message in ((nx.Graph([("entity:ada", "chunk:b.md:c0000")]), "does not exist"),
                           (nx.Graph([("entity:ada", "entity:charles")]), "not a chunk")):
        evidence = ["chunk:a.md:c0000"] if message == "does not exist" else ["chunk:zzz.md:c0000"]
        with pytest.raises(InputError, match=message):
            kb.add_edges(edges_from_networkx(graph, type="knows", evidence=evidence))
    reserved = nx.DiGraph()
    reserved.add_edge("entity:ada", "entity:charles", type="hierarchy")  # not marked structural: a user's edge
    with pytest.raises(InputError):
        kb.add_edges(edges_from_networkx(reserved, evidence=["chunk:a.md:c0000"]))
    assert len(kb.edges) == 0


@pytest.fixture(scope="module")
def expanded(kb):
    recipe = kb.recipe(steps=[retrieve(limit=3), expand_relations(limit=6, depth=2)])
    return recipe.retrieve_with_trace("Who owns the launch plan?")


def test_expansion_graph_is_the_subgraph_behind_one_query(kb, expanded):
    graph = expansion_graph(expanded, kb=kb)
    details = next(s.details for s in expanded.trace.steps if s.step_id == "expand-relations")
    added = [h for h in expanded.hits if h.provenance is not None and h.provenance.graph is not None]
    assert added and {n for n, role in graph.nodes(data="role") if role == "added"} == {x.ref for x in details["expansions"]}
    assert all(graph.nodes[s]["role"] in ("seed", "added") for s in details["seeds"])
    for x in details["expansions"]:
        assert graph.nodes[x.ref]["score"] == x.score and graph.nodes[x.ref]["seed"] == x.seed
        for a, b, etype in zip(x.path, x.path[1:], x.edges):
            assert graph.has_edge(a, b, key=etype)
    uses = Counter((a, b, t) for x in details["expansions"] for a, b, t in zip(x.path, x.path[1:], x.edges))
    assert {(u, v, k): d["paths"] for u, v, k, d in graph.edges(keys=True, data=True)} == dict(uses)
    names = dict(zip(kb.entities["ref"], kb.entities["canonical_name"]))
    assert all(graph.nodes[n]["label"] == names[n] for n in graph if n.startswith("entity:"))
    # every path node is a node of the whole export: the subgraph lies inside the knowledge graph
    assert set(graph) <= set(kb.to_networkx())
    assert list(expansion_graph(expanded.trace).nodes) == list(graph.nodes)


def test_expansion_graph_needs_an_expansion(kb):
    result = kb.recipe(steps=[retrieve(limit=3)]).retrieve_with_trace("launch plan")
    with pytest.raises(ParameterError, match="expand_relations"):
        expansion_graph(result)


def test_expansion_view_exports_its_subgraph(kb, expanded):
    from crux_nb.widgets import ExpansionView

    view = ExpansionView(expanded, kb=kb)
    assert list(view.to_networkx().edges(keys=True, data=True)) == list(expansion_graph(expanded, kb=kb).edges(keys=True, data=True))
    assert dict(view.to_networkx().nodes(data="label")) == dict(expansion_graph(expanded, kb=kb).nodes(data="label"))
    view.filter(max_distance=0)
    shown = {x.ref for x in view.visible}
    assert {n for n, role in view.to_networkx(shown_only=True).nodes(data="role") if role == "added"} == shown
