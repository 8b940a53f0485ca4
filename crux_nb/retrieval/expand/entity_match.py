"""Finding entity names and aliases in a query (the ``"query"`` seeds of ``expand_relations``).

Names and the query are normalised the same way (case-folded, words only, so
whitespace and punctuation differences do not matter). Matches are whole words,
longest first, never overlapping; ties go left to right, then by entity id.

>>> from crux_nb.retrieval.expand.entity_match import normalise_words
>>> normalise_words("  Priya's   LAUNCH-plan ")
('priya', 's', 'launch', 'plan')
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...embeddings import cosine_scores, entity_matrix
from ...refs import EntityRef
from ..retriever.lexical import top_order

_WORD = re.compile(r"\w+", re.UNICODE)


def normalise_words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.casefold()))


class EntityNameIndex:
    """Normalised name (as a word tuple) → entity ids, built once per state."""

    def __init__(self, entities: Any):
        self.names: dict[tuple[str, ...], set[str]] = {}
        for eid, name, aliases in zip(entities["entity_id"], entities["canonical_name"], entities["aliases"]):
            for label in (name, *aliases):
                words = normalise_words(label) if isinstance(label, str) else ()
                if words:
                    self.names.setdefault(words, set()).add(eid)
        self.longest = max((len(k) for k in self.names), default=0)

    def find(self, query: str) -> list[str]:
        words = normalise_words(query)
        used = [False] * len(words)
        found: list[str] = []
        for size in range(min(self.longest, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                if any(used[start:start + size]):
                    continue
                ids = self.names.get(words[start:start + size])
                if ids:
                    used[start:start + size] = [True] * size
                    found += [e for e in sorted(ids) if e not in found]
        return found


def match_entities(state: Any, query: str) -> list[EntityRef]:
    """Entity refs whose name or alias occurs in ``query``, longest match first."""
    index = state.cache.get("entity-names")
    if index is None:
        index = state.cache["entity-names"] = EntityNameIndex(state.entities)
    return [EntityRef(e) for e in index.find(query)]


def nearest_entities(state: Any, embedder: Any, unit: np.ndarray, k: int, *,
                     exclude: list[EntityRef] = ()) -> list[EntityRef]:
    """The ``k`` entities (not in ``exclude``) whose canonical names' vectors are nearest ``unit`` (cosine > 0),
    nearest first; ties by entity order."""
    matrix = entity_matrix(state, embedder)
    if not len(matrix) or k <= 0:
        return []
    scores = cosine_scores(matrix, unit)
    ids = state.entities["entity_id"].tolist()
    skip = {ref.entity_id for ref in exclude}
    keep = np.flatnonzero(scores > 0)
    rows = top_order(scores[keep], keep, k + len(skip))
    return [EntityRef(ids[i]) for i in rows.tolist() if ids[i] not in skip][:k]
