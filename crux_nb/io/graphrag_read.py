"""``read_graphrag``: a GraphRAG output folder as a crux_nb knowledge base. What becomes what:

* **documents** — one per GraphRAG document. The source id is the document's ``title`` (its file name,
  e.g. ``a-christmas-carol.txt``) when every title is present and unique, otherwise the GraphRAG document
  ``id`` for every document.
* **chunks** — one per text unit. The chunk id is the text unit id, except for folders written by
  :func:`~crux_nb.io.write_graphrag`, whose text unit ids are ``<source>:<chunk>`` (escaped as in chunk
  refs) and give the original chunk id back. The ordinal is the text unit's position in its document's
  ``text_unit_ids`` (else the ``human_readable_id`` order). No sections.
* **entities** — entity id = the GraphRAG entity ``id`` (the ``title`` when there is no id column),
  canonical name = ``title``, with ``type`` and ``description``. Titles that relationships name but the
  entities table lacks become placeholder entities whose id and name are the title.
* **edges** (stage ``graphrag``, provenance ``derived``) — ``mentions`` (chunk → entity) for every text
  unit of an entity, evidence that chunk; ``related`` (symmetric) for every relationship with its text
  units as evidence, its description and weight. Relationships naming the same pair (in either
  direction) become one edge: weights add up, descriptions are joined.
* **communities and reports** — see :mod:`crux_nb.io.graphrag_communities`.

GraphRAG's own ids, human readable ids and levels are kept on ``kb.graphrag`` (a :class:`GraphRAGImport`),
together with the import counts.
"""
from __future__ import annotations

import os
from typing import Any

import pandas as pd

from .._hashing import stable_hash
from ..errors import InputError, ParameterError
from ..refs import ChunkRef, decode_ref, encode_ref
from ..schema import frozen_metadata
from ..store.state import KBState
from ..store.imports import GraphRAGImport, GraphRAGWarning
from .graphrag_graph import STAGE, EntityEdgeBuilder, _frame
from .graphrag_tables import GraphRAGTables, load_tables

__all__ = ["read_graphrag", "GraphRAGImport", "GraphRAGWarning", "STAGE"]
_SHOWN_ROWS = 5


def read_graphrag(path: str | os.PathLike, *, id: str = "graphrag", namespace: str | None = None,
                  communities: Any = None):
    """Read a GraphRAG output folder (GraphRAG 0.x-3.x layouts) into a :class:`~crux_nb.KnowledgeBase`.

    ``communities`` is the configuration the imported reports are published under (``crux_nb.communities(
    model=...)``; default the offline model): the imported generation is ``ready`` for it, so ``global_search``
    maps GraphRAG's own reports. The returned knowledge base carries the import details on ``kb.graphrag``.

    Examples
    --------
    >>> import crux_nb, tempfile; from crux_nb.io import write_graphrag
    >>> kb = crux_nb.knowledge_base(id="docs", communities=crux_nb.communities(model=crux_nb.models.OfflineModel()))
    >>> kb.add_text("team.md", "Priya Raman leads the Platform team."); kb.add_text("ops.md", "Platform runs Atlas.")
    >>> _ = kb.communities.prepare(); folder = tempfile.mkdtemp(); _ = write_graphrag(kb, folder)
    >>> back = read_graphrag(folder, id="back")
    >>> back.graphrag, back.communities.status()
    (GraphRAGImport(chunks=2, entities=3, mentions=3, related=1, communities=3, references_resolved=4/4), 'ready')
    """
    from ..community.config import CommunitiesConfig, communities as make_config
    from ..knowledgebase import KnowledgeBase
    from ..validation import check_name
    from .graphrag_communities import build_generation

    check_name("read_graphrag()", "id", id)
    namespace = id if namespace is None else check_name("read_graphrag()", "namespace", namespace)
    if communities is None:
        from ..models import OfflineModel

        communities = make_config(model=OfflineModel())
    if not isinstance(communities, CommunitiesConfig):
        raise ParameterError("read_graphrag()", "communities", "a configuration from crux_nb.communities(model=...)",
                             communities)
    tables = load_tables(path)
    build = _GraphBuilder(tables)
    state = build.state()
    state, refs, comm_info = build_generation(state, tables, build, communities)
    kb = KnowledgeBase(id=id, namespace=namespace, state=state)
    kb.configure_communities(communities)
    counts = {"documents": len(state.documents), "chunks": len(state.chunks), "entities": len(state.entities),
              "placeholder_entities": build.placeholders, "mentions": build.n_mentions, "related": build.n_related,
              "relationships": len(build.rel_map), "relationships_merged": len(build.rel_map) - build.n_related
              - build.rel_dropped, "relationships_without_evidence": build.rel_dropped,
              "unknown_text_unit_ids": build.unknown_tu, **comm_info["counts"]}
    kb.graphrag = GraphRAGImport(
        folder=str(tables.folder), layout=tables.layout, counts=counts, references=refs,
        notes=tuple(build.notes + comm_info["notes"]), warnings=tuple(build.warnings), documents=build.doc_map, text_units=build.tu_map,
        entities=build.entity_map, relationships=build.rel_map, communities=comm_info["map"],
        covariates=build.covariates)
    return kb


