"""Building the entity graph from per-source extraction outputs (pure; no model calls).

Every source's validated output ``{entities, mentions, related}`` is kept in the
``extractions`` table; the ``entities`` stage of the graph is rebuilt from all of
them, so the graph is the same whether a source was extracted now or earlier.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace
from typing import Any

import pandas as pd

from .._hashing import stable_hash, stable_id
from ..refs import EntityRef, encode_ref
from ..models.offline_code import CODE_TYPES
from ..models.offline_names import fold_names
from ..schema import ENTITY_TYPES, coerce, empty_frame

STAGE = "entities"
_WORD = re.compile(r"\w+", re.UNICODE)


def entity_id_for(name: str) -> str:
    """A readable, stable entity id: the name's words, case-folded, joined by ``-``.

    >>> entity_id_for("  Priya   Raman ")
    'priya-raman'
    >>> entity_id_for("Beacon 3.0")
    'beacon-3-0'
    """
    words = _WORD.findall(name.casefold())
    return "-".join(words) if words else f"e-{stable_hash(name.strip(), length=12)}"


def code_entity_id(name: str) -> str:
    """The id of an identifier or option: case kept (``Path`` is not ``path``), a flag's dashes kept.

    >>> code_entity_id("os.path.join"), code_entity_id("Path"), code_entity_id("--verbose")
    ('os-path-join', 'Path', '--verbose')
    """
    words = _WORD.findall(name)
    dashes = name[:len(name) - len(name.lstrip("-"))]
    return dashes + "-".join(words) if words else f"e-{stable_hash(name.strip(), length=12)}"


def _label(name: str, kind: str | None) -> str:
    """The grouping label of a name: case-folded, except an identifier's (case matters in code; the backtick
    keeps ``python`` the command apart from ``Python`` the language)."""
    return "`" + name if kind in CODE_TYPES else name.casefold()


def _id_for(name: str, kind: str | None) -> str:
    return code_entity_id(name) if kind in CODE_TYPES else entity_id_for(name)


class _Entity:
    def __init__(self) -> None:
        self.names: Counter[str] = Counter()
        self.aliases: set[str] = set()
        self.types: Counter[str] = Counter()
        self.raw_types: Counter[str] = Counter()
        self.descriptions: list[str] = []


def entity_type(raw: Any) -> tuple[str | None, str | None]:
    """``(type, raw_type)``: a model's type word as one of the schema's types, else ``other`` with the word kept.

    >>> entity_type("person"), entity_type("coroutines.CancellationPolicy"), entity_type(None)
    (('person', None), ('other', 'coroutines.CancellationPolicy'), (None, None))
    """
    if not isinstance(raw, str) or not raw.strip():
        return None, None
    word = raw.strip()
    return (word, None) if word in ENTITY_TYPES else ("other", word)


def _group_ids(outputs: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """Casefolded label -> entity id, with entities that share a name or alias merged across batches and sources.

    A long source is extracted in several calls, and each call names a person by its own most
    frequent form ("Marley" in one, "Jacob Marley" with alias "Marley" in another): any shared
    label makes them one entity, named by its most frequent display name (as ``_entity_frame``).
    """
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    names: dict[str, Counter] = defaultdict(Counter)
    code: set[str] = set()  # identifiers: grouped by exact name only, never folded as people's names are
    for _source, output in outputs:
        for ent in output.get("entities", []):
            kind = ent.get("type")
            labels = [_label(ent["name"], kind), *(_label(a, kind) for a in ent.get("aliases", []) if a)]
            if kind in CODE_TYPES:
                code.add(labels[0])
            names[labels[0]][ent["name"]] += 1
            find(labels[0])
            for label in labels[1:]:
                a, b = find(labels[0]), find(label)
                if a != b:
                    parent[max(a, b)] = min(a, b)  # deterministic: the smaller label is the root
    # the same folding the offline model applies inside one call, now across calls: "Mr. Topper" in one,
    # "Topper" in another; "Martha" in one, "Martha Cratchit" in another
    display = {label: next(iter(names[label]), label.lstrip("`")) for label in parent}
    for label in list(display):
        display.setdefault(label, label)
    target, _aliases = fold_names({k: display[k] for k in parent if k not in code},
                                  {k: sum(names[k].values()) for k in parent if k not in code},
                                  set(), Counter(), str.casefold)
    for label, dest in target.items():
        a, b = find(label), find(dest)
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[str, Counter] = defaultdict(Counter)
    for label in list(parent):
        groups[find(label)].update(names.get(label, Counter()))
    ids = {}
    for label in parent:
        counts = groups[find(label)]
        if counts:
            canonical = sorted(counts.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))[0][0]
            ids[label] = code_entity_id(canonical) if label in code else entity_id_for(canonical)
    return ids


def build_entity_frames(outputs: list[tuple[str, dict[str, Any]]], chunk_sources: dict[str, str]):
    """(entities, edges, evidence) frames for the ``entities`` stage from ``(source_id, output)`` pairs."""
    entities: dict[str, _Entity] = defaultdict(_Entity)
    mentions: set[tuple[str, str]] = set()
    related: dict[tuple[str, str], dict[str, Any]] = {}
    group_ids = _group_ids(outputs)
    for _source, output in outputs:
        lookup = {}
        for ent in output.get("entities", []):
            kind = ent.get("type")
            eid = group_ids.get(_label(ent["name"], kind)) or _id_for(ent["name"], kind)
            record = entities[eid]
            record.names[ent["name"]] += 1
            record.aliases.update(a for a in ent.get("aliases", []) if a)
            normal, raw = entity_type(kind)
            if normal:
                record.types[normal] += 1
            if raw:
                record.raw_types[raw] += 1
            if ent.get("description"):
                record.descriptions.append(ent["description"])
            for label in (ent["name"], *ent.get("aliases", [])):
                lookup.setdefault(_label(label, kind), eid)

        def resolve(name: str) -> str:  # an identifier by its exact name first, then a name case-folded
            return lookup.get("`" + name) or lookup.get(name.casefold()) or entity_id_for(name)
        for m in output.get("mentions", []):
            if m["chunk_id"] in chunk_sources:
                eid = resolve(m["name"])
                entities[eid].names[m["name"]] += 0  # known even if not listed among entities
                mentions.add((m["chunk_id"], eid))
        for r in output.get("related", []):
            a, b = sorted((resolve(r["from"]), resolve(r["to"])))
            chunks = [c for c in r.get("chunk_ids", []) if c in chunk_sources]
            if a == b or not chunks:
                continue
            entry = related.setdefault((a, b), {"chunks": set(), "description": None})
            entry["chunks"].update(chunks)
            if entry["description"] is None and r.get("description"):
                entry["description"] = r["description"]
    return _entity_frame(entities), *_edge_frames(mentions, related, chunk_sources)


def _entity_frame(entities: dict[str, _Entity]) -> pd.DataFrame:
    rows = []
    for eid in sorted(entities):
        rec = entities[eid]
        # canonical name: the most frequent display form; ties go to the longest, then code-point order
        canonical = sorted(rec.names.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))[0][0]
        aliases = sorted((rec.aliases | set(rec.names)) - {canonical})
        kind = sorted(rec.types.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] if rec.types else None
        raw = sorted(rec.raw_types.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] if kind == "other" and rec.raw_types else None
        rows.append({"entity_id": eid, "ref": encode_ref(EntityRef(eid)), "canonical_name": canonical,
                     "type": kind, "aliases": tuple(aliases),
                     "description": rec.descriptions[0] if rec.descriptions else None, "raw_type": raw})
    return coerce(pd.DataFrame(rows), "entities") if rows else empty_frame("entities")


def _edge_frames(mentions, related, chunk_sources):
    edges, evidence = [], []
    for chunk, eid in sorted(mentions):
        ent = encode_ref(EntityRef(eid))
        edge_id = stable_id("edge", {"type": "mentions", "from": chunk, "to": ent, "direction": "directed", "stage": STAGE})
        edges.append({"edge_id": edge_id, "type": "mentions", "from_ref": chunk, "to_ref": ent, "direction": "directed",
                      "description": None, "weight": 1.0, "stage": STAGE})
        evidence.append({"edge_id": edge_id, "source_id": chunk_sources[chunk], "chunk_ref": chunk, "provenance": "derived"})
    for (a, b), entry in sorted(related.items()):
        ra, rb = encode_ref(EntityRef(a)), encode_ref(EntityRef(b))
        ra, rb = sorted((ra, rb))
        edge_id = stable_id("edge", {"type": "related", "from": ra, "to": rb, "direction": "symmetric", "stage": STAGE})
        edges.append({"edge_id": edge_id, "type": "related", "from_ref": ra, "to_ref": rb, "direction": "symmetric",
                      "description": entry["description"], "weight": float(len(entry["chunks"])), "stage": STAGE})
        evidence += [{"edge_id": edge_id, "source_id": chunk_sources[c], "chunk_ref": c, "provenance": "derived"}
                     for c in sorted(entry["chunks"])]
    edge_frame = coerce(pd.DataFrame(edges), "edges") if edges else empty_frame("edges")
    ev_frame = coerce(pd.DataFrame(evidence), "edge_evidence") if evidence else empty_frame("edge_evidence")
    return edge_frame, ev_frame


def with_entity_stage(state: Any, entities: pd.DataFrame, edges: pd.DataFrame, evidence: pd.DataFrame,
                      extractions: pd.DataFrame) -> Any:
    """Replace the ``entities`` stage of ``state`` (other stages' edges are kept)."""
    other = state.edges[state.edges["stage"] != STAGE]
    other_ev = state.edge_evidence[state.edge_evidence["edge_id"].isin(other["edge_id"])]
    all_edges = pd.concat([other, edges], ignore_index=True).sort_values("edge_id", kind="stable")
    all_ev = pd.concat([other_ev, evidence], ignore_index=True).sort_values(["edge_id", "chunk_ref", "provenance"],
                                                                            kind="stable")
    used = set(all_edges["from_ref"]) | set(all_edges["to_ref"])
    kept = state.entities[state.entities["ref"].isin(used) & ~state.entities["entity_id"].isin(entities["entity_id"])]
    extracted = entities[entities["ref"].isin(used)]
    all_entities = pd.concat([kept, extracted], ignore_index=True).sort_values("entity_id", kind="stable")
    return replace(state, edges=coerce(all_edges, "edges"), edge_evidence=coerce(all_ev, "edge_evidence"),
                   entities=coerce(all_entities, "entities"), extractions=coerce(extractions, "extractions"),
                   version=state.version + 1)


