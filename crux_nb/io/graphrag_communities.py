"""GraphRAG communities and reports as a ready crux_nb community generation.

* **Hierarchy** — from ``parent`` (else ``children``; else inferred for old layouts:
  a community's parent is the community one GraphRAG level up sharing most of its
  entities, then text units). GraphRAG counts levels from the top (0 = coarsest);
  crux_nb from the leaves: a community without children is level 0, a parent is
  1 + the highest level of its children. GraphRAG's level is kept in
  ``kb.graphrag.communities`` (``graphrag_level``). Several top communities are
  several roots; a community need not cover every chunk in exactly one leaf.
* **Ids** — a community's id is its GraphRAG ``id`` (``community-<number>`` when the
  table has no usable id column); its number, human readable id and report id are
  kept in ``kb.graphrag.communities``.
* **Members** — a community's text units (chunks) and entities. As in crux_nb, the
  members table lists a leaf's members; a GraphRAG parent may also hold text units
  or entities none of its children holds, and those are listed on the parent.
* **Reports** — title and summary; every finding ``{summary, explanation}`` becomes
  the statement ``"<summary>: <explanation>"`` without its ``[Data: ...]`` blocks
  (just the explanation when it already starts with the summary, as in files
  :func:`~crux_nb.io.write_graphrag` writes). Its evidence is what those blocks
  resolve to (see :mod:`crux_nb.io.graphrag_refs`), else the community's chunks.
  A community without a report gets an empty one titled after the community.

The generation is published for scope ``corpus`` with the current input
fingerprint and the given configuration's strategy fingerprint, so
``kb.communities.status()`` is ``"ready"``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .._hashing import stable_hash
from ..community.cluster import Community
from ..community.frames import generation_frames, input_fingerprint, with_generation
from ..community.graph_input import entity_size
from ..community import Finding, Report
from ..community.reports import member_hashes
from ..community.surface import CORPUS
from ..errors import InputError
from .graphrag_refs import ReferenceResolver, strip_references

__all__ = ["build_generation", "finding_statement"]


def finding_statement(summary: str, explanation: str) -> str:
    """One crux_nb statement from a GraphRAG finding (references removed)."""
    summary, explanation = strip_references(summary or ""), strip_references(explanation or "")
    head = summary.rstrip("…").strip()
    if not explanation:
        return summary
    if not head or explanation.startswith(head):
        return explanation
    return f"{summary}: {explanation}"


def _keys(t: Any) -> list[str]:
    for column in ("community", "human_readable_id"):
        if t.has("communities", column) and None not in t.column("communities", column):
            return [str(v) for v in t.column("communities", column)]
    ids = t.column("communities", "id")
    if t.has("communities", "id") and all(isinstance(v, str) and v.strip().lstrip("-").isdigit() for v in ids):
        return [str(int(v)) for v in ids]
    t.require("communities", "community", "human_readable_id", why="to match communities with their reports")
    raise InputError(f"GraphRAG table {t.files['communities']!r} has empty community numbers.",
                     code="graphrag_invalid_value")


def _levels(t: Any, n: int) -> list[int]:
    """GraphRAG's level per community: an integer from 0 to the number of communities (a tree of n
    communities has at most n levels); anything else is refused naming the row."""
    levels = t.column("communities", "level")
    for row, value in enumerate(levels):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= max(n, 1):
            raise InputError(f"GraphRAG table {t.files['communities']!r}, column 'level', row {row}: "
                             f"{value!r} is not a level (an integer from 0 to {max(n, 1)}).",
                             code="graphrag_invalid_value",
                             hint="GraphRAG numbers community levels from 0 (the roots); fix or drop the row.")
    return list(levels)


def _check_tree(t: Any, keys: list[str], parents: dict[str, str | None], build: Any) -> None:
    """Warn where the tree read differs from what the table says: a parent that does not exist (the community
    became a root), or a ``children`` column that disagrees with the ``parent`` column (the parents win)."""
    if t.has("communities", "parent"):
        named = t.column("communities", "parent")
        build.warn("missing_parent", "communities", "parent",
                   [i for i, k in enumerate(keys) if named[i] is not None and named[i] >= 0 and parents[k] is None],
                   "communities name a parent that does not exist; they became roots")
        if t.has("communities", "children"):
            claimed = {str(kid): k for k, kids in zip(keys, t.column("communities", "children")) for kid in kids or ()}
            build.warn("children_mismatch", "communities", "children",
                       [i for i, k in enumerate(keys) if claimed.get(k) != parents[k]],
                       "the children column disagrees with the parent column (cycles or other parents); the "
                       "parent column was used")


def _report_rows(t: Any, keys: list[str], build: Any, notes: list[str]) -> tuple[dict, list[str]]:
    """Reports by community key (the first of duplicates), the keys of reports without a community; warnings
    for reports naming an unknown or repeated community and for reports without findings."""
    rows, duplicates, unknown, empty, known = {}, [], [], [], set(keys)
    for i, r in enumerate(t.frames["community_reports"].to_dict("records")):
        if r["community"] is None:
            continue
        key = str(r["community"])
        if key in rows:
            duplicates.append(i)
            continue
        rows[key] = r
        unknown += [i] if key not in known else []
        empty += [i] if key in known and not (r.get("findings") or ()) else []
    build.warn("duplicate_reports", "community_reports", "community", duplicates,
               "several reports name the same community; the first was kept")
    build.warn("reports_without_community", "community_reports", "community", unknown,
               "reports name a community the communities table lacks; they were left out")
    build.warn("reports_without_findings", "community_reports", "findings", empty,
               "reports have no findings; global search has nothing to map from them")
    orphans = sorted(set(rows) - known)
    if orphans:
        notes.append(f"{len(orphans)} reports name a community the communities table lacks and were left out")
    return rows, orphans


def _parents(t: Any, keys: list[str], levels: list[int], entities: list[set], chunks: list[set],
             notes: list[str]) -> dict[str, str | None]:
    known = set(keys)
    if t.has("communities", "parent"):
        parents = {k: (None if p is None or p < 0 else str(p)) for k, p in zip(keys, t.column("communities", "parent"))}
    elif t.has("communities", "children"):
        parents = dict.fromkeys(keys)
        for k, kids in zip(keys, t.column("communities", "children")):
            for kid in kids:
                parents[str(kid)] = k
    else:  # old layouts: the community one level up that shares most members
        parents = {}
        index = {k: i for i, k in enumerate(keys)}
        for i, k in enumerate(keys):
            ups = [j for j, level in enumerate(levels) if level == levels[i] - 1]
            score = lambda j: (len(entities[i] & entities[j]), len(chunks[i] & chunks[j]))  # noqa: E731
            best = max(ups, key=lambda j: (score(j), -index[keys[j]]), default=None)
            parents[k] = keys[best] if best is not None and score(best) > (0, 0) else None
        notes.append("the communities table has no 'parent' column: parents were inferred from shared members")
    dangling = [k for k, p in parents.items() if p is not None and p not in known]
    for k in dangling:
        parents[k] = None
    if dangling:
        notes.append(f"{len(dangling)} communities name a parent that does not exist and became roots")
    return parents


def _crux_levels(keys: list[str], parents: dict[str, str | None], file: str) -> tuple[dict[str, int], dict[str, list]]:
    children: dict[str, list[str]] = {k: [] for k in keys}
    for k in keys:
        if parents[k] is not None:
            children[parents[k]].append(k)
    for k in keys:  # cycles would never end the walk to a root
        seen, cur = set(), k
        while cur is not None:
            if cur in seen:
                raise InputError(f"GraphRAG table {file!r}: community {k} is its own ancestor.",
                                 code="graphrag_invalid_value")
            seen.add(cur)
            cur = parents[cur]
    level: dict[str, int] = {}
    for k in sorted(keys, key=lambda k: -_depth(k, parents)):
        level[k] = 1 + max(level[c] for c in children[k]) if children[k] else 0
    return level, children


def _depth(key: str, parents: dict[str, str | None]) -> int:
    depth = 0
    while parents[key] is not None:
        key, depth = parents[key], depth + 1
    return depth


def build_generation(state: Any, t: Any, build: Any, config: Any) -> tuple[Any, Any, dict]:
    """(state with the imported generation, reference counts, {"counts", "notes", "map"})."""
    notes: list[str] = []
    keys = _keys(t)
    if len(set(keys)) != len(keys):
        raise InputError(f"GraphRAG table {t.files['communities']!r} repeats a community number.",
                         code="graphrag_invalid_value")
    gr_ids = t.column("communities", "id")
    usable = t.has("communities", "id") and None not in gr_ids and len(set(gr_ids)) == len(gr_ids)
    cid = {k: (gr_ids[i] if usable else f"community-{k}") for i, k in enumerate(keys)}
    gr_levels = _levels(t, len(keys))
    chunk_sets, entity_lists = _memberships(t, len(keys), build)
    parents = _parents(t, keys, gr_levels, [set(e) for e in entity_lists], [set(c) for c in chunk_sets], notes)
    _check_tree(t, keys, parents, build)
    level, children = _crux_levels(keys, parents, t.files["communities"])
    report_rows, orphans = _report_rows(t, keys, build, notes)
    chunk_of_key = {k: tuple(sorted(chunk_sets[i])) for i, k in enumerate(keys)}
    resolver = ReferenceResolver({"entities": build.entity_hrid, "relationships": build.rel_hrid,
                                  "sources": build.chunk_hrid, "reports": chunk_of_key,
                                  "claims": getattr(build, "claim_hrid", {})})
    chunk_chars = dict(zip(state.chunks["ref"], state.chunks["n_chars"]))
    chunk_text = dict(zip(state.chunks["ref"], state.chunks["content"]))
    names = dict(zip(state.entities["ref"], state.entities["canonical_name"]))
    descs = dict(zip(state.entities["ref"], state.entities["description"]))
    titles = t.column("communities", "title")
    comms, bare, map_rows = [], 0, []
    for i, k in enumerate(keys):
        chunk_refs, entity_refs = tuple(sorted(chunk_sets[i])), tuple(sorted(entity_lists[i]))
        kind = "root" if parents[k] is None else ("parent" if children[k] else "leaf")
        chars = sum(chunk_chars[c] for c in chunk_refs) + sum(entity_size(names[e], descs[e]) for e in entity_refs)
        comms.append(Community(cid[k], level[k], kind, None if parents[k] is None else cid[parents[k]],
                               tuple(sorted(cid[c] for c in children[k])), chunk_refs, entity_refs, chars))
        report = report_rows.get(k)
        bare += report is None
        map_rows.append({"community_id": cid[k], "community": int(k) if k.lstrip("-").isdigit() else k,
                         "graphrag_id": gr_ids[i], "human_readable_id": t.column("communities", "human_readable_id")[i],
                         "graphrag_level": gr_levels[i], "level": level[k],
                         "parent": -1 if parents[k] is None else int(parents[k]) if parents[k].isdigit() else parents[k],
                         "report_id": None if report is None else report.get("id"), "title": titles[i],
                         "rank": None if report is None else report.get("rank"),
                         "rating_explanation": None if report is None else report.get("rating_explanation"),
                         "period": t.column("communities", "period")[i], "size": len(entity_lists[i])})
    reports = _reports(keys, comms, report_rows, resolver, titles, member_hashes(comms, chunk_text, names))
    counts = {"communities": len(comms), "reports": len(comms) - bare, "communities_without_report": bare,
              "reports_without_community": len(orphans), "roots": sum(c.kind == "root" for c in comms),
              "leaves": sum(not c.child_ids for c in comms), "levels": 1 + max((c.level for c in comms), default=-1),
              "graphrag_levels": len(set(gr_levels))}
    if bare:
        notes.append(f"{bare} communities have no report: they got an empty report titled after the community")
    info = {"counts": counts, "notes": notes,
            "map": pd.DataFrame(map_rows, columns=["community_id", "community", "graphrag_id", "human_readable_id",
                                                   "graphrag_level", "level", "parent", "report_id", "title", "rank",
                                                   "rating_explanation", "period", "size"])}
    return (_published(state, comms, reports, config) if comms else state), resolver.counts, info


def _published(state: Any, comms: list[Community], reports: dict[str, Report], config: Any) -> Any:
    """``state`` with the imported communities and reports as its ready corpus generation."""
    input_fp = input_fingerprint(state, None)
    strategy = config.strategy_fingerprint
    generation_id = "cg-" + stable_hash({"scope": CORPUS, "input": input_fp, "strategy": strategy, "import": "graphrag",
                                         "reports": sorted((r.community_id, r.member_hash, r.title)
                                                           for r in reports.values())})
    docs = state.documents
    frames = generation_frames(CORPUS, generation_id, comms, reports, input_fp=input_fp, strategy_fp=strategy,
                               view=(None, None), sequence=1,
                               source_hashes=dict(zip(docs["source_id"], docs["content_hash"])))
    frames["community_members"] = pd.concat([frames["community_members"], _direct_members(comms, generation_id)],
                                            ignore_index=True)
    return with_generation(state, CORPUS, frames)


def _memberships(t: Any, n: int, build: Any) -> tuple[list, list]:
    """Each community's chunks (its text units, or its entities' chunks) and entities (listed, or its
    relationships' ends)."""
    chunk_sets = ([build.known_chunks(ids) for ids in t.column("communities", "text_unit_ids")]
                  if t.has("communities", "text_unit_ids") else None)
    entity_lists, dangling = [], []
    rel_ends = dict(zip(build.rel_map["graphrag_id"], zip(build.rel_map["source"], build.rel_map["target"])))
    for i in range(n):
        if t.has("communities", "entity_ids"):
            listed = t.column("communities", "entity_ids")[i] or ()
            refs = [build.entity_of_id[e] for e in listed if e in build.entity_of_id]
            dangling += [i] if len(refs) < len(listed) else []
        else:
            ends = [x for r in t.column("communities", "relationship_ids", [])[i] for x in rel_ends.get(r, ())]
            refs = [build.entity_of_title[x] for x in ends if x in build.entity_of_title]
        entity_lists.append(list(dict.fromkeys(refs)))
    build.warn("unknown_entity_ids", "communities", "entity_ids", dangling,
               "communities list entity ids the entities table lacks; those members were left out")
    if chunk_sets is None:
        chunk_sets = [list(dict.fromkeys(c for e in refs for c in build.entity_chunks.get(e, ())))
                      for refs in entity_lists]
    return chunk_sets, entity_lists


def _reports(keys: list[str], comms: list[Community], report_rows: dict, resolver: Any, titles: list,
             hashes: dict[str, str]) -> dict[str, Report]:
    """GraphRAG's reports as the one report model: findings with their references resolved to evidence."""
    reports = {}
    for i, k in enumerate(keys):
        c, row = comms[i], report_rows.get(k) or {}
        findings = []
        for f in row.get("findings") or ():
            statement = finding_statement(f["summary"], f["explanation"])
            if not statement:
                continue
            evidence = resolver.finding(f["summary"] + " " + f["explanation"], c.chunk_refs)
            findings.append(Finding(f"finding-{len(findings) + 1}", statement, tuple(evidence)))
        title = row.get("title") or titles[i] or f"Community {k}"
        reports[c.community_id] = Report(c.community_id, c.level, c.parent_id, title, row.get("summary") or "",
                                         tuple(findings), hashes[c.community_id], len(c.entity_refs),
                                         len(c.chunk_refs))
    return reports


def _direct_members(comms: list[Community], generation_id: str) -> pd.DataFrame:
    """Member rows of parents for the members none of their children holds (GraphRAG parents may have some)."""
    by_id = {c.community_id: c for c in comms}
    rows = []
    for c in comms:
        if not c.child_ids:
            continue  # leaves: generation_frames wrote them
        below = {m for k in c.child_ids for m in by_id[k].chunk_refs + by_id[k].entity_refs}
        rows += [{"scope": CORPUS, "generation_id": generation_id, "community_id": c.community_id, "member_ref": m,
                  "member_kind": m.split(":", 1)[0]} for m in c.chunk_refs + c.entity_refs if m not in below]
    return pd.DataFrame(rows, columns=["scope", "generation_id", "community_id", "member_ref", "member_kind"])
