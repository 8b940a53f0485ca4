"""Entities and edges of a GraphRAG import (the second half of ``read_graphrag``'s builder).

``mentions`` come from each entity's text units; ``related`` from the relationships table, one symmetric
edge per entity pair (weights added, descriptions joined), with the relationship's text units as evidence.
Relationship ends missing from the entities table become placeholder entities.
"""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .._hashing import stable_id
from ..errors import InputError
from ..refs import EntityRef, encode_ref
from ..schema import coerce, empty_frame
from .graphrag_tables import missing

#: A merged relationship's weight never overflows to inf (``add_edges`` refuses non-finite weights).
_MAX_WEIGHT = 1e300

STAGE = "graphrag"
PROVENANCE = "derived"
_MAP_COLUMNS = ["edge_id", "graphrag_id", "human_readable_id", "source", "target", "weight", "combined_degree"]


class EntityEdgeBuilder:
    """Mixin of the GraphRAG graph builder: entities, then edges (needs ``t``, ``warn``, ``notes``,
    ``known_chunks`` and the chunk maps that the builder's ``chunks()`` made)."""

    # -------------------------------------------------------------- entities
    def entities(self) -> None:
        t = self.t
        frame = t.frames["entities"]
        ids = t.column("entities", "id")
        hrid = t.column("entities", "human_readable_id")
        rows, map_rows, self.entity_of_title, self.entity_of_id = [], [], {}, {}
        tu_lists = t.column("entities", "text_unit_ids", None)
        if not t.has("entities", "text_unit_ids") and t.has("text_units", "entity_ids"):
            by_entity: dict[str, list[str]] = {}
            for tu, ents in zip(t.column("text_units", "id"), t.column("text_units", "entity_ids")):
                for e in ents:
                    by_entity.setdefault(e, []).append(tu)
            tu_lists = [by_entity.get(i, []) for i in ids]
        self.entity_chunks: dict[str, tuple[str, ...]] = {}
        self.entity_hrid: dict[str, tuple[str, ...]] = {}
        unknown_rows, unmentioned = [], []
        for k, rec in enumerate(frame.to_dict("records")):
            title = (rec["title"] or "").strip()
            if not title:
                self.notes.append(f"entity row {k} has no title and was skipped")
                continue
            eid = ids[k] if ids[k] else title
            if eid in self.entity_of_id:
                raise InputError(f"GraphRAG entity id {eid!r} is repeated.", code="graphrag_invalid_value")
            ref = encode_ref(EntityRef(eid))
            self.entity_of_id[eid] = ref
            self.entity_of_title.setdefault(title, ref)
            if ids[k] and any(ord(ch) < 32 for ch in eid):
                raise InputError(f"GraphRAG table {t.files['entities']!r}, column 'id', row {k}: entity id {eid!r} "
                                 "contains control characters.", code="graphrag_invalid_value",
                                 hint="entity ids become entity refs, which must be printable.")
            before = self.unknown_tu
            chunks = tuple(self.known_chunks(tu_lists[k] or []))
            if self.unknown_tu > before:
                unknown_rows.append(k)
            if not chunks:
                unmentioned.append(k)
            self.entity_chunks[ref] = chunks
            self.entity_hrid[str(k if hrid[k] is None else hrid[k])] = chunks
            rows.append({"entity_id": eid, "ref": ref, "canonical_name": title, "type": _text(rec.get("type")),
                         "aliases": (), "description": _text(rec.get("description"))})
            map_rows.append({"entity_id": eid, "graphrag_id": ids[k], "human_readable_id": k if hrid[k] is None
                             else hrid[k], "title": title, "frequency": rec.get("frequency"),
                             "degree": rec.get("degree"), "placeholder": False})
        self.entity_rows, self.entity_map_rows = rows, map_rows
        column = "text_unit_ids" if t.has("entities", "text_unit_ids") else "id (text_units.entity_ids)"
        self.warn("unknown_text_unit_ids", "entities", column, unknown_rows,
                  "text unit ids that are not in the text_units table were ignored")
        self.warn("entities_without_mentions", "entities", column, unmentioned,
                  "entities no known text unit mentions were kept without 'mentions' edges")

    def _entity_for_title(self, title: str) -> str:
        ref = self.entity_of_title.get(title)
        if ref is None:  # a relationship end the entities table lacks: a placeholder entity
            eid = title if title not in self.entity_of_id else f"{title} (graphrag title)"
            ref = encode_ref(EntityRef(eid))
            self.entity_of_id[eid] = self.entity_of_title[title] = ref
            self.entity_rows.append({"entity_id": eid, "ref": ref, "canonical_name": title, "type": None,
                                     "aliases": (), "description": None})
            self.entity_map_rows.append({"entity_id": eid, "graphrag_id": None, "human_readable_id": None,
                                         "title": title, "frequency": None, "degree": None, "placeholder": True})
            self.placeholders += 1
        return ref

    # ----------------------------------------------------------------- edges
    def edges(self) -> None:
        edges, evidence = self._mention_edges()
        self.n_mentions = len(edges)
        merged, map_rows = self._relationships()
        for m in merged.values():
            edges.append({"edge_id": m["edge_id"], "type": "related", "from_ref": m["ends"][0], "to_ref": m["ends"][1],
                          "direction": "symmetric", "description": "\n".join(m["desc"]) or None,
                          "weight": m["weight"], "stage": STAGE})
            evidence += [{"edge_id": m["edge_id"], "source_id": self.source_of_chunk[c], "chunk_ref": c,
                          "provenance": PROVENANCE} for c in m["chunks"]]
        self.n_related = len(merged)
        self.rel_map = pd.DataFrame(map_rows, columns=_MAP_COLUMNS)
        self.edge_frame = _frame(edges, "edges", ["edge_id"])
        self.evidence_frame = _frame(evidence, "edge_evidence", ["edge_id", "chunk_ref", "provenance"])

    def _mention_edges(self) -> tuple[list[dict], list[dict]]:
        """A ``mentions`` edge (chunk → entity) per text unit of each entity, with that chunk as evidence."""
        pairs = [(chunk, ref) for ref, chunks in self.entity_chunks.items() for chunk in chunks]
        edges = [{"edge_id": stable_id("edge", {"type": "mentions", "from": c, "to": e, "direction": "directed",
                                                "stage": STAGE}), "type": "mentions", "from_ref": c, "to_ref": e,
                  "direction": "directed", "description": None, "weight": 1.0, "stage": STAGE}
                 for c, e in pairs]
        evidence = [{"edge_id": edge["edge_id"], "source_id": self.source_of_chunk[edge["from_ref"]],
                     "chunk_ref": edge["from_ref"], "provenance": PROVENANCE} for edge in edges]
        return edges, evidence

    def _relationship_units(self, ids: list) -> list:
        """The text unit ids of each relationship (from ``text_units.relationship_ids`` when the
        relationships table has none)."""
        t = self.t
        if t.has("relationships", "text_unit_ids") or not t.has("text_units", "relationship_ids"):
            return t.column("relationships", "text_unit_ids", None)
        by_rel: dict[str, list[str]] = {}
        for tu, rels in zip(t.column("text_units", "id"), t.column("text_units", "relationship_ids")):
            for r in rels:
                by_rel.setdefault(r, []).append(tu)
        return [by_rel.get(i, []) for i in ids]

    def _relationships(self) -> tuple[dict[str, dict], list[dict]]:
        """The related edges by id (merged per entity pair), and one id-map row per relationship."""
        t = self.t
        ids, hrid = t.column("relationships", "id"), t.column("relationships", "human_readable_id")
        tu_lists = self._relationship_units(ids)
        merged: dict[str, dict] = {}
        map_rows, self.rel_hrid, self.rel_dropped = [], {}, 0
        dropped_rows, placeholder_rows, bad_weights, real_titles = [], [], [], set(self.entity_of_title)
        for k, rec in enumerate(t.frames["relationships"].to_dict("records")):
            a, b = (rec["source"] or "").strip(), (rec["target"] or "").strip()
            h = k if hrid[k] is None else hrid[k]
            chunks = self.known_chunks(tu_lists[k] or []) if a and b else []
            row = {"edge_id": None, "graphrag_id": ids[k], "human_readable_id": h, "source": a, "target": b,
                   "weight": rec.get("weight"), "combined_degree": rec.get("combined_degree")}
            map_rows.append(row)
            if not chunks:
                self.rel_dropped += 1
                dropped_rows.append(k)
                continue
            if a not in real_titles or b not in real_titles:
                placeholder_rows.append(k)
            row["edge_id"] = self._merge_relationship(merged, a, b, rec, chunks, bad_weights, k)
            self.rel_hrid[str(h)] = tuple(chunks)
        self._relationship_notes(bad_weights, dropped_rows, placeholder_rows)
        return merged, map_rows

    def _merge_relationship(self, merged: dict[str, dict], a: str, b: str, rec: dict, chunks: list[str],
                            bad_weights: list[int], row: int) -> str:
        """Add one relationship to the edge of its entity pair; returns that edge's id."""
        ends = sorted((self._entity_for_title(a), self._entity_for_title(b)))
        edge_id = stable_id("edge", {"type": "related", "from": ends[0], "to": ends[1], "direction": "symmetric",
                                     "stage": STAGE})
        weight = rec.get("weight")
        if weight is None or not math.isfinite(weight) or not weight > 0:  # inf, NaN, 0 and negatives alike
            bad_weights.append(row)
            weight = 1.0
        entry = merged.setdefault(edge_id, {"edge_id": edge_id, "ends": ends, "weight": 0.0, "desc": [], "chunks": []})
        entry["weight"] = min(entry["weight"] + float(weight), _MAX_WEIGHT)  # a sum of huge weights stays finite
        desc = _text(rec.get("description"))
        if desc and desc not in entry["desc"]:
            entry["desc"].append(desc)
        entry["chunks"] += [c for c in chunks if c not in entry["chunks"]]
        return edge_id

    def _relationship_notes(self, bad_weights: list[int], dropped_rows: list[int], placeholder_rows: list[int]) -> None:
        if bad_weights:
            self.notes.append(f"{len(bad_weights)} relationships without a positive weight were given weight 1.0")
        self.warn("invalid_weights", "relationships", "weight", bad_weights,
                  "relationship weights that are missing, not finite, zero or negative were given weight 1.0")
        if self.rel_dropped:
            self.notes.append(f"{self.rel_dropped} relationships without a known text unit were left out "
                              "(every crux_nb edge needs evidence)")
        self.warn("relationships_without_evidence", "relationships", "text_unit_ids", dropped_rows,
                  "relationships without a known text unit were left out (every crux_nb edge needs evidence)")
        self.warn("placeholder_entities", "relationships", "source/target", placeholder_rows,
                  "relationship ends missing from the entities table became placeholder entities "
                  "(kb.graphrag.entities['placeholder'])")


def _text(value: Any) -> str | None:
    return None if missing(value) or not str(value).strip() else str(value)


def _frame(rows: list[dict], table: str, by: list[str]) -> pd.DataFrame:
    if not rows:
        return empty_frame(table)
    frame = coerce(pd.DataFrame(rows), table)
    return frame.sort_values(by, kind="stable").reset_index(drop=True)
