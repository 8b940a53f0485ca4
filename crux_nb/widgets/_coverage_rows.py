"""The coverage view's tables and tree nodes, built from a :class:`~crux_nb.widgets.CoverageData`.

``coverage_frame(data, by)`` is ``CoverageData.to_frame(by)``: one row per finding, support,
community or batch in the columns of ``FRAME_COLUMNS``; ``coverage_nodes(data)`` lays the searched
communities out for the tree drawing, each with its status (``STATUSES``) and tooltip.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..errors import ParameterError
from .layout import TreeNode, fmt

# ``data`` below is a CoverageData, read by attribute only: importing its module here would close a
# cycle (_coverage_data's to_frame() and tree_order() call down into this module).
CoverageData = Any

__all__ = ["FRAME_COLUMNS", "STATUSES", "STATUS_LABELS", "coverage_frame", "coverage_nodes", "rating_text"]

# community status in the hierarchy, in legend order
STATUSES = ("mapped", "visited", "skipped", "truncated", "excluded", "unread")
STATUS_LABELS = {"mapped": "mapped", "visited": "visited, not mapped", "skipped": "skipped (rated below threshold)",
                 "truncated": "truncated (rating budget)", "excluded": "excluded (compensation)",
                 "unread": "not read"}
FRAME_COLUMNS = {
    "finding": ["rank", "finding_target", "score", "statement", "community_id", "generation", "resolution",
                "cited_findings", "cited_communities", "supports", "n_supports", "assertion_refs"],
    "support": ["rank", "finding_target", "support", "cited_findings", "text"],
    "community": ["community_id", "level", "parent_id", "title", "status", "rating", "decision", "fallback", "batch",
                  "findings", "chars"],
    "batch": ["batch", "prompt_id", "community_ids", "reports", "findings", "input_chars", "calls", "repaired", "ok"],
}


def coverage_frame(data: CoverageData, by: str = "finding") -> pd.DataFrame:
    """``data.to_frame(by)``: the rows of ``by`` in the columns ``FRAME_COLUMNS[by]``, typed."""
    if by not in FRAME_COLUMNS:
        raise ParameterError("CoverageView.to_frame()", "by", f"one of {list(FRAME_COLUMNS)}", by)
    rows = _ROWS[by](data)
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS[by])
    types = {"finding": {"rank": "int64", "score": "float64", "n_supports": "int64"},
             "support": {"rank": "int64"},
             "community": {"level": "int64", "rating": "float64", "fallback": "bool", "batch": "Int64",
                           "findings": "int64",
                           "chars": "int64"},
             "batch": {"batch": "int64", "reports": "int64", "findings": "int64", "input_chars": "int64",
                       "calls": "int64", "repaired": "int64", "ok": "bool"}}[by]
    frame = frame.astype(types)
    for column in FRAME_COLUMNS[by]:
        if column not in types:
            frame[column] = frame[column].astype("str")
    return frame


def _rows_finding(data: CoverageData) -> list[dict]:
    return [{"rank": f.rank, "finding_target": f.target, "score": f.score, "statement": f.statement,
             "community_id": f.community_id, "generation": f.generation, "resolution": f.resolution,
             "cited_findings": " ".join(c.id for c in f.cited),
             "cited_communities": " ".join(f.cited_communities), "supports": " ".join(f.supports),
             "n_supports": len(f.supports), "assertion_refs": " ".join(f.assertion_refs)} for f in data.findings]


def _rows_support(data: CoverageData) -> list[dict]:
    return [{"rank": f.rank, "finding_target": f.target, "support": ref,
             "cited_findings": " ".join(c.id for c in f.cited if ref in c.evidence), "text": data.texts.get(ref)}
            for f in data.findings for ref in f.supports]


def _rows_community(data: CoverageData) -> list[dict]:
    rows = []
    places = {cid: (parent, level) for cid, parent, level in data.hierarchy()}
    for cid in data.tree_order():
        parent, level = places[cid]
        rating, unit, batch = data.rating(cid), data.unit(cid), data.batch_of(cid)
        rows.append({"community_id": cid, "level": level, "parent_id": parent, "title": data.title(cid),
                     "status": data.status(cid), "rating": None if rating is None else rating.rating,
                     "decision": None if rating is None else rating.decision,
                     "fallback": rating is not None and rating.fallback,
                     "batch": None if batch is None else batch.index + 1,
                     "findings": len(unit.findings) if unit else 0, "chars": unit.chars if unit else 0})
    return rows


def _rows_batch(data: CoverageData) -> list[dict]:
    rows = []
    for b in data.batches:
        calls = data.batch_calls(b)
        rows.append({"batch": b.index + 1, "prompt_id": b.prompt_id, "community_ids": " ".join(b.community_ids),
                     "reports": len(b.community_ids),
                     "findings": sum(len(u.findings) for c in b.community_ids if (u := data.unit(c))),
                     "input_chars": b.input_chars, "calls": len(calls),
                     "repaired": sum(c.repaired for c in calls), "ok": bool(calls) and calls[-1].ok})
    return rows


_ROWS = {"finding": _rows_finding, "support": _rows_support, "community": _rows_community, "batch": _rows_batch}


# ----------------------------------------------------------------------- tree nodes
def rating_text(value: float | None) -> str:
    return "" if value is None else fmt(value)


def coverage_nodes(data: CoverageData) -> list[TreeNode]:
    nodes = []
    drawn = {c for c, _, _ in data.hierarchy()}
    for cid, parent, level in data.hierarchy():
        status = data.status(cid)
        rating, batch = data.rating(cid), data.batch_of(cid)
        title = data.title(cid)
        tip = [f"{title} ({cid})" if title else cid, f"level {level}", STATUS_LABELS[status]]
        if rating is not None and rating.rating is not None:
            tip.append(f"rating {rating_text(rating.rating)}")
        if rating is not None and rating.fallback:
            tip.append("chosen by the fallback")
        if batch is not None:
            tip.append(f"batch {batch.index + 1}")
        if parent is not None and parent not in drawn:
            tip.append(f"parent {parent} not drawn")
        nodes.append(TreeNode(cid, parent, level, title or cid, status,
                              rating_text(rating.rating) if rating is not None else "", " · ".join(tip),
                              dashed=status == "excluded"))
    return nodes