def chunk_id_for(text_unit_id: str, source_id: str) -> str:
    """The chunk id of a text unit: ``write_graphrag``'s ``<source>:<chunk>`` ids give the chunk id back."""
    if ":" in text_unit_id:
        ref = decode_ref("chunk:" + text_unit_id)
        if isinstance(ref, ChunkRef) and ref.source_id == source_id:
            return ref.chunk_id
    return text_unit_id


class _GraphBuilder(EntityEdgeBuilder):
    """Documents, chunks, entities and edges from the tables, with the lookups reports need."""

    def __init__(self, tables: GraphRAGTables):
        self.t = tables
        self.notes: list[str] = []
        self.unknown_tu = 0
        self.placeholders = 0
        self.warnings: list[GraphRAGWarning] = []

    def warn(self, code: str, table: str, column: str, rows: list[int], message: str) -> None:
        if rows:
            self.warnings.append(GraphRAGWarning(code, self.t.files.get(table, table), column, len(rows),
                                                 tuple(rows[:_SHOWN_ROWS]), message))

    # -------------------------------------------------------------- sources
    def _documents(self) -> tuple[dict[str, dict], dict[str, str]]:
        """GraphRAG documents by id, and the document id of every text unit."""
        t = self.t
        docs: dict[str, dict] = {}
        if t.has("documents"):
            for row in t.frames["documents"].to_dict("records"):
                if row["id"] is not None:
                    docs[row["id"]] = row
        tu_doc: dict[str, str] = {}
        ids = t.column("text_units", "id")
        if t.has("text_units", "document_id") or t.has("text_units", "document_ids"):
            single = t.column("text_units", "document_id")
            multi = t.column("text_units", "document_ids", [])
            for tu, one, many in zip(ids, single, multi):
                doc = one if one is not None else (many[0] if many else None)
                if doc is not None:
                    tu_doc[tu] = doc
            if any(len(m) > 1 for m in multi):
                self.notes.append("text units shared by several documents were given to their first document")
        for doc_id, row in docs.items():
            for tu in row.get("text_unit_ids") or ():
                tu_doc.setdefault(tu, doc_id)
        if not tu_doc and ids:
            t.require("text_units", "document_id", "document_ids",
                      why="to know each text unit's document (the documents table has no text_unit_ids either)")
        for doc_id in dict.fromkeys(tu_doc.values()):
            docs.setdefault(doc_id, {"id": doc_id, "title": None, "text": None})
        return docs, tu_doc

    def chunks(self) -> None:
        docs, tu_doc = self._documents()
        titles = [d.get("title") for d in docs.values()]
        by_title = all(isinstance(x, str) and x.strip() for x in titles) and len(set(titles)) == len(titles)
        self.source_of_doc = {d: (row["title"] if by_title else d) for d, row in docs.items()}
        rows, tu_rows = self._text_unit_rows(docs, tu_doc)
        rows.sort(key=lambda r: (r["source_id"], r["key"]))
        ordinal: dict[str, int] = {}
        for r in rows:
            r["ordinal"] = ordinal[r["source_id"]] = ordinal.get(r["source_id"], -1) + 1
            r["ref"] = encode_ref(ChunkRef(r["source_id"], r["chunk_id"]))
        self.chunk_of = {r["tu"]: r["ref"] for r in rows}
        self.source_of_chunk = {r["ref"]: r["source_id"] for r in rows}
        self.chunk_hrid = {str(h["human_readable_id"]): (self.chunk_of[h["graphrag_id"]],) for h in tu_rows}
        meta = {d: frozen_metadata(row.get("metadata") if isinstance(row.get("metadata"), dict) else {})
                for d, row in docs.items()}
        chunk_rows = [{"ref": r["ref"], "source_id": r["source_id"], "chunk_id": r["chunk_id"], "parent_id": None,
                       "ordinal": r["ordinal"], "content": r["content"], "n_chars": len(r["content"]),
                       "metadata": meta[tu_doc[r["tu"]]]} for r in rows]
        self.chunk_frame = _frame(chunk_rows, "chunks", ["source_id", "ordinal", "chunk_id"])
        self._document_frames(docs, rows, meta)
        self.tu_map = pd.DataFrame([{"chunk_ref": self.chunk_of[h["graphrag_id"]], **h} for h in tu_rows],
                                   columns=["chunk_ref", "graphrag_id", "human_readable_id", "n_tokens", "document_id"])

    def _text_unit_rows(self, docs: dict[str, dict], tu_doc: dict[str, str]) -> tuple[list[dict], list[dict]]:
        """One row per text unit (checked: present, unique, printable, in a document) and its id-map row."""
        t = self.t
        frame = t.frames["text_units"]
        if frame.empty:
            raise InputError(f"GraphRAG table {t.files['text_units']!r} has no rows: there is no text to import.",
                             code="graphrag_invalid_value", hint="point read_graphrag() at a finished GraphRAG index.")
        hrid = t.column("text_units", "human_readable_id")
        order = {tu: (k if h is None else h, k) for k, (tu, h) in enumerate(zip(frame["id"], hrid))}
        position = {tu: i for row in docs.values() for i, tu in enumerate(row.get("text_unit_ids") or ())}
        rows, tu_rows, seen = [], [], set()
        for k, rec in enumerate(frame.to_dict("records")):
            tu = rec["id"]
            if tu is None or tu in seen:
                raise InputError(f"GraphRAG table {t.files['text_units']!r} row {k}: text unit id {tu!r} is "
                                 "missing or repeated.", code="graphrag_invalid_value")
            seen.add(tu)
            if any(ord(ch) < 32 for ch in tu):
                raise InputError(f"GraphRAG table {t.files['text_units']!r}, column 'id', row {k}: text unit id "
                                 f"{tu!r} contains control characters.", code="graphrag_invalid_value",
                                 hint="text unit ids become chunk ids, which must be printable.")
            doc = tu_doc.get(tu)
            if doc is None:
                raise InputError(f"GraphRAG text unit {tu!r} belongs to no document.", code="graphrag_invalid_value")
            source = self.source_of_doc[doc]
            rows.append({"tu": tu, "source_id": source, "chunk_id": chunk_id_for(tu, source),
                         "key": (position.get(tu, len(position) + order[tu][0]), order[tu]), "content": rec["text"]})
            tu_rows.append({"graphrag_id": tu, "human_readable_id": order[tu][0], "n_tokens": rec.get("n_tokens"),
                            "document_id": doc})
        return rows, tu_rows

    def _document_frames(self, docs: dict[str, dict], rows: list[dict], meta: dict[str, Any]) -> None:
        """The documents frame (documents without text units left out, with a warning) and the id map."""
        doc_rows, map_rows, by_source = [], [], {}
        for r in rows:
            by_source.setdefault(r["source_id"], []).append(r)
        empty = [k for k, d in enumerate(docs) if not by_source.get(self.source_of_doc[d])]
        self.warn("documents_without_text_units", "documents", "text_unit_ids", empty,
                  "documents without any text unit were left out (they have nothing to retrieve)")
        for d, row in docs.items():
            source = self.source_of_doc[d]
            mine = by_source.get(source, [])
            if not mine:
                continue
            text = row.get("text") if isinstance(row.get("text"), str) else "\n\n".join(r["content"] for r in mine)
            doc_rows.append({"source_id": source, "title": row.get("title") or source, "path": None,
                             "media_type": "text/plain", "content_hash": stable_hash({"text": text}),
                             "n_chunks": len(mine), "n_chars": len(text), "metadata": meta[d]})
            map_rows.append({"source_id": source, "graphrag_id": d, "human_readable_id": row.get("human_readable_id"),
                             "title": row.get("title"), "creation_date": row.get("creation_date")})
        self.doc_frame = _frame(doc_rows, "documents", ["source_id"])
        self.doc_map = pd.DataFrame(map_rows, columns=["source_id", "graphrag_id", "human_readable_id", "title",
                                                       "creation_date"])

    def known_chunks(self, ids: list[str]) -> list[str]:
        """Chunk refs of text unit ids (legacy comma-joined ids split); unknown ids are counted."""
        out = []
        for tu in ids:
            if tu in self.chunk_of:
                out.append(self.chunk_of[tu])
            elif "," in tu and all(p.strip() in self.chunk_of for p in tu.split(",")):
                out += [self.chunk_of[p.strip()] for p in tu.split(",")]
            else:
                self.unknown_tu += 1
        return list(dict.fromkeys(out))

    def state(self) -> KBState:
        self.chunks()
        self.entities()
        self.edges()
        self.entity_frame = _frame(self.entity_rows, "entities", ["entity_id"])
        self.entity_map = pd.DataFrame(self.entity_map_rows, columns=["entity_id", "graphrag_id", "human_readable_id",
                                                                      "title", "frequency", "degree", "placeholder"])
        self.covariates = self._covariates()
        return KBState(documents=self.doc_frame, chunks=self.chunk_frame, entities=self.entity_frame,
                       edges=self.edge_frame, edge_evidence=self.evidence_frame)

    def _covariates(self) -> pd.DataFrame:
        if not self.t.has("covariates"):
            self.claim_hrid = {}
            return pd.DataFrame()
        frame = self.t.frames["covariates"].copy()
        frame["chunk_ref"] = [self.chunk_of.get(tu) if tu else None for tu in frame["text_unit_id"]]
        hrid = self.t.column("covariates", "human_readable_id")
        self.claim_hrid = {str(k if h is None else h): (c,) for k, (h, c) in enumerate(zip(hrid, frame["chunk_ref"]))
                           if isinstance(c, str)}
        return frame
