"""The entity graph's frames, built from integer codes (crux_nb.extract.graph_edges), equal the row-by-row build.

The reference below is the build as it was before issue 35's memory work: a dict per edge and evidence row,
ids from ``stable_id``. Both run on the offline model's real outputs of the bundled corpora (prose cut in
short chunks, so pairs span several chunks, and technical text with identifiers), with some chunks removed
so their refs are skipped.
"""

from collections import defaultdict

import pandas as pd
import pytest

import crux_nb
from crux_nb._hashing import stable_id
from crux_nb.extract import graph
from crux_nb.models import OfflineModel
from crux_nb.refs import EntityRef, encode_ref
from crux_nb.schema import coerce, empty_frame


def _reference_edges(mentions, related, chunk_sources):
    edges, evidence = [], []
    for chunk, eid in sorted(mentions):
        ent = encode_ref(EntityRef(eid))
        edge_id = stable_id("edge", {"type": "mentions", "from": chunk, "to": ent, "direction": "directed",
                                     "stage": "entities"})
        edges.append({"edge_id": edge_id, "type": "mentions", "from_ref": chunk, "to_ref": ent,
                      "direction": "directed", "description": None, "weight": 1.0, "stage": "entities"})
        evidence.append({"edge_id": edge_id, "source_id": chunk_sources[chunk], "chunk_ref": chunk,
                         "provenance": "derived"})
    for (a, b), entry in sorted(related.items()):
        ra, rb = sorted((encode_ref(EntityRef(a)), encode_ref(EntityRef(b))))
        edge_id = stable_id("edge", {"type": "related", "from": ra, "to": rb, "direction": "symmetric",
                                     "stage": "entities"})
        edges.append({"edge_id": edge_id, "type": "related", "from_ref": ra, "to_ref": rb, "direction": "symmetric",
                      "description": entry["description"], "weight": float(len(entry["chunks"])),
                      "stage": "entities"})
        evidence += [{"edge_id": edge_id, "source_id": chunk_sources[c], "chunk_ref": c, "provenance": "derived"}
                     for c in sorted(entry["chunks"])]
    # ordered as the knowledge base stores them (graph.with_entity_stage)
    edges = pd.DataFrame(edges).sort_values("edge_id", kind="stable") if edges else None
    evidence = (pd.DataFrame(evidence).sort_values(["edge_id", "chunk_ref", "provenance"], kind="stable")
                if evidence else None)
    return (coerce(edges, "edges") if edges is not None else empty_frame("edges"),
            coerce(evidence, "edge_evidence") if evidence is not None else empty_frame("edge_evidence"))


def _reference(outputs, chunk_sources):
    """(edges, evidence) and the entity records' first descriptions, row by row."""
    group_ids = graph._group_ids(outputs)
    mentions, related, described = set(), {}, {}
    for _source, output in outputs:
        lookup = {}
        for ent in output.get("entities", []):
            kind = ent.get("type")
            eid = group_ids.get(graph._label(ent["name"], kind)) or graph._id_for(ent["name"], kind)
            if ent.get("description"):
                described.setdefault(eid, ent["description"])
            for label in (ent["name"], *ent.get("aliases", [])):
                lookup.setdefault(graph._label(label, kind), eid)

        def resolve(name):
            return lookup.get("`" + name) or lookup.get(name.casefold()) or graph.entity_id_for(name)
        for m in output.get("mentions", []):
            if m["chunk_id"] in chunk_sources:
                mentions.add((m["chunk_id"], resolve(m["name"])))
        for r in output.get("related", []):
            a, b = sorted((resolve(r["from"]), resolve(r["to"])))
            chunks = [c for c in r.get("chunk_ids", []) if c in chunk_sources]
            if a == b or not chunks:
                continue
            entry = related.setdefault((a, b), {"chunks": set(), "description": None})
            entry["chunks"].update(chunks)
            if entry["description"] is None and r.get("description"):
                entry["description"] = r["description"]
    return (*_reference_edges(mentions, related, chunk_sources), described)


def _outputs(kb, per_call):
    """The offline model's outputs per source (``per_call`` chunks in each call) and the chunk -> source map."""
    model, chunks = OfflineModel(), kb.state.chunks
    outputs = defaultdict(lambda: {"entities": [], "mentions": [], "related": []})
    for source_id, part in chunks.groupby("source_id", sort=True):
        items = [{"id": r, "text": t} for r, t in zip(part["ref"], part["content"])]
        for i in range(0, len(items), per_call):
            out = model.extract(items[i:i + per_call])
            for key in ("entities", "mentions", "related"):
                outputs[source_id][key] += out[key]
    return sorted(outputs.items()), dict(zip(chunks["ref"], chunks["source_id"]))


@pytest.mark.parametrize("corpus", ["sample", "python_reference"])
def test_frames_equal_the_row_by_row_build(corpus):
    kb = (crux_nb.datasets.load_sample(chunk_size=300) if corpus == "sample"
          else crux_nb.datasets.load_python_reference(chunk_size=600))
    outputs, chunk_sources = _outputs(kb, per_call=3)
    for drop in (False, True):
        sources = dict(list(chunk_sources.items())[::2]) if drop else chunk_sources  # removed chunks: skipped
        entities, edges, evidence = graph.build_entity_frames(outputs, sources)
        ref_edges, ref_evidence, described = _reference(outputs, sources)
        assert (edges["type"] == "related").sum() > 100 and (ref_evidence.groupby("edge_id").size() > 1).any()
        pd.testing.assert_frame_equal(edges, ref_edges)
        pd.testing.assert_frame_equal(evidence, ref_evidence)
        firsts = entities.set_index("entity_id")["description"].dropna().to_dict()
        assert firsts == {e: d for e, d in described.items() if e in firsts}


def test_no_edges_gives_the_empty_frames():
    entities, edges, evidence = graph.build_entity_frames(
        [("a.md", {"entities": [{"name": "Ada Lovelace", "aliases": []}], "mentions": [], "related": []})], {})
    assert list(entities["entity_id"]) == ["ada-lovelace"]
    pd.testing.assert_frame_equal(edges, empty_frame("edges"))
    pd.testing.assert_frame_equal(evidence, empty_frame("edge_evidence"))


def test_rows_in_order_by_several_keys():
    from crux_nb.store.splice import ascending

    def in_order(rows, keys):  # the check with_entity_stage makes before keeping the new frames unsorted
        return ascending([rows[k] for k in keys])

    frame = pd.DataFrame({"a": ["a", "a", "b", "b"], "b": ["y", "z", "a", "b"]}).astype("str")
    assert in_order(frame, ["a", "b"]) and in_order(frame, ["a"])
    assert not in_order(frame.iloc[[1, 0, 2, 3]], ["a", "b"])
    assert in_order(frame.iloc[[1, 0, 2, 3]], ["a"])  # ties keep their order (a stable sort)
    assert not in_order(frame.iloc[[0, 2, 1, 3]], ["a"])
    assert not in_order(frame.assign(a=["a", None, "b", "b"]), ["a"])
