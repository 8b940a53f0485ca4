"""``write_graphrag``: any knowledge base as GraphRAG's output tables (GraphRAG 3 names and types).

The folder gets ``documents``, ``text_units``, ``entities``, ``relationships``,
``communities``, ``community_reports`` and ``covariates`` Parquet files with
exactly GraphRAG 3's columns and Arrow types, so GraphRAG-based tools read them;
:func:`~crux_nb.io.read_graphrag` reads them back.

* documents: ``id`` a hash of the source id, ``title`` the source id, ``text`` the
  chunks joined by blank lines.
* text units: one per chunk, ``id`` = ``<source>:<chunk>`` (escaped as in chunk
  refs, so the import gives the chunk id back), ``n_tokens`` estimated as
  characters / 4.
* entities: ``id`` = entity id, ``title`` = canonical name (made unique with the id
  when two entities share a name), ``text_unit_ids`` = the chunks that mention it.
* relationships: every ``related`` edge between two entities, ``id`` = edge id,
  ``text_unit_ids`` = its evidence chunks.
* communities and reports of one scope (default ``corpus``): levels counted from
  the top (a root is level 0) as GraphRAG does, numbered in (level, id) order; a
  parent's entities and text units are its descendants'. Findings become
  ``{summary: first sentence, explanation: statement + [Data: Sources (...)]}``
  (``Sources`` = the text units' human readable ids; entity evidence as
  ``Entities``). ``rank`` and ``rating_explanation`` are GraphRAG's own values for
  a knowledge base read with ``read_graphrag``, else NaN and empty.

Not representable in GraphRAG's tables (counted on the returned
:class:`GraphRAGExport`): sections, document and chunk metadata, entity aliases,
edges other than ``mentions`` and entity–entity ``related``, and the direction of
directed ``related`` edges.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from .._hashing import stable_hash
from ..errors import InputError, ParameterError, StorageError
from ..refs import ChunkRef, encode_ref
from .graphrag_refs import format_references

__all__ = ["write_graphrag", "GraphRAGExport", "ARROW_SCHEMAS"]

_S, _I, _F = "string", "int64", "double"
_LS, _LI = "list<string>", "list<int64>"
#: GraphRAG 3's columns and Arrow types per table (those of its own output files).
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "documents": [("id", _S), ("human_readable_id", _I), ("title", _S), ("text", _S), ("text_unit_ids", _LS),
                  ("creation_date", _S), ("raw_data", "null")],
    "text_units": [("id", _S), ("human_readable_id", _I), ("text", _S), ("n_tokens", _I), ("document_id", _S),
                   ("entity_ids", _LS), ("relationship_ids", _LS), ("covariate_ids", _LS)],
    "entities": [("id", _S), ("human_readable_id", _I), ("title", _S), ("type", _S), ("description", _S),
                 ("text_unit_ids", _LS), ("frequency", _I), ("degree", _I)],
    "relationships": [("id", _S), ("human_readable_id", _I), ("source", _S), ("target", _S), ("description", _S),
                      ("weight", _F), ("combined_degree", _I), ("text_unit_ids", _LS)],
    "communities": [("id", _S), ("human_readable_id", _I), ("community", _I), ("level", _I), ("parent", _I),
                    ("children", _LI), ("title", _S), ("entity_ids", _LS), ("relationship_ids", _LS),
                    ("text_unit_ids", _LS), ("period", _S), ("size", _I)],
    "community_reports": [("id", _S), ("human_readable_id", _I), ("community", _I), ("level", _I), ("parent", _I),
                          ("children", _LI), ("title", _S), ("summary", _S), ("full_content", _S), ("rank", _F),
                          ("rating_explanation", _S), ("findings", "findings"), ("full_content_json", _S),
                          ("period", _S), ("size", _I)],
    "covariates": [("id", _S), ("human_readable_id", _I), ("covariate_type", _S), ("type", _S), ("description", _S),
                   ("subject_id", _S), ("object_id", _S), ("status", _S), ("start_date", _S), ("end_date", _S),
                   ("source_text", _S), ("text_unit_id", _S)],
}
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _arrow_type(kind: str):
    import pyarrow as pa

    simple = {_S: pa.string(), _I: pa.int64(), _F: pa.float64(), _LS: pa.list_(pa.string()),
              _LI: pa.list_(pa.int64()), "null": pa.null()}
    if kind == "findings":
        return pa.list_(pa.struct([("explanation", pa.string()), ("summary", pa.string())]))
    return simple[kind]


def ARROW_SCHEMAS():  # noqa: N802 - a function so that importing this module does not import pyarrow
    """table -> the pyarrow schema written."""
    import pyarrow as pa

    return {t: pa.schema([(c, _arrow_type(k)) for c, k in cols]) for t, cols in COLUMNS.items()}


@dataclass(frozen=True)
class GraphRAGExport:
    """What :func:`write_graphrag` wrote: the folder, rows per table, and what GraphRAG cannot hold.

    Examples
    --------
    >>> from crux_nb.io import write_graphrag
    >>> import crux_nb, tempfile
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("team.md", "Priya Raman leads the Platform team."); kb.add_text("ops.md", "Platform runs Atlas.")
    >>> kb.extract_entities(progress=False)  # offline: names, mentions and related edges
    ExtractionResult(model='offline', sources_extracted=2, sources_reused=0, calls=2, entities=3, mentions=3, related=1)
    >>> export = write_graphrag(kb, tempfile.mkdtemp())
    >>> export.rows["text_units"], export.scope, sum(export.dropped.values())
    (2, 'corpus', 0)
    """

    folder: str
    rows: dict[str, int]
    scope: str
    dropped: dict[str, int]

    def __repr__(self) -> str:
        rows = ", ".join(f"{k}={v}" for k, v in self.rows.items())
        lost = {k: v for k, v in self.dropped.items() if v}
        return f"GraphRAGExport(folder={self.folder!r}, {rows}, not_representable={lost})"


def text_unit_id(source_id: str, chunk_id: str) -> str:
    """The text unit id written for a chunk: its ref without the ``chunk:`` prefix."""
    return encode_ref(ChunkRef(source_id, chunk_id))[len("chunk:"):]


def write_graphrag(kb: Any, path: str | os.PathLike, *, scope: str = "corpus") -> GraphRAGExport:
    """Write ``kb`` (a :class:`~crux_nb.KnowledgeBase`) as a GraphRAG output folder at ``path``.

    The folder is created if needed; GraphRAG's seven table files in it are replaced.
    Communities and reports come from ``scope``'s current generation as stored (no
    model is called: run ``kb.communities.prepare()`` first to export fresh ones).

    Examples
    --------
    >>> import crux_nb, tempfile
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("team.md", "Priya Raman leads the Platform team."); kb.add_text("ops.md", "Platform runs Atlas.")
    >>> kb.extract_entities(progress=False)  # offline: names, mentions and related edges
    ExtractionResult(model='offline', sources_extracted=2, sources_reused=0, calls=2, entities=3, mentions=3, related=1)
    >>> export = write_graphrag(kb, tempfile.mkdtemp())
    >>> export.rows
    {'documents': 2, 'text_units': 2, 'entities': 3, 'relationships': 1, 'communities': 0, 'community_reports': 0, 'covariates': 0}
    >>> import pandas as pd
    >>> pd.read_parquet(f"{export.folder}/entities.parquet")["title"].tolist()
    ['Atlas', 'Platform', 'Priya Raman']
    """
    from ..knowledgebase import KnowledgeBase

    if not isinstance(kb, KnowledgeBase):
        raise ParameterError("write_graphrag()", "kb", "a crux_nb KnowledgeBase", kb)
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError("write_graphrag()", "path", "a folder path", path)
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{str(folder)!r} exists and is not a folder.", code="graphrag_not_a_folder",
                         hint="write_graphrag() writes a folder of Parquet tables.")
    tables, dropped = _Exporter(kb, scope).tables()
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        folder.mkdir(parents=True, exist_ok=True)
        schemas = ARROW_SCHEMAS()
        for name, rows in tables.items():
            columns = {c: [r[c] for r in rows] for c, _ in COLUMNS[name]}
            table = pa.Table.from_pydict(columns, schema=schemas[name])
            tmp = folder / f".{name}.parquet.tmp"
            pq.write_table(table, tmp)
            os.replace(tmp, folder / f"{name}.parquet")
    except OSError as exc:
        raise StorageError(f"cannot write the GraphRAG tables to {str(folder)!r}: {exc.strerror or exc}.",
                           code="graphrag_write_failed") from None
    return GraphRAGExport(str(folder), {k: len(v) for k, v in tables.items()}, scope, dropped)


class _Exporter:
    def __init__(self, kb: Any, scope: str):
        self.state, self.scope = kb.state, scope
        self.extras = getattr(kb, "graphrag", None)
        now = datetime.now(timezone.utc)
        self.period, self.created = now.date().isoformat(), now.strftime("%Y-%m-%d %H:%M:%S %z")

    def tables(self) -> tuple[dict[str, list[dict]], dict[str, int]]:
        s = self.state
        chunks = s.chunks
        self.tu = {ref: text_unit_id(src, cid) for ref, src, cid in zip(chunks["ref"], chunks["source_id"],
                                                                       chunks["chunk_id"])}
        self.tu_hrid = {ref: i for i, ref in enumerate(chunks["ref"])}
        entity_rows, relationship_rows = self._graph()
        dropped = {"sections": len(s.parents),
                   "document_metadata": int(sum(bool(m) for m in s.documents["metadata"])),
                   "entity_aliases": int(sum(len(a) > 0 for a in s.entities["aliases"])),
                   "edges_of_other_types": self.other_edges, "directed_related_edges": self.directed}
        docs_chunks = defaultdict(list)
        for ref, src, content in zip(chunks["ref"], chunks["source_id"], chunks["content"]):
            docs_chunks[src].append((ref, content))
        documents = [{"id": stable_hash({"source_id": src}, length=32), "human_readable_id": i, "title": src,
                      "text": "\n\n".join(c for _, c in docs_chunks[src]),
                      "text_unit_ids": [self.tu[r] for r, _ in docs_chunks[src]], "creation_date": self.created,
                      "raw_data": None} for i, src in enumerate(s.documents["source_id"])]
        doc_id = {d["title"]: d["id"] for d in documents}
        covariates, cov_of_chunk = self._covariates()
        text_units = [{"id": self.tu[ref], "human_readable_id": self.tu_hrid[ref], "text": content,
                       "n_tokens": math.ceil(len(content) / 4), "document_id": doc_id[src],
                       "entity_ids": sorted(self.chunk_entities.get(ref, ())),
                       "relationship_ids": sorted(self.chunk_relationships.get(ref, ())),
                       "covariate_ids": cov_of_chunk.get(ref, [])}
                      for ref, src, content in zip(chunks["ref"], chunks["source_id"], chunks["content"])]
        communities, reports = self._communities(relationship_rows)
        return {"documents": documents, "text_units": text_units, "entities": entity_rows,
                "relationships": relationship_rows, "communities": communities, "community_reports": reports,
                "covariates": covariates}, dropped

    def _order_tu(self, refs: Any) -> list[str]:
        return [self.tu[r] for r in sorted(set(refs), key=self.tu_hrid.__getitem__) if r in self.tu]

    def _graph(self) -> tuple[list[dict], list[dict]]:
        s = self.state
        ents = s.entities
        is_entity = set(ents["ref"])
        edges, evidence = s.edges, s.edge_evidence
        support = defaultdict(list)
        for eid, chunk in zip(evidence["edge_id"], evidence["chunk_ref"]):
            support[eid].append(chunk)
        mentions: dict[str, set[str]] = defaultdict(set)  # entity ref -> chunk refs
        related, self.other_edges, self.directed = [], 0, 0
        for eid, etype, a, b, direction, desc, weight in zip(edges["edge_id"], edges["type"], edges["from_ref"],
                                                             edges["to_ref"], edges["direction"],
                                                             edges["description"], edges["weight"]):
            if etype == "mentions" and (a in is_entity) != (b in is_entity):
                entity, chunk = (a, b) if a in is_entity else (b, a)
                if chunk in self.tu:
                    mentions[entity].add(chunk)
                    continue
            if etype == "related" and a in is_entity and b in is_entity:
                self.directed += direction != "symmetric"
                related.append((eid, a, b, desc, weight, support.get(eid, [])))
                continue
            self.other_edges += 1
        titles = _unique_titles(ents)
        entity_id = dict(zip(ents["ref"], ents["entity_id"]))
        degree = defaultdict(set)
        for _, a, b, *_ in related:
            degree[a].add(b)
            degree[b].add(a)
        self.chunk_entities: dict[str, set[str]] = defaultdict(set)
        entity_rows = []
        for i, (ref, eid, etype, desc) in enumerate(zip(ents["ref"], ents["entity_id"], ents["type"],
                                                        ents["description"])):
            tus = self._order_tu(mentions.get(ref, ()))
            for chunk in mentions.get(ref, ()):
                self.chunk_entities[chunk].add(eid)
            entity_rows.append({"id": eid, "human_readable_id": i, "title": titles[ref], "type": _str(etype),
                                "description": _str(desc), "text_unit_ids": tus, "frequency": len(tus),
                                "degree": len(degree[ref])})
        self.chunk_relationships: dict[str, set[str]] = defaultdict(set)
        self.entity_id, self.titles = entity_id, titles
        self.relationship_ends: dict[str, tuple[str, str]] = {}
        relationship_rows = []
        for i, (eid, a, b, desc, weight, chunks) in enumerate(related):
            for chunk in chunks:
                self.chunk_relationships[chunk].add(eid)
            self.relationship_ends[eid] = (a, b)
            relationship_rows.append({"id": eid, "human_readable_id": i, "source": titles[a], "target": titles[b],
                                      "description": _str(desc), "weight": float(weight),
                                      "combined_degree": len(degree[a]) + len(degree[b]),
                                      "text_unit_ids": self._order_tu(chunks)})
        return entity_rows, relationship_rows

    def _covariates(self) -> tuple[list[dict], dict[str, list[str]]]:
        frame = getattr(self.extras, "covariates", None)
        if not isinstance(frame, pd.DataFrame) or frame.empty or "chunk_ref" not in frame.columns:
            return [], {}
        rows, by_chunk = [], defaultdict(list)
        for k, rec in enumerate(frame.to_dict("records")):
            chunk = rec.get("chunk_ref")
            row = {c: (None if _blank(rec.get(c)) else str(rec.get(c))) for c, kind in COLUMNS["covariates"]
                   if kind == _S}
            row["id"] = row["id"] or stable_hash({"claim": k}, length=32)
            row["human_readable_id"] = k if _blank(rec.get("human_readable_id")) else int(rec["human_readable_id"])
            row["text_unit_id"] = self.tu.get(chunk) if isinstance(chunk, str) else None
            if row["text_unit_id"]:
                by_chunk[chunk].append(row["id"])
            rows.append(row)
        return rows, by_chunk

    def _communities(self, relationship_rows: list[dict]) -> tuple[list[dict], list[dict]]:
        s, scope = self.state, self.scope
        comms = s.communities[s.communities["scope"] == scope]
        if comms.empty:
            return [], []
        members = s.community_members[s.community_members["scope"] == scope]
        own = defaultdict(list)
        for cid, ref in zip(members["community_id"], members["member_ref"]):
            own[cid].append(ref)
        parent = dict(zip(comms["community_id"], comms["parent_id"]))
        parent = {k: (v if isinstance(v, str) else None) for k, v in parent.items()}
        children = {k: list(v) for k, v in zip(comms["community_id"], comms["child_ids"])}

        def depth(cid: str) -> int:
            return 0 if parent[cid] is None else 1 + depth(parent[cid])

        found: dict[str, set[str]] = {}

        def all_members(cid: str) -> set[str]:
            if cid not in found:
                found[cid] = set(own.get(cid, ())).union(*(all_members(kid) for kid in children[cid]))
            return found[cid]

        rels_of = defaultdict(list)  # entity ref -> relationship row positions
        for i, row in enumerate(relationship_rows):
            for end in set(self.relationship_ends[row["id"]]):
                rels_of[end].append(i)
        order = sorted(comms["community_id"], key=lambda c: (depth(c), c))
        number = {c: i for i, c in enumerate(order)}
        reports = s.reports[s.reports["scope"] == scope].set_index("community_id")
        findings = s.report_findings[s.report_findings["scope"] == scope].sort_values(["community_id", "ordinal"])
        by_report = defaultdict(list)
        for rec in findings.itertuples(index=False):
            by_report[rec.community_id].append(rec)
        extras = getattr(self.extras, "communities", None)
        rank = {}
        if isinstance(extras, pd.DataFrame) and not extras.empty:
            rank = {r["community_id"]: r for r in extras.to_dict("records")}
        comm_rows, report_rows = [], []
        for cid in order:
            m = all_members(cid)
            entity_ids = sorted(self.entity_id[r] for r in m if r in self.entity_id)
            in_community = {r for r in m if r in self.entity_id}
            candidates = {i for r in in_community for i in rels_of.get(r, ())}
            rel_ids = [relationship_rows[i]["id"] for i in sorted(candidates)
                       if set(self.relationship_ends[relationship_rows[i]["id"]]) <= in_community]
            base = {"id": cid, "human_readable_id": number[cid], "community": number[cid], "level": depth(cid),
                    "parent": -1 if parent[cid] is None else number[parent[cid]],
                    "children": sorted(number[k] for k in children[cid]), "period": self.period,
                    "size": len(entity_ids)}
            comm_rows.append({**base, "title": f"Community {number[cid]}", "entity_ids": entity_ids,
                              "relationship_ids": rel_ids,
                              "text_unit_ids": self._order_tu(r for r in m if r in self.tu)})
            report_rows.append(self._report(cid, base, reports, by_report[cid], rank.get(cid, {})))
        return comm_rows, report_rows

    def _report(self, cid: str, base: dict, reports: pd.DataFrame, findings: list, extra: dict) -> dict:
        title, summary = (str(reports.at[cid, "title"]), _str(reports.at[cid, "summary"])) if cid in reports.index \
            else (f"Community {base['community']}", "")
        out_findings = []
        for f in findings:
            chunks = [e for e in f.evidence if e in self.tu]
            ents = [self.entity_id[e] for e in f.evidence if e in self.entity_id]
            ids = {"sources": [self.tu_hrid[c] for c in chunks],
                   "entities": [self._entity_hrid(e) for e in ents]}
            block = format_references(ids)
            out_findings.append({"explanation": f.statement + (f" {block}" if block else ""),
                                 "summary": _headline(f.statement)})
        rank = extra.get("rank")
        rank = float(rank) if isinstance(rank, (int, float)) and not _blank(rank) else math.nan
        explanation = _str(extra.get("rating_explanation"))
        content = "\n\n".join([f"# {title}", summary] + [f"## {f['summary']}\n\n{f['explanation']}"
                                                            for f in out_findings])
        payload = {"title": title, "summary": summary,
                   "findings": [{"summary": f["summary"], "explanation": f["explanation"]} for f in out_findings],
                   "rating": None if math.isnan(rank) else rank, "rating_explanation": explanation}
        return {**base, "id": stable_hash({"report": cid}, length=32), "title": title, "summary": summary,
                "full_content": content, "rank": rank, "rating_explanation": explanation, "findings": out_findings,
                "full_content_json": json.dumps(payload, indent=4, ensure_ascii=False)}

    def _entity_hrid(self, entity_id: str) -> int:
        if not hasattr(self, "_hrid"):
            self._hrid = {e: i for i, e in enumerate(self.state.entities["entity_id"])}
        return self._hrid[entity_id]


def _unique_titles(ents: pd.DataFrame) -> dict[str, str]:
    """Canonical names as titles; a name two entities share gets the entity id appended."""
    names = [str(n) for n in ents["canonical_name"]]
    shared = {n for n, k in Counter(names).items() if k > 1}
    return {ref: (f"{n} [{eid}]" if n in shared else n) for ref, n, eid in zip(ents["ref"], names, ents["entity_id"])}


def _headline(statement: str, limit: int = 120) -> str:
    """The first sentence of a statement, cut at a word boundary (with an ellipsis) past ``limit``."""
    first = _SENTENCE.split(statement.strip(), maxsplit=1)[0]
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0] + "…"


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _str(value: Any) -> str:
    return "" if _blank(value) else str(value)
