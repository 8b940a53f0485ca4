"""The public clustering seams (issue 13): ``community_graph``, ``cluster_graph``, ``kb.communities.records()``
and ``crux_nb.communities(incremental_engine=...)``; and global search's step-author stages."""

import json

import pytest

import crux_nb
from crux_nb.community import (LEAF_BUDGET, Community, CommunityGraph, cluster_graph, community_graph)
from crux_nb.datasets import sample_later_path, sample_path
from crux_nb.errors import ParameterError
from crux_nb.models import OfflineModel
from crux_nb.retrieval.globalsearch import BATCH_BUDGET, candidates, corpus_statistics, reduce, resolve, select_detail

from test_communities import TEXTS


def _kb(**options):
    kb = crux_nb.knowledge_base(id="s", communities=crux_nb.communities(model=OfflineModel(), **options))
    for source, text in TEXTS.items():
        kb.add_text(source, text)
    return kb


def test_clustering_the_community_graph_gives_what_prepare_stored():
    kb = _kb()
    assert kb.communities.records() == []  # nothing built yet, and reading builds nothing
    kb.communities.prepare(progress=False)
    graph = community_graph(kb)
    assert isinstance(graph, CommunityGraph) and graph.chunk_count == len(kb.chunks)
    direct = cluster_graph(graph)
    stored = kb.communities.records()
    assert all(isinstance(c, Community) for c in stored)
    assert sorted(c.community_id for c in direct) == sorted(c.community_id for c in stored)
    assert sorted(c.community_id for c in stored) == sorted(kb.communities.frame("communities")["community_id"])
    leaves = {c.community_id: c for c in direct if not c.child_ids}
    for c in stored:
        if not c.child_ids:  # leaves keep their members
            assert (c.chunk_refs, c.entity_refs) == (leaves[c.community_id].chunk_refs, leaves[c.community_id].entity_refs)
    assert all(c.estimated_chars <= LEAF_BUDGET for c in leaves.values())


def test_community_graph_of_some_sources_and_a_smaller_budget():
    kb = _kb()
    kb.extract_entities()
    some = community_graph(kb, sources=["team-0-0.md", "team-0-1.md"])
    assert some.chunk_count == 2 and all(n.startswith(("chunk:team-0-", "entity:")) for n in some.nodes)
    everything = community_graph(kb)
    small = cluster_graph(everything, budget=200)
    assert len([c for c in small if not c.child_ids]) > len([c for c in cluster_graph(everything) if not c.child_ids])


@pytest.mark.parametrize("kwargs, name", [
    ({"resolution": 0}, "resolution"), ({"resolution": float("nan")}, "resolution"), ({"resolution": True}, "resolution"),
    ({"seed": -1}, "seed"), ({"budget": 0}, "budget"), ({"max_children": 1}, "max_children"),
    ({"engine": "networkx"}, "engine"), ({"previous": "c-1"}, "previous"), ({"previous": [1, 2]}, "previous"),
])
def test_cluster_graph_checks_its_parameters(kwargs, name):
    graph = CommunityGraph(nodes=("chunk:a:1", "entity:x"), links=((0, 1, 1.0),), sizes=(5, 2), chunk_count=1)
    with pytest.raises(ParameterError, match=rf"^cluster_graph\(\): parameter '{name}' must be "):
        cluster_graph(graph, **kwargs)
    with pytest.raises(ParameterError, match=r"^cluster_graph\(\): parameter 'graph' must be a CommunityGraph"):
        cluster_graph({"nodes": ()})


def test_community_graph_checks_its_parameters():
    with pytest.raises(ParameterError, match=r"^community_graph\(\): parameter 'kb' must be a knowledge base"):
        community_graph("docs")
    with pytest.raises(ParameterError, match=r"^community_graph\(\): parameter 'sources' must be an iterable"):
        community_graph(_kb(), sources="team-0-0.md")


