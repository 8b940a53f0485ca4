"""``kb.graph_report()``: the entity graph's quality at a glance, before expansion is trusted.

One pass over the ``entities`` table and the ``mentions`` / ``related`` edges gives:

* **hubs**: the entities named in the largest share of chunks (top ``top``). An entity named in
  more than :data:`HUB_SHARE` of the chunks (of a knowledge base of at least :data:`HUB_MIN_CHUNKS`
  chunks) is flagged ``hub``: it is not specific, so a path through it says little
  (``expand_relations(hub_share=HUB_SHARE)`` routes nothing through it; the Carol's
  ``Scrooge`` is in 77% of its chunks; on CPython's topics the largest is ``Python`` at 14%);
* the **untyped share**: entities with no type or type ``other``;
* **suspicious aliases**: an alias sharing no word and no initials with its entity's name
  (``CPU`` as an alias of ``API``), the sign of a fold without evidence;
* **isolated** entities: named in chunks but linked to no other entity;
* **per-type counts**.

The result's ``.to_frame()`` has one row per finding (``kind``, ``entity``, ``value``, ``detail``; a hub
row's value is its share of chunks, its detail its share of mention edges and ``hub`` when flagged);
its ``_repr_html_`` is static HTML (CSS only, deterministic, every name escaped).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..display.html import graph_report_html
from ..graph.frontier_index import HUB_MIN_CHUNKS, HUB_SHARE  # one definition, shared with expand_relations' cut

__all__ = ["GraphReport", "graph_report", "HUB_SHARE", "HUB_MIN_CHUNKS", "suspicious_alias"]

_WORDS = re.compile(r"[^\W_]+")


def _tokens(name: str) -> set[str]:
    words = {w.casefold() for w in _WORDS.findall(name)}
    return words | {w[:-1] for w in words if len(w) > 2 and w.endswith("s")}  # "ABCs" shares "abc"


def _initials(name: str) -> str:
    return "".join(w[0] for w in _WORDS.findall(name)).casefold()


def suspicious_alias(name: str, alias: str) -> bool:
    """An alias sharing no word with the name and not spelling its initials (nor the other way round).

    >>> suspicious_alias("API", "CPU"), suspicious_alias("Application Programming Interface", "API")
    (True, False)
    >>> suspicious_alias("Jacob Marley", "Marley"), suspicious_alias("Ebenezer Scrooge", "Mr. Scrooge")
    (False, False)
    """
    if _tokens(name) & _tokens(alias):
        return False
    short, long = sorted((alias, name), key=len)
    compact = "".join(_WORDS.findall(short)).casefold()
    return not compact or compact != _initials(long)


@dataclass(frozen=True)
class GraphReport:
    """What :func:`graph_report` found; ``frame`` has one row per finding."""

    n_entities: int
    n_chunks: int
    n_mentions: int
    untyped_share: float
    frame: pd.DataFrame = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        """A copy of the findings (``kind``, ``entity``, ``value``, ``detail``)."""
        return self.frame.copy()

    def _rows(self, kind: str) -> pd.DataFrame:
        return self.frame[self.frame["kind"] == kind]

    @property
    def hubs(self) -> list[str]:
        """Names of the entities flagged as hubs (share of chunks above :data:`HUB_SHARE`)."""
        rows = self._rows("hub")
        return rows.loc[rows["detail"].str.endswith(", hub"), "entity"].tolist()

    def __repr__(self) -> str:
        top = self._rows("hub").head(3)
        hubs = ", ".join(f"{n} {v:.0%}" for n, v in zip(top["entity"], top["value"]))
        return (f"GraphReport(entities={self.n_entities}, chunks={self.n_chunks}, mentions={self.n_mentions}, "
                f"untyped={self.untyped_share:.0%}, top={hubs or '-'}, hubs={len(self.hubs)}, "
                f"suspicious_aliases={len(self._rows('suspicious alias'))}, isolated={len(self._rows('isolated'))})")

    def _repr_html_(self) -> str:
        return graph_report_html(self)


def graph_report(state: Any, *, top: int = 10) -> GraphReport:
    """The quality report of ``state``'s entity graph (see the module docs); ``top`` hubs are listed.

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Ada Lovelace met Charles Babbage in London. Use `dict.get()` there.")
    >>> _ = kb.extract_entities()
    >>> report = graph_report(kb.state, top=2)
    >>> report.n_entities, report.to_frame()[["kind", "entity"]].head(2).values.tolist()
    (4, [['hub', 'Ada Lovelace'], ['hub', 'Charles Babbage']])
    """
    entities, edges = state.entities, state.edges
    n_chunks = len(state.chunks)
    mentions = edges[edges["type"] == "mentions"]
    related = edges[edges["type"] == "related"]
    chunks_of = Counter(mentions["to_ref"])
    names = dict(zip(entities["ref"], entities["canonical_name"]))
    types = entities["type"].fillna("other").replace("", "other")
    rows: list[tuple[str, str, float, str]] = []
    ranked = sorted(chunks_of.items(), key=lambda kv: (-kv[1], names.get(kv[0], kv[0])))
    for ref, n in ranked[:top]:
        share = n / n_chunks if n_chunks else 0.0
        flag = ", hub" if share > HUB_SHARE and n_chunks >= HUB_MIN_CHUNKS else ""
        rows.append(("hub", names.get(ref, ref), share, f"{n / len(mentions):.1%} of mentions{flag}"))
    rows += [("type", kind, float(n), "") for kind, n in sorted(Counter(types).items(), key=lambda kv: (-kv[1], kv[0]))]
    for name, aliases in zip(entities["canonical_name"], entities["aliases"]):
        odd = sorted(a for a in (aliases or ()) if suspicious_alias(str(name), str(a)))
        if odd:
            rows.append(("suspicious alias", str(name), float(len(odd)), ", ".join(odd)))
    linked = set(related["from_ref"]) | set(related["to_ref"])
    for ref in sorted((r for r in chunks_of if r not in linked), key=lambda r: names.get(r, r)):
        rows.append(("isolated", names.get(ref, ref), float(chunks_of[ref]), "chunks naming it"))
    frame = pd.DataFrame(rows, columns=["kind", "entity", "value", "detail"])
    frame = frame.astype({"kind": "str", "entity": "str", "value": "float64", "detail": "str"})
    untyped = float((types == "other").mean()) if len(types) else 0.0
    return GraphReport(n_entities=len(entities), n_chunks=n_chunks, n_mentions=len(mentions),
                       untyped_share=untyped, frame=frame)
