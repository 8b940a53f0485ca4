"""Rule-based entity and relation extraction for :class:`~crux_nb.models.OfflineModel`.

No model, no randomness. Candidates are:

1. **Capitalised runs**: consecutive capitalised words (``Ingest Gateway``,
   ``Northwind Traders``), with a version number (``Beacon 3.0``), a title
   (``Mr. Fezziwig``) or an inner connector (``Ghost of Christmas Past``). A
   possessive ends a run (``Priya's`` → ``Priya``). Stop words (pronouns,
   weekdays, months, determiners, interjections…) split runs.
2. **Sentence-initial noise control**: a run that starts a sentence, a quotation,
   a list item or a heading is ambiguous. Its first word is dropped when it is a
   known sentence starter or appears in lowercase elsewhere in the input; an
   ambiguous single word is kept only when the same name occurs unambiguously
   elsewhere; headings and all-caps lines only confirm names found elsewhere.
3. **Recurring noun phrases** (optional): lowercase two- or three-word phrases of
   content words that recur in at least ``concept_min_chunks`` chunks (type
   ``concept``).

Names are normalised (trimmed, whitespace collapsed); case variants and
possessives fold into one entity; a lone first name or surname folds into the
only full name in the input that starts or ends with it. ``related`` links every
pair of entities mentioned in the same chunk, with the supporting chunk ids and,
when short enough, the first sentence naming both as a verbatim description.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

from .text import STOP_WORDS, normalize_ws, sentence_spans

__all__ = ["extract_entities", "ENTITY_STOP"]

_PRONOUNS = "i me my mine we us our ours you your yours he him his she her hers it its they them their theirs"
_CALENDAR = (
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december today tomorrow yesterday tonight"
)
_STARTERS = (
    "the a an this that these those there here then thus so and but or nor yet if when while where whenever "
    "after before since until unless although though because however therefore meanwhile also each every all "
    "some any many most much more no not none both either neither one two three first second third next last "
    "new old our once now later soon finally again still even just only perhaps maybe yes oh ah ha alas bah "
    "well why what who whom whose which how hello hi dear please thank thanks note see let after during per "
    "as at by for from in into of on onto out over to up upon with within without about above below between "
    "is are was were be been has have had do does did will would can could should shall must might may "
    "it's i'm i'll i've don't can't won't isn't there's let's what's that's mind nothing something everything "
    "anything everyone someone nobody good great very such other another own same"
)
#: Words never part of an entity name (lowercased).
ENTITY_STOP = frozenset(_PRONOUNS.split()) | frozenset(_CALENDAR.split()) | frozenset(
    "the a an this that these those oh ah ha alas bah hello hi yes no amen".split()
)
_SENTENCE_STARTERS = frozenset(_STARTERS.split()) | ENTITY_STOP
_CONNECTORS = frozenset("of de van von der den la le du da del di".split())
_TITLES = frozenset("mr mrs ms miss master dr sir lady lord madam prof professor capt captain st saint".split())
_ORG_SUFFIX = frozenset(
    "inc ltd llc corp corporation company co traders group bank labs partners holdings gmbh university "
    "institute agency foundation systems".split()
)
_TOKEN = re.compile(r"[^\W_](?:[^\W_]|['’&-](?=[^\W_]))*(?:['’](?![^\W_]))?(?:\.\d+)*")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)*[a-z]?$", re.I)
_POSSESSIVE = re.compile(r"(?:['’]s|s['’]|['’])$")
_CONTRACTION = re.compile(r"['’](?:ll|d|m|ve|re|t)$", re.I)
_QUOTE_GAP = re.compile(r"[\"“”«»:—(\[]|--|(?:^|\s)['‘]")
_LOWER_WORD = re.compile(r"\b[a-z][a-z’'-]*\b")
_CONCEPT_WORD = re.compile(r"^[a-z][a-z-]{2,}$")


@dataclass(frozen=True, slots=True)
class _Tok:
    text: str
    start: int
    end: int
    initial: bool


def _is_cap(word: str) -> bool:
    return word[:1].isupper()


def _key(name: str) -> str:
    """Case- and title-period-insensitive grouping key of a normalised name."""
    words = name.split(" ")
    return " ".join(w.rstrip(".").casefold() if w.rstrip(".").lower() in _TITLES else w.casefold() for w in words)


def _sentence_tokens(text: str, span) -> tuple[list[_Tok], bool]:
    """Tokens of one sentence with their ambiguity flag; second value: heading-like line."""
    toks: list[_Tok] = []
    prev_end = span.start
    for m in _TOKEN.finditer(text, span.start, span.end):
        gap = text[prev_end:m.start()]
        initial = not toks or bool(_QUOTE_GAP.search(gap))
        toks.append(_Tok(m.group(), m.start(), m.end(), initial))
        prev_end = m.end()
    words = [t.text for t in toks if t.text[:1].isalpha()]
    shouty = len(words) >= 2 and all(w.isupper() for w in words)
    long_words = [w for w in words if len(w) > 3]
    title_case = len(long_words) >= 2 and all(_is_cap(w) for w in long_words) and not span.text.endswith(".")
    return toks, span.kind == "heading" or shouty or title_case


def _runs(text: str, toks: list[_Tok]) -> list[list[_Tok]]:
    """Maximal runs of capitalised tokens joined by plain whitespace (or a title's period)."""
    runs: list[list[_Tok]] = []
    cur: list[_Tok] = []
    for i, tok in enumerate(toks):
        word = tok.text
        joinable = False
        if cur:
            gap = text[cur[-1].end:tok.start]
            prev = cur[-1].text
            plain = gap.strip() == "" and "\n\n" not in gap
            after_title = gap.strip() == "." and prev.lower() in _TITLES
            joinable = (plain or after_title) and not _POSSESSIVE.search(prev) or False
        nxt_cap = i + 1 < len(toks) and _is_cap(toks[i + 1].text)
        if _is_cap(word) or (cur and joinable and _VERSION.match(word)):
            if not joinable:
                if cur:
                    runs.append(cur)
                cur = []
            cur.append(tok)
        elif cur and joinable and word in _CONNECTORS and nxt_cap:
            cur.append(tok)
        elif cur and joinable and word == "the" and cur[-1].text == "of" and nxt_cap:
            cur.append(tok)
        elif cur and joinable and word == "to" and nxt_cap and any(t.text in _CONNECTORS for t in cur):
            cur.append(tok)  # "Ghost of Christmas Yet to Come"
        else:
            if cur:
                runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    return runs


def _pieces(run: list[_Tok]) -> list[tuple[list[_Tok], bool]]:
    """Split a run at stop words; returns ``(tokens, ambiguous)`` pieces."""
    pieces: list[tuple[list[_Tok], bool]] = []
    cur: list[_Tok] = []
    ambiguous = False
    for tok in run:
        bare = _POSSESSIVE.sub("", tok.text).lower()
        if bare in ENTITY_STOP or not bare or _CONTRACTION.search(tok.text):
            if cur:
                pieces.append((cur, ambiguous))
            cur, ambiguous = [], False
            continue
        if not cur:
            ambiguous = tok.initial
        cur.append(tok)
    if cur:
        pieces.append((cur, ambiguous))
    cleaned = []
    for toks, amb in pieces:
        while toks and (toks[-1].text in _CONNECTORS or toks[-1].text in ("the", "to")):
            toks = toks[:-1]
        while toks and (toks[0].text in _CONNECTORS or toks[0].text in ("the", "to")):
            toks, amb = toks[1:], False
        if toks and all(t.text.rstrip(".").lower() in _TITLES for t in toks):
            continue
        if toks and not (len(toks) == 1 and _VERSION.match(toks[0].text)):
            cleaned.append((toks, amb))
    return cleaned


def _name(text: str, toks: list[_Tok]) -> str:
    raw = text[toks[0].start:toks[-1].end]
    return normalize_ws(_POSSESSIVE.sub("", raw)) if _POSSESSIVE.search(toks[-1].text) else normalize_ws(raw)


def _core(name: str) -> list[str]:
    return [w for w in name.split(" ") if w.rstrip(".").lower() not in _TITLES]


def _has_title(name: str) -> bool:
    return any(w.rstrip(".").lower() in _TITLES for w in name.split(" "))


def _entity_type(name: str, concept: bool) -> str | None:
    words = name.split(" ")
    if concept:
        return "concept"
    if _has_title(name) and len(words) >= 2:
        return "person"
    if words[-1].rstrip(".").lower() in _ORG_SUFFIX:
        return "organization"
    if any(_VERSION.match(w) for w in words[1:]):
        return "product"
    return None


def extract_entities(chunks: Sequence[dict[str, Any]], *, concepts: bool = True, concept_min_chunks: int = 3,
                     max_concepts: int = 10) -> dict[str, Any]:
    """The ``extract`` task output for ``chunks`` (``[{"id", "text"}]``)."""
    texts = [(str(ch["id"]), str(ch.get("text") or "")) for ch in chunks]
    lower_words = set()
    for _cid, text in texts:
        lower_words.update(_LOWER_WORD.findall(text))
    sure: list[tuple[int, str, int]] = []  # (chunk index, name, position)
    unsure: list[tuple[int, str, int, bool]] = []  # (..., heading-like)
    starts: list[tuple[int, str, str, int]] = []  # sentence-initial multi-word: (ci, name, rest, pos)
    spans_by_chunk = []
    for ci, (_cid, text) in enumerate(texts):
        spans = sentence_spans(text)
        spans_by_chunk.append(spans)
        for span in spans:
            toks, headingish = _sentence_tokens(text, span)
            for run in _runs(text, toks):
                for ptoks, amb in _pieces(run):
                    first = _POSSESSIVE.sub("", ptoks[0].text)
                    if amb and not headingish and (first.lower() in _SENTENCE_STARTERS or first.lower() in lower_words):
                        ptoks, amb = ptoks[1:], False
                        if not ptoks or (len(ptoks) == 1 and _VERSION.match(ptoks[0].text)):
                            continue
                    name = _name(text, ptoks)
                    if headingish or (amb and len(ptoks) == 1):
                        unsure.append((ci, name, ptoks[0].start, headingish))
                    elif amb and ptoks[1].text[:1].isalpha() and ptoks[0].text.rstrip(".").lower() not in _TITLES:
                        starts.append((ci, name, _name(text, ptoks[1:]), ptoks[0].start))
                    else:
                        sure.append((ci, name, ptoks[0].start))
    known = {_key(n) for _c, n, _p in sure}
    known_words = {w for key in known for w in key.split(" ")}
    occurrences = list(sure)
    for ci, name, rest, pos in starts:
        # "Whereat Scrooge" / "Poor Robin Crusoe": drop a first word never seen inside a name
        drop = _key(rest) in known and _key(name.split(" ")[0]) not in known_words
        occurrences.append((ci, rest if drop else name, pos))
    known.update(_key(n) for _c, n, _p in occurrences)
    known_parts: Counter = Counter()
    for key in known:
        parts = key.split(" ")
        known_parts.update({parts[0], parts[-1]})
    for ci, name, pos, headingish in unsure:
        key = _key(name)
        if key in known or (not headingish and " " not in key and known_parts[key]):
            occurrences.append((ci, name, pos))
        elif headingish:
            occurrences.extend((ci, sub, pos) for sub in _known_parts_of(name, known))
    # group case variants; canonical = not all-caps, then most frequent, then smallest
    variants: dict[str, Counter] = defaultdict(Counter)
    for _ci, name, _pos in occurrences:
        variants[_key(name)][name] += 1
    concept_keys: set[str] = set()
    if concepts:
        for key, name in _concepts(texts, spans_by_chunk, concept_min_chunks, max_concepts, set(variants)):
            concept_keys.add(key)
            variants[key][name] += 1
    canon = {
        key: min(counts, key=lambda n: (n.isupper() and len(counts) > 1, -counts[n], n))
        for key, counts in variants.items()
    }
    # fold a lone first name / surname into the only full name that starts or ends with it
    target: dict[str, str] = {k: k for k in canon}
    for key, name in canon.items():
        if key in concept_keys or " " in name or _VERSION.search(name) or not name[:1].isalpha():
            continue
        matches = []
        for other, other_name in canon.items():
            if other == key or other in concept_keys or any(w in _CONNECTORS for w in other_name.split(" ")):
                continue
            core = [w.casefold() for w in _core(other_name)]
            if any(_VERSION.match(w) for w in core) or len(core) < 2:
                continue
            if core and (core[0] == key or core[-1] == key):
                matches.append(other)
        if len(matches) == 1:
            target[key] = matches[0]
    aliases: dict[str, set[str]] = defaultdict(set)
    for key, name in canon.items():
        # "Master Peter Cratchit" is "Peter Cratchit": fold into it, or keep it as an alias
        core = _core(name)
        if key in concept_keys or len(core) < 2 or not _has_title(name) or target[key] != key:
            continue
        core_key = _key(" ".join(core))
        if core_key in canon and target[core_key] == core_key:
            target[key] = core_key
        else:
            aliases[key].add(" ".join(core))
    for key, counts in variants.items():
        dest = target[key]
        for name in counts:
            if name != canon[dest]:
                aliases[dest].add(name)
    return _assemble(texts, spans_by_chunk, canon, target, aliases, concept_keys)


def _known_parts_of(name: str, known: set[str]) -> list[str]:
    """Known names inside a heading-like phrase, longest match first, left to right."""
    words, found, i = name.split(" "), [], 0
    while i < len(words):
        for size in range(len(words) - i, 0, -1):
            sub = " ".join(words[i:i + size])
            if _key(sub) in known:
                found.append(sub)
                i += size
                break
        else:
            i += 1
    return found


def _concepts(texts, spans_by_chunk, min_chunks: int, limit: int, taken: set[str]) -> list[tuple[str, str]]:
    seen: dict[str, set[int]] = defaultdict(set)
    for ci, (_cid, text) in enumerate(texts):
        for span in spans_by_chunk[ci]:
            words = re.findall(r"[^\W\d_][\w'’-]*|[^\w\s]", span.text)
            for size in (3, 2):
                for i in range(len(words) - size + 1):
                    gram = words[i:i + size]
                    if all(_CONCEPT_WORD.match(w) and w not in STOP_WORDS and w not in _SENTENCE_STARTERS
                           and not w.endswith("ly") for w in gram):
                        seen[" ".join(gram)].add(ci)
    ranked = sorted(((len(c), p) for p, c in seen.items() if len(c) >= min_chunks), key=lambda x: (-x[0], x[1]))
    chosen: list[tuple[str, str]] = []
    for count, phrase in ranked:
        if phrase in taken or any(phrase in c and count <= len(seen[c]) for _k, c in chosen):
            continue
        chosen.append((phrase, phrase))
        if len(chosen) >= limit:
            break
    return chosen


def _pattern(name: str) -> re.Pattern[str]:
    body = re.escape(name).replace(r"\ ", r"\s+")
    return re.compile(r"(?<![\w])" + body + r"(?![\w])", re.IGNORECASE if name.islower() else 0)


def _assemble(texts, spans_by_chunk, canon, target, aliases, concept_keys) -> dict[str, Any]:
    entities = []
    patterns: dict[str, list[re.Pattern[str]]] = {}
    for key in sorted(set(target.values()), key=lambda k: canon[k]):
        name = canon[key]
        forms = sorted(aliases.get(key, ()))
        patterns[name] = [_pattern(f) for f in [name] + forms]
        item: dict[str, Any] = {"name": name, "aliases": forms}
        etype = _entity_type(name, key in concept_keys)
        if etype:
            item["type"] = etype
        entities.append(item)
    mentions = []
    # per chunk: entity name -> indexes of the sentences naming it
    where: list[dict[str, list[int]]] = []
    for ci, (cid, text) in enumerate(texts):
        found: dict[str, list[int]] = {}
        for name, pats in patterns.items():
            if any(p.search(text) for p in pats):
                found[name] = [
                    si for si, span in enumerate(spans_by_chunk[ci]) if any(p.search(span.text) for p in pats)
                ]
        where.append(found)
        mentions.extend({"chunk_id": cid, "name": n} for n in sorted(found))
    pairs: dict[tuple[str, str], list[int]] = defaultdict(list)
    for ci, found in enumerate(where):
        present = sorted(found)
        for i, a in enumerate(present):
            for b in present[i + 1:]:
                pairs[(a, b)].append(ci)
    related = []
    for (a, b), cis in sorted(pairs.items()):
        item: dict[str, Any] = {"from": a, "to": b, "chunk_ids": [texts[ci][0] for ci in cis]}
        for ci in cis:
            shared = sorted(set(where[ci][a]) & set(where[ci][b]))
            shared = [si for si in shared if len(spans_by_chunk[ci][si].text) <= 500]
            if shared:
                item["description"] = spans_by_chunk[ci][shared[0]].text
                break
        related.append(item)
    return {"entities": entities, "mentions": mentions, "related": related}