def test_incremental_engine_is_validated_shown_saved_and_not_in_the_fingerprint(tmp_path):
    with pytest.raises(ParameterError, match=r"^communities\(\): parameter 'incremental_engine' must be one of "
                                             r"'leidenalg', 'igraph'; got 'fast'\."):
        crux_nb.communities(model=OfflineModel(), incremental_engine="fast")
    default = crux_nb.communities(model=OfflineModel())
    igraph = crux_nb.communities(model=OfflineModel(), incremental_engine="igraph")
    assert default.incremental_engine == "leidenalg" and "incremental_engine" not in repr(default)
    assert "incremental_engine='igraph'" in repr(igraph)
    # how a tree is updated is not what it is: reports stay reusable, a ready generation stays ready
    assert default.strategy_fingerprint == igraph.strategy_fingerprint
    kb = _kb(incremental_engine="igraph")
    kb.communities.prepare(progress=False)
    kb.save(tmp_path / "kb")
    saved = json.loads((tmp_path / "kb" / "generations" / "g000001" / "manifest.json").read_text())["communities"]
    assert saved["incremental_engine"] == "igraph"
    back = crux_nb.open(tmp_path / "kb")
    assert back.communities.config.incremental_engine == "igraph" and back.communities.status() == "ready"
    del saved["incremental_engine"]  # a folder saved before the setting existed opens with the default
    from crux_nb.community.restore import restore_config

    assert restore_config(saved).incremental_engine == "leidenalg"


def test_prepare_updates_incrementally_with_the_configured_engine():
    """An added source: prepare() gives exactly cluster_graph(previous=..., engine=<configured>), and the two
    engines differ on this corpus (so the setting is what selected the engine)."""
    built = {}
    for engine in ("leidenalg", "igraph"):
        kb = crux_nb.knowledge_base(id="e", communities=crux_nb.communities(model=OfflineModel(),
                                                                            incremental_engine=engine))
        kb.add_path(sample_path())
        kb.communities.prepare(progress=False)
        before = kb.communities.records()
        kb.add_path(sample_later_path())
        kb.communities.prepare(progress=False)
        built[engine] = sorted(c.community_id for c in kb.communities.records())
        direct = cluster_graph(community_graph(kb), previous=before, engine=engine)
        assert built[engine] == sorted(c.community_id for c in direct)
    assert built["leidenalg"] != built["igraph"]


def test_global_search_stages_reproduce_the_step_in_other_batches():
    kb = crux_nb.knowledge_base(id="g", communities=crux_nb.communities(model=OfflineModel()))
    kb.add_path(sample_path())
    kb.communities.prepare(progress=False)
    model = OfflineModel()
    question = "What changed in the launch plan?"  # both details have findings for it (the overview maps the root)
    fresh = resolve(kb.communities)
    assert fresh.coverage == "exact" and fresh.units
    units = list(fresh.units)
    for detail in ("detailed", "overview"):
        chosen = select_detail(units, detail)
        parents = {u.parent_id for u in units if u.parent_id}
        assert chosen and all((u.community_id in parents) == (detail == "overview") for u in chosen)
        batches = [[]]
        for u in chosen:  # the step's packing: (level, id) order up to BATCH_BUDGET characters
            if batches[-1] and sum(x.chars for x in batches[-1]) + u.chars > BATCH_BUDGET:
                batches.append([])
            batches[-1].append(u)
        corpus = corpus_statistics(kb.state, None, question)  # the same statistics on every unit of every batch
        cands = [c for b in batches
                 for c in candidates(model.map_findings(question, [{**u.payload(), "corpus": corpus} for u in b]))]
        hits = reduce(cands, units, namespace=kb.namespace, limit=10)
        step = kb.recipe(steps=[crux_nb.global_search(model=model, detail=detail, limit=10)]).retrieve(question)
        assert [(h.content, h.score, h.citation.finding_target) for h in hits] == \
               [(h.content, h.score, h.citation.finding_target) for h in step]
        assert hits
