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

from .._hashing import stable_hash
from ..refs import EntityRef, encode_ref
from ..models.offline_code import CODE_TYPES
from ..models.offline_names import fold_names
from ..schema import ENTITY_TYPES, coerce, empty_frame
from ..store.splice import ascending
from .graph_edges import EdgeCodes

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
    __slots__ = ("names", "aliases", "types", "raw_types", "description")

    def __init__(self) -> None:
        self.names: Counter[str] = Counter()
        self.aliases: set[str] = set()
        self.types: Counter[str] = Counter()
        self.raw_types: Counter[str] = Counter()
        self.description: str | None = None  # the first one given


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
    """(entities, edges, evidence) frames for the ``entities`` stage from ``(source_id, output)`` pairs.

    Mentions and related pairs are kept as integer codes (entity ids and chunk refs numbered once) in flat
    arrays, not as a tuple, dict and set per pair: on 10k short passages that held most of the peak memory.
    """
    entities: dict[str, _Entity] = defaultdict(_Entity)
    graph = EdgeCodes(chunk_sources)
    group_ids = _group_ids(outputs)
    for _source, output in outputs:
        lookup = {}
        for ent in output.get("entities", []):
            kind = ent.get("type")
            eid = group_ids.get(_label(ent["name"], kind)) or _id_for(ent["name"], kind)
            _add_entity(entities[eid], ent, kind)
            for label in (ent["name"], *ent.get("aliases", [])):
                lookup.setdefault(_label(label, kind), eid)

        def resolve(name: str) -> str:  # an identifier by its exact name first, then a name case-folded
            return lookup.get("`" + name) or lookup.get(name.casefold()) or entity_id_for(name)
        for m in output.get("mentions", []):
            if m["chunk_id"] in chunk_sources:
                eid = resolve(m["name"])
                entities[eid].names[m["name"]] += 0  # known even if not listed among entities
                graph.mention(m["chunk_id"], eid)
        for r in output.get("related", []):
            a, b = sorted((resolve(r["from"]), resolve(r["to"])))
            if a != b:
                graph.relate(a, b, r.get("chunk_ids", []), r.get("description"))
    return _entity_frame(entities), *graph.frames(STAGE)


def _add_entity(record: _Entity, ent: dict[str, Any], kind: Any) -> None:
    record.names[ent["name"]] += 1
    record.aliases.update(a for a in ent.get("aliases", []) if a)
    normal, raw = entity_type(kind)
    if normal:
        record.types[normal] += 1
    if raw:
        record.raw_types[raw] += 1
    if ent.get("description") and record.description is None:
        record.description = ent["description"]


def _top(counts: Counter) -> Any:
    """The most frequent key, ties to code-point order."""
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def _entity_frame(entities: dict[str, _Entity]) -> pd.DataFrame:
    columns: dict[str, list] = {c: [] for c in ("entity_id", "ref", "canonical_name", "type", "aliases",
                                               "description", "raw_type")}
    for eid in sorted(entities):
        rec = entities.pop(eid)  # dropped as it is written: the records and the rows are not held twice
        # canonical name: the most frequent display form; ties go to the longest, then code-point order
        canonical = min(rec.names.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))[0]
        kind = _top(rec.types) if rec.types else None
        values = (eid, encode_ref(EntityRef(eid)), canonical, kind,
                  tuple(sorted((rec.aliases | set(rec.names)) - {canonical})), rec.description,
                  _top(rec.raw_types) if kind == "other" and rec.raw_types else None)
        for column, value in zip(columns.values(), values):
            column.append(value)
    return coerce(pd.DataFrame(columns), "entities") if columns["entity_id"] else empty_frame("entities")


def with_entity_stage(state: Any, entities: pd.DataFrame, edges: pd.DataFrame, evidence: pd.DataFrame,
                      extractions: pd.DataFrame) -> Any:
    """Replace the ``entities`` stage of ``state`` (other stages' edges are kept)."""
    other = state.edges[state.edges["stage"] != STAGE]
    other_ev = state.edge_evidence[state.edge_evidence["edge_id"].isin(other["edge_id"])]
    all_edges = _stored(other, edges, ["edge_id"])
    all_ev = _stored(other_ev, evidence, ["edge_id", "chunk_ref", "provenance"])
    used = pd.concat([all_edges["from_ref"], all_edges["to_ref"]], ignore_index=True).unique()
    kept = state.entities[state.entities["ref"].isin(used) & ~state.entities["entity_id"].isin(entities["entity_id"])]
    extracted = entities[entities["ref"].isin(used)]
    all_entities = pd.concat([kept, extracted], ignore_index=True).sort_values("entity_id", kind="stable")
    return replace(state, edges=coerce(all_edges, "edges"), edge_evidence=coerce(all_ev, "edge_evidence"),
                   entities=coerce(all_entities, "entities"), extractions=coerce(extractions, "extractions"),
                   version=state.version + 1)




def _stored(kept: pd.DataFrame, new: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``kept`` and ``new`` rows ordered by ``keys``; ``new`` itself (no copy of a large graph) when nothing is
    kept and it is in order already, as :class:`~crux_nb.extract.graph_edges.EdgeCodes` writes it."""
    if kept.empty and ascending([new[k] for k in keys]):
        return new
    return pd.concat([kept, new], ignore_index=True).sort_values(keys, kind="stable")
