"""Rule-based entity and relation extraction for :class:`~crux_nb.models.OfflineModel`.

No model, no randomness. Candidates are:

1. **Capitalised runs** (``Ingest Gateway``, ``Northwind Traders``), with a version
   (``Beacon 3.0``), a title (``Mr. Fezziwig``) or inner connectors (``Ghost of
   Christmas Past``). A possessive ends a run (``Priya's`` → ``Priya``); stop words
   (pronouns, weekdays, months, determiners, interjections…) split runs.
2. **Sentence-initial noise control**: a run starting a sentence, quotation, list item
   or table cell is ambiguous: its first word is dropped when it is a known sentence
   starter or appears in lowercase elsewhere in the input; an ambiguous single word is
   kept only when the name occurs unambiguously elsewhere; headings and all-caps lines
   only confirm names found elsewhere. Ticket-like codes (``INC-2041``) always count.
3. **Recurring noun phrases** (optional): lowercase 2–3 word noun phrases of content words
   recurring in at least ``concept_min_chunks`` chunks (type ``concept``; see
   :mod:`crux_nb.models.offline_concepts`).

Technical text first (:mod:`crux_nb.models.offline_code`): markup noise (HTML comments, front
matter, table rules, base64, URLs, paths, section numbers) is blanked, identifiers in code spans
and code-shaped prose become ``code`` / ``option`` entities, and the name rules read the text with
code blocks and spans blanked. An acronym joins a long name only where the text defines it
(``Application Programming Interface (API)``). Types and mentions: :mod:`crux_nb.models.offline_assemble`.

Names are normalised (trimmed, whitespace collapsed); case variants and possessives
fold into one entity; a lone first name or surname folds into the only full name in
the input that starts or ends with it. ``related`` links every pair of entities named
in the same chunk, with the supporting chunk ids and, when short enough, the first
sentence naming both as a verbatim description.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .text import (
    CALENDAR_WORDS as _CALENDAR_WORDS,
)
from .text import (
    CONNECTORS as _CONNECTORS,
)
from .offline_assemble import assemble
from .offline_code import acronym_definitions, code_entities, mask_noise, metavariables
from .offline_concepts import recurring_concepts as _concepts
from .offline_names import clean_occurrences, determiner_counts, fold_names
from .text import (
    ENTITY_STOP,
    STOP_WORDS,
    normalize_ws,
    sentence_spans,
)
from .text import (
    SENTENCE_STARTERS as _SENTENCE_STARTERS,
)
from .text import (
    TITLES as _TITLES,
)

__all__ = ["extract_entities", "ENTITY_STOP"]

_TOKEN = re.compile(r"[^\W_](?:[^\W_]|['’&-](?=[^\W_]))*(?:['’](?![^\W_]))?(?:\.\d+)*")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)*[a-z]?$", re.I)
_VERSION_TAIL = re.compile(r"^(?:v\d+(?:\.\d+)*|\d+(?:\.\d+)+)[a-z]?$")  # "v2", "3.0" (not "13")
_HYPHEN_TAIL = re.compile(r"-[a-z][\w-]*$")  # "Traders-sized" -> "Traders"
_POSSESSIVE = re.compile(r"(?:['’]s|s['’]|['’])$")
_POSSESSIVE_END = re.compile(r"(?:['’]s|['’])$")  # "Scrooge's" -> "Scrooge", "Grocers'" -> "Grocers"
_CONTRACTION = re.compile(r"['’](?:ll|d|m|ve|re|t)$", re.I)
_QUOTE_GAP = re.compile(r"[\"“”«»:—(\[]|--|\*\*|__|(?:^|\s)['‘]")
_LOWER_WORD = re.compile(r"\b[a-z][a-z’'-]*\b")
_CODE = re.compile(r"^[A-Z]{2,}-?\d+[A-Za-z0-9-]*$")  # ticket-like ids: INC-2041, DEC-017
_APPOSITIVE = re.compile(r",\s+(?:a|an)\s+[a-z]")  # "Belle, a comely matron": a definition
_ACRONYM = re.compile(r"^(?:[A-Z]{2,}\d*|[A-Z][a-z]+[A-Z][A-Za-z]*)$")  # API, SLA2, PostgreSQL


@dataclass(frozen=True, slots=True)
class _Tok:
    text: str
    start: int
    end: int
    initial: bool


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
        initial = not toks or bool(_QUOTE_GAP.search(gap)) or "|" in gap
        toks.append(_Tok(m.group(), m.start(), m.end(), initial))
        prev_end = m.end()
    words = [t.text for t in toks if t.text[:1].isalpha()]
    shouty = len(words) >= 2 and all(w.isupper() for w in words)
    long_words = [w for w in words if len(w) > 3 and w.lower() not in STOP_WORDS]  # "Variables that Provide ..."
    title_case = (
        span.kind == "prose" and "\n" not in span.text and len(words) <= 8 and len(long_words) >= 2
        and all(w[:1].isupper() for w in long_words) and span.text.rstrip("\"'”’)]*_")[-1:] not in ".!?:;,"
    )
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
            # not across a table's column gap or blanked code ("Entry      Convention"): three spaces within a line
            plain = gap.strip() == "" and "\n\n" not in gap and ("\n" in gap or len(gap) < 3)
            after_title = gap.strip() == "." and prev.lower() in _TITLES
            joinable = (plain or after_title) and not _POSSESSIVE.search(prev) or False
        nxt_cap = i + 1 < len(toks) and toks[i + 1].text[:1].isupper()
        if word[:1].isupper() or (cur and joinable and _VERSION_TAIL.match(word)):
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
        if bare in ENTITY_STOP or bare[:-1] in _CALENDAR_WORDS or not bare or _CONTRACTION.search(tok.text):
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
        if toks and (toks[0].text in _CONNECTORS or toks[0].text in ("the", "to")):
            continue  # "VP of Product": the complement of a dropped word is not a name
        if toks and all(t.text.rstrip(".").lower() in _TITLES for t in toks):
            continue
        if toks and not (len(toks) == 1 and _VERSION.match(toks[0].text)):
            cleaned.append((toks, amb))
    return cleaned


def _name(text: str, toks: list[_Tok]) -> str:
    raw = text[toks[0].start:toks[-1].end]
    if _POSSESSIVE.search(toks[-1].text):
        raw = _POSSESSIVE_END.sub("", raw)
    if len(toks) > 1 or toks[0].text[:1].isupper():
        raw = _HYPHEN_TAIL.sub("", raw) or raw
    return normalize_ws(raw)


def _core(name: str) -> list[str]:
    return [w for w in name.split(" ") if w.rstrip(".").lower() not in _TITLES]


def _has_title(name: str) -> bool:
    return any(w.rstrip(".").lower() in _TITLES for w in name.split(" "))


def extract_entities(chunks: Sequence[dict[str, Any]], *, concepts: bool = True, concept_min_chunks: int = 3,
                     max_concepts: int = 10) -> dict[str, Any]:
    """The ``extract`` task output for ``chunks`` (``[{"id", "text"}]``)."""
    originals = [str(ch.get("text") or "") for ch in chunks]
    noise = [mask_noise(t) for t in originals]  # markup that names nothing: comments, tables, URLs, paths
    # identifiers, and the texts with code blanked for the name rules
    code = code_entities(noise, placeholders=metavariables(originals))
    texts = [(str(ch["id"]), masked) for ch, masked in zip(chunks, code[2])]
    code = (code[0], code[1], noise, code[3])
    lower_counts: Counter = Counter()
    for _cid, text in texts:
        lower_counts.update(_LOWER_WORD.findall(text))
    found, lower_words = _Candidates(), set(lower_counts)
    for ci, (_cid, text) in enumerate(texts):
        found.scan(ci, text, lower_words)
    occurrences = _resolve(found.sure, found.starts, found.unsure)
    occurrences = clean_occurrences(occurrences, raw=found.raw, lower_counts=lower_counts,
                                    mid_counts=Counter(n for _c, n, _p in found.sure), defined=found.defined,
                                    key=_key, n_chars=sum(len(t) for _c, t in texts),
                                    determined=determiner_counts([t for _c, t in texts], occurrences, _key))
    # group case variants; canonical = not all-caps, then most frequent, then smallest
    variants: dict[str, Counter] = defaultdict(Counter)
    for _ci, name, _pos in occurrences:
        variants[_key(name)][name] += 1
    concept_keys: set[str] = set()
    if concepts:
        for key, name in _concepts(texts, found.spans_by_chunk, concept_min_chunks, max_concepts, set(variants)):
            concept_keys.add(key)
            variants[key][name] += 1
    canon = {
        key: min(counts, key=lambda n: (n.isupper() and len(counts) > 1, -counts[n], n))
        for key, counts in variants.items()
    }
    target, aliases = fold_names(canon, {k: sum(c.values()) for k, c in variants.items()}, concept_keys,
                                 lower_counts, _key)
    _add_aliases(variants, canon, target, aliases, concept_keys)
    _define_acronyms(originals, canon, target, aliases)
    return assemble(texts, found.spans_by_chunk, canon, target, aliases, concept_keys, code=code,
                    originals=originals)


class _Candidates:
    """Capitalised runs of every sentence, sorted by how sure they are to be names."""

    def __init__(self) -> None:
        self.raw: dict[tuple[int, int], str] = {}  # (chunk, position) -> the source text of a candidate
        self.defined: set[str] = set()  # keys of names introduced by a definition ("Belle, a comely matron")
        self.sure: list[tuple[int, str, int]] = []  # (chunk index, name, position)
        self.unsure: list[tuple[int, str, int, bool]] = []  # (..., heading-like)
        # sentence-initial multi-word names: (chunk index, name, rest, common first word, position)
        self.starts: list[tuple[int, str, str, bool, int]] = []
        self.spans_by_chunk: list = []

    def scan(self, ci: int, text: str, lower_words: set[str]) -> None:
        spans = sentence_spans(text)
        self.spans_by_chunk.append(spans)
        for span in spans:
            toks, headingish = _sentence_tokens(text, span)
            for run in _runs(text, toks):
                for ptoks, amb in _pieces(run):
                    self.piece(ci, text, ptoks, amb, headingish, lower_words)

    def piece(self, ci: int, text: str, ptoks: list, amb: bool, headingish: bool, lower_words: set[str]) -> None:
        name = _name(text, ptoks)
        if len(name) < 2:
            return  # "B", "Y": grammar letters and initials are not entities
        first = _POSSESSIVE.sub("", ptoks[0].text).lower()
        starter = first in _SENTENCE_STARTERS
        common = starter or first in lower_words
        pos = ptoks[0].start
        self.raw[(ci, pos)] = text[pos:ptoks[-1].end]
        if amb and not common and not first.endswith("ly") and _APPOSITIVE.match(text, ptoks[-1].end):
            self.defined.add(_key(name))
            self.sure.append((ci, name, pos))
        elif len(ptoks) == 1 and (_CODE.match(name) or (amb and not headingish and _ACRONYM.match(name))):
            self.sure.append((ci, name, pos))
        elif amb and not headingish and len(ptoks) > 1 and first.rstrip(".") not in _TITLES:
            rest = ptoks[1:]
            rest_name = "" if len(rest) == 1 and _VERSION.match(rest[0].text) else _name(text, rest)
            if common and rest_name and rest_name.replace(" ", "").isupper():
                self.sure.append((ci, rest_name, rest[0].start))  # "Create SHA512": a common word before an acronym
            elif not starter:
                self.starts.append((ci, name, rest_name, common, pos))
            elif rest_name:
                self.sure.append((ci, rest_name, rest[0].start))
        elif amb and not headingish and common:
            return  # a sentence-initial common word
        elif headingish or amb:
            self.unsure.append((ci, name, pos, headingish))
        else:
            self.sure.append((ci, name, pos))


def _resolve(sure: list, starts: list, unsure: list) -> list[tuple[int, str, int]]:
    """Every occurrence: the sure names, then each sentence-initial phrase and unsure word decided by them."""
    known = {_key(n) for _c, n, _p in sure}
    known_words = {w for key in known for w in key.split(" ")}
    first_words: Counter = Counter(key.split(" ")[0] for key in known if " " in key)
    occurrences = list(sure)
    for ci, name, rest, common, pos in starts:
        # keep a name seen whole elsewhere; drop a first word that is a common word ("Query" is not:
        # "Query Engine" is known), or, before a known name, one never seen inside a name ("Whereat Scrooge")
        rest_key = _key(rest) if rest else ""
        rest_known = rest_key in known or (" " not in rest_key and first_words.get(rest_key) == 1)
        if _key(name) in known or not rest:
            chosen = name
        elif rest_known and (common or _key(name.split(" ")[0]) not in known_words):
            chosen = rest
        else:
            chosen = name
        occurrences.append((ci, chosen, pos))
    known.update(_key(n) for _c, n, _p in occurrences)
    first_words = Counter(key.split(" ")[0] for key in known if " " in key)
    for ci, name, pos, headingish in unsure:
        key = _key(name)
        # a lone sentence-initial word: a known name, or the first word of exactly one known name
        if key in known or (not headingish and " " not in key and first_words[key] == 1):
            occurrences.append((ci, name, pos))
        elif headingish:
            occurrences.extend((ci, sub, pos) for sub in _known_parts_of(name, known))
    return occurrences


def _add_aliases(variants: dict[str, Counter], canon: dict[str, str], target: dict[str, str],
                 aliases: dict[str, set], concept_keys: set[str]) -> None:
    """Every other spelling becomes an alias of its (folded) entity; a titled name also gets its core."""
    for key, name in canon.items():
        core = _core(name)  # "Lord Mayor" is also found as "Mayor" when no other entity is
        if target[key] == key and key not in concept_keys and len(core) >= 2 and _has_title(name):
            if _key(" ".join(core)) not in canon:
                aliases[key].add(" ".join(core))
    for key, counts in variants.items():
        dest = target[key]
        for name in counts:
            if name != canon[dest]:
                aliases[dest].add(name)


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


def _define_acronyms(texts: list[str], canon: dict[str, str], target: dict[str, str],
                     aliases: dict[str, set]) -> None:
    """An acronym joins a long name only where the text defines it ("Application Programming Interface (API)")."""
    defined: dict[str, str] = {}
    for text in texts:
        for acronym, long_name in acronym_definitions(text).items():
            defined.setdefault(_key(acronym), _key(long_name))
    for short, long_key in defined.items():
        if short in target and long_key in target and target[short] == short and target[long_key] != short:
            dest = target[long_key]
            for key, into in list(target.items()):
                if into == short:
                    target[key] = dest
            aliases[dest].update({canon[short]} | aliases.pop(short, set()))
