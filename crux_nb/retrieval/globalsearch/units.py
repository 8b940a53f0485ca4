"""Global search units: reports and raw chunks as mappable units, freshness resolution and detail.

A unit is one :class:`~crux_nb.community.Report` whose finding ids are qualified
(``<community_id>:<finding_id>``); a raw chunk is mapped as a one-finding report. Freshness follows
upstream's order: ``exact`` (communities ready), ``compensated`` (an older
generation minus reports touching removed or changed sources, plus raw units
for added sources, within one batch), ``raw-fallback`` (every visible chunk
fits one batch) and ``materialization-wait`` (build, then read).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..._hashing import stable_hash
from ...refs import ChunkRef, KnowledgeRef, encode_ref
from ...community import Finding, Report

#: Map input characters per batch (upstream's 24,000): batches are packed up to it, in (level, id) order.
BATCH_BUDGET = 24_000
BASIS = {
    "exact": "current community generation matched the pinned read surface",
    "compensated": "older community generation plus direct mapping over added sources",
    "compensated-removals": "older community generation without reports holding removed or changed sources, "
                            "plus direct mapping over added sources",
    "raw-fallback": "direct mapping over current evidence because no usable community generation was available",
    "materialization-wait": "waited for community materialization",
}

@dataclass(frozen=True)
class Freshness:
    """What :func:`resolve` found to search: the units, their coverage (``exact``, ``compensated``,
    ``raw-fallback``, ``materialization-wait``) and its basis, the generations read, the reports excluded.

    >>> Freshness((), "exact", BASIS["exact"], ("cg-1",)).coverage
    'exact'
    """

    units: tuple[Report, ...]
    coverage: str
    basis: str
    generations: tuple[str, ...]
    excluded: tuple[str, ...] = ()  # report ids dropped by compensation


def report_units(reports: list[Report]) -> list[Report]:
    return [r.qualified() for r in reports]


def raw_units(state: Any, sources: set[str], generation: str) -> list[Report]:
    chunks = state.chunks[state.chunks["source_id"].isin(sources)]
    units = []
    for source_id, chunk_id, content in zip(chunks["source_id"], chunks["chunk_id"], chunks["content"]):
        ref = ChunkRef(source_id, chunk_id)
        uid = f"raw:{encode_ref(ref)[len('chunk:'):]}"
        units.append(Report(uid, 0, None, source_id, content, (Finding(uid, content, (ref,)),), generation_id=generation))
    return sorted(units, key=lambda u: u.community_id)


def total_chars(units: list[Report]) -> int:
    return sum(u.chars for u in units)


def resolve(surface: Any, *, wait: bool = True) -> Freshness:
    """The units ``global_search`` would search in ``surface`` (``kb.communities``), and how fresh they are.

    Parameters
    ----------
    surface : CommunitySurface
        ``kb.communities`` (or a view's).
    wait : bool
        When nothing fresh enough can be mapped: build the communities (``True``) or return no units.

    Returns
    -------
    Freshness
        ``units``: every report with qualified finding ids (``<community_id>:<finding_id>``), plus raw
        chunks mapped as one-finding reports where the generation is behind; ``coverage`` says which case.

    Examples
    --------
    >>> import crux_nb
    >>> from crux_nb.models import OfflineModel
    >>> kb = crux_nb.knowledge_base(id="docs", communities=crux_nb.communities(model=OfflineModel()))
    >>> kb.add_text("a.md", "Ada Park leads the Lumen launch. Ada Park works with Ben Ito in Dublin.")
    >>> resolve(kb.communities).coverage  # one small source: mapped raw, nothing is built
    'raw-fallback'
    >>> _ = kb.communities.prepare(progress=False)
    >>> fresh = resolve(kb.communities)
    >>> unit = fresh.units[0]
    >>> fresh.coverage, len(fresh.units), unit.findings[0].id.startswith(unit.community_id + ":")
    ('exact', 1, True)
    """
    from ...community.frames import read_reports

    state = surface.kb.state
    status = surface.status()
    if status == "ready":
        reports = read_reports(state, surface.scope)
        return Freshness(tuple(report_units(reports)), "exact", BASIS["exact"], _generations(reports))
    visible = surface.visible_sources(state)
    compensated = _compensate(surface, state, visible) if status in ("stale", "missing") else None
    if compensated is not None:
        return compensated
    raw = raw_units(state, visible, "raw-fallback")
    if total_chars(raw) <= BATCH_BUDGET:
        return Freshness(tuple(raw), "raw-fallback", BASIS["raw-fallback"], ("raw-fallback",) if raw else ())
    if not wait:
        return Freshness((), "materialization-wait", BASIS["materialization-wait"], ())
    surface.prepare()
    reports = read_reports(surface.kb.state, surface.scope)
    return Freshness(tuple(report_units(reports)), "materialization-wait", BASIS["materialization-wait"],
                     _generations(reports))


def _generations(reports: list[Any]) -> tuple[str, ...]:
    return tuple(sorted({r.generation_id for r in reports}))


def _compensate(surface: Any, state: Any, visible: set[str]) -> Freshness | None:
    """An older generation, minus reports touching removed or changed sources, plus raw added sources."""
    from ...community.frames import read_reports

    pointer = surface.previous_pointer()
    if pointer is None or pointer["strategy_fingerprint"] != surface.config.strategy_fingerprint:
        return None
    old = json.loads(pointer["source_hashes"]) if isinstance(pointer["source_hashes"], str) else {}
    docs = state.documents
    current = {s: h for s, h in zip(docs["source_id"], docs["content_hash"]) if s in visible}
    changed = {s for s in old if s in current and old[s] != current[s]}
    removed = {s for s in old if s not in current} | changed
    added = {s for s in current if s not in old} | changed
    if not added and not removed:
        return None  # the graph changed without any source changing: nothing to compensate
    raw = raw_units(state, added, "compensated-addition")
    if total_chars(raw) > BATCH_BUDGET:
        return None
    reports = read_reports(state, pointer["scope"])
    excluded = _touching(state, pointer["scope"], removed, reports)
    kept = [r for r in reports if r.community_id not in excluded]
    units = report_units(kept) + raw
    generations = tuple(sorted({pointer["generation_id"], *(["compensated-addition"] if raw else [])}))
    basis = BASIS["compensated-removals"] if removed else BASIS["compensated"]
    return Freshness(tuple(units), "compensated", basis, generations, tuple(sorted(excluded)))


def _touching(state: Any, scope: str, removed: set[str], reports: list[Any]) -> set[str]:
    """Reports whose community (or a descendant) holds a chunk of a removed source."""
    if not removed:
        return set()
    members = state.community_members[state.community_members["scope"] == scope]
    prefixes = tuple(encode_ref(ChunkRef(s, "")) for s in removed)
    hit = set(members[members["member_ref"].str.startswith(prefixes)]["community_id"])
    parents = {r.community_id: r.parent_id for r in reports}
    out = set()
    for cid in hit:
        while cid is not None and cid not in out:
            out.add(cid)
            cid = parents.get(cid)
    return out


def select_detail(units: list[Report], detail: str) -> list[Report]:
    """``detailed``: every leaf (a unit that is no unit's parent); ``overview``: every parent, plus every leaf
    that no report one level up covers: a leaf with no parent (a forest's top level, e.g. an imported GraphRAG
    index) or whose parent is above level 1 (the leaf sits beside a sibling that has children of its own).

    Such a leaf has no coarse report of its own: in a forest nothing covers it, and a report two or more
    levels up keeps only a few of its children's findings (``max_findings``, shared by all of them), so
    without it overview would not cover the corpus, and on a ragged, shallow tree (a root over a few
    parents and many leaves) it would be too few reports for an adaptive scan to choose among. On a tree
    whose leaves all sit at the same depth, overview is exactly the parents.

    >>> from crux_nb.community import Report
    >>> tree = [Report("root", 2, None, "", ""), Report("p", 1, "root", "", ""),
    ...         Report("p-leaf", 0, "p", "", ""), Report("top-leaf", 0, "root", "", "")]
    >>> [u.community_id for u in select_detail(tree, "overview")], [u.community_id for u in select_detail(tree, "detailed")]
    (['top-leaf', 'p', 'root'], ['p-leaf', 'top-leaf'])
    """
    parents = {u.parent_id for u in units if u.parent_id is not None}
    if detail != "overview":
        return sorted((u for u in units if u.community_id not in parents), key=lambda u: (u.level, u.community_id))
    level = {u.community_id: u.level for u in units}
    chosen = [u for u in units if u.community_id in parents or u.parent_id is None or level.get(u.parent_id, 0) >= 2]
    return sorted(chosen, key=lambda u: (u.level, u.community_id))


def auto_detail(*, query: str, generations: tuple[str, ...], strategy: str, model_fingerprint: str, scan: str,
                limit: int) -> str:
    """Upstream's parity rule over a stable hash: even → overview, odd → detailed."""
    digest = stable_hash({"query": query.strip().lower(), "generations": list(generations), "strategy": strategy,
                          "model": model_fingerprint, "scan": scan, "limit": limit}, length=64)
    return "overview" if int(digest[-2:], 16) % 2 == 0 else "detailed"
