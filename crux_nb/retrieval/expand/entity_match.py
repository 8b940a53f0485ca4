"""Finding entity names and aliases in a query (the ``"query"`` seeds of ``expand_relations``).

Names and the query are normalised the same way (case-folded, words only, so
whitespace and punctuation differences do not matter). Matches are whole words,
longest first, never overlapping; ties go left to right, then by entity id.

Identifiers (entities typed ``code`` or ``option``) are matched as code is written: case-sensitive, on the
query's code-shaped tokens (``dict.setdefault``, ``__radd__``, ``snake_case``, ``CamelCase``, ``name()``,
``--flag``) and on anything it marks as code (backticks or quotes); a dotted token no entity is named by
matches its parts (``dict.setdefault`` -> ``dict``, ``setdefault``). An identifier that is a plain word
(``with``, ``is``) is also a word of the prose, so it matches only where the query marks it
(`` `with` ``); a multi-word one (``async with``) matches as words. These matches come first, in query order.

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
#: entity types named by case-sensitive identifiers (crux_nb.models.offline_code.CODE_TYPES)
CODE_TYPES = frozenset({"code", "option"})
_MARKED = re.compile(r"`([^`\n]+)`|\"([^\"\n]{1,80})\"|'([^'\n]{1,80})'")
_TOKEN = re.compile(r"(?<![\w.-])(--?[A-Za-z][\w-]*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\(\))?")
_SHAPED = re.compile(r"^-|[._]|[a-z][A-Z]|^[A-Z][a-z0-9]+[A-Z]")


def _surface(name: str) -> str:
    name = name.strip()
    return name[:-2] if name.endswith("()") else name


def normalise_words(text: str) -> tuple[str, ...]:
    folded = text.casefold()
    # most names are words between spaces: split() gives the regex's words when every other character is a word
    # character (re's \w is str.isalnum() plus '_'), at a fifth of findall's cost (50k names at the first query)
    if folded.replace(" ", "").replace("_", "a").isalnum():
        return tuple(folded.split())
    return tuple(_WORD.findall(folded))


class EntityNameIndex:
    """Normalised name (as a word tuple) → entity ids, built once per state."""

    def __init__(self, entities: Any):
        self.names: dict[tuple[str, ...], set[str]] = {}
        self.code: dict[str, set[str]] = {}  # an identifier's surface, case kept -> entity ids
        types = entities["type"].tolist() if "type" in entities.columns else [None] * len(entities)
        # lists first: iterating Arrow-backed columns costs a Python call per value (~0.1 s on 50k entities)
        ids, names, aliases = (entities[c].tolist() for c in ("entity_id", "canonical_name", "aliases"))
        # most entities are one word-matched name: those in one pass (~0.15 s less at 100k entities)
        simple = [not (a or kind in CODE_TYPES) for a, kind in zip(map(len, aliases), types)]
        keys = [normalise_words(n) if ok and isinstance(n, str) else () for n, ok in zip(names, simple)]
        for words, eid in zip(keys, ids):
            if words:
                found = self.names.get(words)
                if found is None:
                    self.names[words] = {eid}
                else:
                    found.add(eid)
        for eid, name, labels, kind, ok in zip(ids, names, aliases, types, simple):
            if ok:
                continue
            for label in (name, *labels):
                if not isinstance(label, str):
                    continue
                if kind in CODE_TYPES:
                    self.code.setdefault(_surface(label), set()).add(eid)
                    if " " not in label.strip():  # a one-token identifier is matched as code, never as a word
                        continue
                words = normalise_words(label)
                if words:
                    self.names.setdefault(words, set()).add(eid)
        self.longest = max((len(k) for k in self.names), default=0)

    def _code(self, query: str) -> tuple[list[str], str]:
        """Identifiers the query names (in query order) and the query with their tokens blanked."""
        found: list[tuple[int, str]] = []
        spans: list[tuple[int, int]] = []
        for m in _MARKED.finditer(query):  # marked as code: any identifier, plain words too
            text = _surface(next(g for g in m.groups() if g is not None))
            ids = self.code.get(text) or self._parts(text)
            if ids:
                found += [(m.start(), e) for e in sorted(ids)]
                spans.append(m.span())
        for m in _TOKEN.finditer(query):
            if any(a <= m.start() < b for a, b in spans):
                continue
            token = m.group(1)
            if not (m.group(2) or _SHAPED.search(token)):
                continue  # a plain word: prose unless marked
            ids = self.code.get(token) or self._parts(token)
            if ids:
                found += [(m.start(), e) for e in sorted(ids)]
                spans.append(m.span())
        blanked = query
        for a, b in spans:
            blanked = blanked[:a] + " " * (b - a) + blanked[b:]
        ordered = [e for _, e in sorted(found, key=lambda x: x[0])]
        return list(dict.fromkeys(ordered)), blanked

    def _parts(self, token: str) -> set[str]:
        parts = token.split(".") if "." in token else []
        return {e for part in parts for e in self.code.get(part, ())}

    def find(self, query: str) -> list[str]:
        found, query = self._code(query) if self.code else ([], query)
        words = normalise_words(query)
        used = [False] * len(words)
        for size in range(min(self.longest, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                if any(used[start:start + size]):
                    continue
                ids = self.names.get(words[start:start + size])
                if ids:
                    used[start:start + size] = [True] * size
                    found += [e for e in sorted(ids) if e not in found]
        return found


def entity_name_index(state: Any) -> EntityNameIndex:
    """The :class:`EntityNameIndex` of ``state``, built once (``crux_nb.open`` builds it in the background on large
    knowledge bases: ~0.3 s at 100k entities)."""
    return state.cached("entity-names", lambda: EntityNameIndex(state.entities), depends=(state.entities,))


def match_entities(state: Any, query: str) -> list[EntityRef]:
    """Entity refs whose name or alias occurs in ``query``, longest match first."""
    return [EntityRef(e) for e in entity_name_index(state).find(query)]


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
