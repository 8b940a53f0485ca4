"""Mentions, ``related`` pairs and entity types of the offline extractors' output.

:func:`assemble` turns resolved names (and the identifiers of
:mod:`crux_nb.models.offline_code`) into the ``extract`` task's output: one mention per
chunk naming an entity, a ``related`` pair for every two entities named in one chunk (with
the first short sentence naming both as a verbatim description), and a ``type``.

Types come from the name's form and its context in the input (general cues, no name lists):

* ``code`` / ``option``: identifiers and flags (from :mod:`~crux_nb.models.offline_code`);
* ``concept``: a recurring lowercase noun compound, or an acronym (``API``, ``HTTP``);
* ``person``: a title (``Mr. Fezziwig``), or a name that speaks or is spoken of as a person
  (followed by a speech verb, or its sentence goes on with *he*/*she*) in most cues seen;
* ``organization``: an organisation suffix (``Northwind Traders Ltd``);
* ``place``: a place head word (``Camden Town``) or mostly after *in*/*at*/*near*/*from*
  with no person cue;
* ``product``: a version (``Beacon 3.0``) or an inner capital (``JavaScript``);
* ``event`` / ``law`` / ``group``: an event or law head word (``Christmas Eve``, ``Poor Law``), the first
  word of an event name (``Christmas``), a people's or language's ending (``Spanish``, ``Christian``);
* ``person`` also: two or three capitalised words none of which the input writes in lowercase
  (``Dick Wilkins``), outside technical inputs (where such a pair is a product or a heading);
* in a technical input a capitalised phrase led by an ``-ing`` word (``Verifying Results``) is a
  heading, not a name, and is dropped;
* ``other``: a capitalised name with none of these cues.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter, defaultdict
from typing import Any

from .offline_code import prose_pattern
from .text import ORG_SUFFIXES, TITLES

__all__ = ["assemble", "name_pattern"]

_HEADING_VERB = re.compile(r"^[A-Z][a-z]+ing [A-Z]")
_LOWER = re.compile(r"\b[a-z][a-z’'-]*\b")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)*[a-z]?$", re.I)
_SPEECH = re.compile(r"^[’'s]*[,]?\s+(?:said|says|asked|asks|replied|cried|exclaimed|answered|returned|observed|"
                     r"whispered|shouted|added|continued|thought|laughed|smiled|nodded|looked|went|came|sat|stood)\b")
_SAID_BEFORE = re.compile(r"\b(?:said|says|asked|cried|replied|exclaimed|returned|added)\s+$")
_PRONOUN_AFTER = re.compile(r"^.{0,160}?\b(?:he|she|him|his|her|himself|herself)\b", re.S)
_PLACE_BEFORE = re.compile(r"\b(?:in|at|near|from|to|into|across|through)\s+(?:the\s+)?$")
_EVENT_HEADS = frozenset("day eve night week festival feast holiday war battle revolution conference".split())
_LAW_HEADS = frozenset("act law bill treaty statute charter constitution".split())
_GROUP_SUFFIX = re.compile(r"(?:ish|ese|ian|ean)$")
_PLACE_HEADS = frozenset("town city street lane road square row court hill bridge river park gate market "
                         "county island sea ocean mountain valley church abbey hall house inn tavern".split())


def name_pattern(name: str) -> re.Pattern[str]:
    """Where a name is mentioned: whole words, case-insensitive for a lowercase name."""
    body = re.escape(name).replace(r"\ ", r"\s+")
    return re.compile(r"(?<![\w])" + body + r"(?![\w])", re.IGNORECASE if name.islower() else 0)


def _cues(texts: list[str], positions: list[tuple[int, int, int]]) -> Counter:
    """Counts of ``person`` and ``place`` cues around a name's occurrences ``(chunk, start, end)``."""
    out: Counter = Counter()
    for ci, start, end in positions:
        text = texts[ci]
        after, before = text[end:end + 90], text[max(0, start - 40):start]
        if _SPEECH.match(after) or _SAID_BEFORE.search(before):
            out["person"] += 1
        elif _PRONOUN_AFTER.match(after) and not re.match(r"^\s*\w+\s+(?:of|and)\b", after):
            out["person_weak"] += 1
        if _PLACE_BEFORE.search(before):
            out["place"] += 1
        out["seen"] += 1
    return out


def _entity_type(name: str, concept: bool, cues: Counter, lower: set[str] = frozenset(),
                 event_words: set[str] = frozenset(), technical: bool = False) -> str:
    words = name.split(" ")
    bare = [w.rstrip(".").lower() for w in words]
    proper = [w for w in words if w not in ("of", "the")]
    if concept:
        return "concept"
    if any(b in TITLES for b in bare) and len(words) >= 2:
        return "person"
    if bare[-1] in ORG_SUFFIXES:
        return "organization"
    if any(_VERSION.match(w) for w in words[1:]):
        return "product"
    if bare[-1] in _PLACE_HEADS and len(words) >= 2:
        return "place"
    if len(words) >= 2 and (bare[-1] in _EVENT_HEADS or (bare[0] in _LAW_HEADS and "of" in bare)):
        return "event" if bare[-1] in _EVENT_HEADS else "law"
    if len(words) >= 2 and bare[-1] in _LAW_HEADS:
        return "law"
    if len(words) == 1 and bare[0] in event_words:
        return "event"  # "Christmas" of "Christmas Eve"
    if len(words) == 1 and _GROUP_SUFFIX.search(bare[0]):
        return "group"  # "Spanish", "Christian": a people, a language or a faith
    if len(words) == 1 and name.isupper() and any(c.isalpha() for c in name):
        return "concept"  # an acronym: a term of the text ("API", "HTTP")
    if any(any(c.isupper() for c in w[1:]) and not w.isupper() for w in words):
        return "product"  # "JavaScript", "PowerShell": an inner capital
    if not technical and 2 <= len(proper) <= 3 and len(proper) == len(words) \
            and not any(w.lower() in lower for w in words) \
            and all(w[:1].isupper() and w[1:].islower() for w in words):
        return "person"  # "Dick Wilkins", "Raymond Hettinger": given name and surname, no common word
    person = cues["person"] + cues["person_weak"] / 2
    if person >= 1 and person >= cues["place"]:
        return "person"
    if cues["place"] >= 1 and 2 * cues["place"] >= cues["seen"]:
        return "place"
    return "other"


def assemble(texts, spans_by_chunk, canon, target, aliases, concept_keys, *, code=None,
             originals=None) -> dict[str, Any]:
    """The ``extract`` output. ``texts``: ``[(id, text)]`` searched for names (markup noise and code blanked);
    ``originals``: the unmasked texts, quoted in descriptions; ``code``: ``(types, positions, noise_texts, technical)`` of
    :func:`~crux_nb.models.offline_code.code_entities` (identifiers are searched in ``noise_texts``) and whether
    the input is technical."""
    originals = originals or [t for _c, t in texts]
    code_types, code_pos, code_texts, technical = code or ({}, [{} for _ in texts], [t for _c, t in texts], False)
    entities = []
    patterns: dict[str, list[re.Pattern[str]]] = {}
    kinds: dict[str, str] = {}
    for key in sorted(set(target.values()), key=lambda k: canon[k]):
        name = canon[key]
        if name in code_types:
            continue  # an identifier found by the name rules too ("TypeError"): it is code
        forms = sorted(aliases.get(key, ()))
        patterns[name] = [name_pattern(f) for f in [name] + forms]
        entities.append({"name": name, "aliases": forms})
        kinds[name] = "concept" if key in concept_keys else ""
    where: list[dict[str, list[int]]] = []  # per chunk: entity name -> indexes of the sentences naming it
    occurrences: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    starts = [[s.start for s in spans] for spans in spans_by_chunk]
    for ci, (_cid, text) in enumerate(texts):
        found: dict[str, list[int]] = {}
        for name, pats in patterns.items():
            hits = [m for p in pats for m in p.finditer(text)]
            if hits:
                found[name] = sorted({_sentence(starts[ci], m.start()) for m in hits})
                if not kinds[name]:
                    occurrences[name].extend((ci, m.start(), m.end()) for m in hits)
        for name in code_types:
            pos = list(code_pos[ci].get(name, ()))
            pat = prose_pattern(name, technical)
            if pat is not None:
                pos += [m.start() for m in pat.finditer(code_texts[ci])]
            if pos:
                found[name] = sorted({_sentence(starts[ci], p) for p in pos})
        where.append(found)
    plain = [t for _c, t in texts]
    lower = {w for t in plain for w in _LOWER.findall(t)}
    names = [e["name"] for e in entities if not kinds[e["name"]]]
    event_words = {n.split(" ")[0].lower() for n in names if " " in n and n.split(" ")[-1].lower() in _EVENT_HEADS}
    for item in entities:
        kind = kinds[item["name"]] or _entity_type(item["name"], False, _cues(plain, occurrences[item["name"]]),
                                                   lower, event_words, technical)
        item["type"] = kind
    if technical:  # a capitalised phrase led by an -ing word is a heading ("Verifying Results"), not a name
        dropped = {e["name"] for e in entities if not kinds[e["name"]] and _HEADING_VERB.match(e["name"])}
        entities = [e for e in entities if e["name"] not in dropped]
        for found in where:
            for name in dropped & set(found):
                del found[name]
    used = {n for found in where for n in found}
    entities += [{"name": n, "aliases": [], "type": code_types[n]} for n in sorted(code_types) if n in used]
    entities.sort(key=lambda e: e["name"])
    mentions = [{"chunk_id": texts[ci][0], "name": n} for ci, found in enumerate(where) for n in sorted(found)]
    return {"entities": entities, "mentions": mentions,
            "related": _related(texts, spans_by_chunk, where, originals)}


def _sentence(starts: list[int], pos: int) -> int:
    return max(0, bisect_right(starts, pos) - 1)


def _related(texts, spans_by_chunk, where, originals) -> list[dict[str, Any]]:
    pairs: dict[tuple[str, str], list[int]] = defaultdict(list)
    for ci, found in enumerate(where):
        present = sorted(found)
        for i, a in enumerate(present):
            for b in present[i + 1:]:
                pairs[(a, b)].append(ci)
    related = []
    quotes: dict[tuple[int, int], str] = {}  # one string per sentence quoted: pairs share it, not a copy each
    for (a, b), cis in sorted(pairs.items()):
        item: dict[str, Any] = {"from": a, "to": b, "chunk_ids": [texts[ci][0] for ci in cis]}
        for ci in cis:
            shared = sorted(set(where[ci][a]) & set(where[ci][b]))
            shared = [si for si in shared if si < len(spans_by_chunk[ci]) and len(spans_by_chunk[ci][si].text) <= 500]
            if shared:
                span = spans_by_chunk[ci][shared[0]]
                item["description"] = quotes.setdefault((ci, shared[0]), originals[ci][span.start:span.end])
                break
        related.append(item)
    return related
