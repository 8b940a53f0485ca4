"""Cleaning and folding the offline extractor's candidate names (general rules, no name lists).

:func:`clean_occurrences` drops what is not a name, using the capitalisation
statistics of the input:

* **function words and interjections** (``AND``, ``How``, ``There``, ``Eh``): a one-word
  name whose lowercase form is a stop word or sentence starter;
* **shouted words** (``PRODUCED``, ``CHARACTERS``): an all-caps name whose words all occur
  in lowercase elsewhere, unless the same name also occurs in normal case (acronyms such
  as ``API`` or ``PEP`` never occur in lowercase, so they stay);
* **capitalised common words** (``Will``, ``Catch``): a one-word name seen in lowercase at
  least as often as capitalised mid-sentence;
* **capitalised common nouns** (``the Feast``, ``the Future``, ``the Grocers``): a one-word name that
  follows a determiner or possessive (``the``, ``a``, ``his``…) in at least half of its occurrences and
  is also written in lowercase in the input (itself or its singular) -- a noun capitalised for emphasis
  or personification, not a name (a name after ``the`` that is never lowercase, ``the Thames``, stays,
  unless the input is long, from ``SUPPORT_MIN_CHARS``, and the word is never used without one in two or
  more occurrences: ``the Parrot``, ``its mighty Founder``);
* **stutters and fragments** (``Scro-o-o-oge`` → ``Scro``), and **minimum support**: a
  one-word name needs two occurrences, unless it is an acronym, a code, or introduced by
  a definition (``Belle, a comely matron``: a sentence-initial name and an appositive); so
  does a longer name made of common words or whose last word is a common word (``the
  Unseen Eyes``, ``Christmas Time``; ``Camden Town`` twice is a name).

:func:`fold_names` folds variants of one name into the most frequent form, with the
others as aliases: honorifics (``Mr. Scrooge`` → ``Scrooge``; a woman's title only before
a given name, as ``Mrs. Cratchit`` is not ``Cratchit``), a leading common adjective
(``Old Marley``, ``Tiny Tim``), ``<common noun> of <full name>`` (``Ghost of Jacob Marley``),
plurals (``Cratchits``), and a lone first name or surname into the only full name that
starts or ends with it (``Ebenezer`` / ``Scrooge`` → ``Ebenezer Scrooge``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from .text import CONNECTORS, INTERJECTIONS, SENTENCE_STARTERS, STOP_WORDS, TITLES

__all__ = ["DETERMINERS", "FUNCTION_WORDS", "clean_occurrences", "determiner_counts", "fold_names", "is_acronym"]

#: Words that are never a one-word name (lowercase).
FUNCTION_WORDS = STOP_WORDS | SENTENCE_STARTERS | INTERJECTIONS | frozenset(
    "never ever always none nor neither whatever whoever whichever wherever however whereat whereupon "
    "therefore thereupon hence thence indeed yes no ok okay sure true false".split()
)
#: Words that make what follows a common noun phrase (lowercase).
DETERMINERS = frozenset("the a an this that these those his her its my our your their thy each every no some any "
                        "another such".split())
_WORD_BEFORE = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_MALE_TITLES = frozenset("mr master sir dr prof professor capt captain".split())
_FEMALE_TITLES = frozenset("mrs miss ms madam".split())
_STUTTER = re.compile(r"(?:-[^\W\d_]){2,}")  # "Scro-o-o-oge": one-letter pieces
_CODE = re.compile(r"^[A-Z]{2,}-?\d+[A-Za-z0-9-]*$")
MIN_SUPPORT = 2  # occurrences a one-word name needs in a long input ...
SUPPORT_MIN_CHARS = 4_000  # ... of at least this many characters (in a short text one mention is all there is)


def is_acronym(word: str, lower_counts: Counter) -> bool:
    """An all-caps word never written in lowercase (``API``, ``PEP``, ``SLA2``)."""
    return len(word) >= 2 and word.isupper() and lower_counts[word.lower()] == 0


def _shouted(name: str, lower_counts: Counter) -> bool:
    """All caps, and every word is a common word (or too long for an acronym: ``CHARACTERS``)."""
    words = [w for w in name.split(" ") if any(c.isalpha() for c in w)]
    return bool(words) and all(w.isupper() for w in words) and all(
        lower_counts[w.lower()] > 0 or w.lower() in FUNCTION_WORDS or (len(w) >= 6 and w.isalpha()) for w in words)


def _common_words(name: str, lower_counts: Counter) -> bool:
    """Every word also occurs in lowercase (``Every One``): weak evidence of a name."""
    return all(lower_counts[w.lower()] > 0 or w.lower() in FUNCTION_WORDS for w in name.split(" "))


def determiner_counts(texts: list[str], occurrences: list[tuple[int, str, int]], key) -> Counter:
    """Per name key, the occurrences ``(chunk, name, position)`` right after a determiner, or after a determiner
    and one lowercase word (``the Feast``, ``its mighty Founder``)."""
    out: Counter = Counter()
    for ci, name, pos in occurrences:
        before = texts[ci][max(0, pos - 60):pos]
        if "\n\n" in before:
            before = before.rsplit("\n\n", 1)[1]
        words = _WORD_BEFORE.findall(before)[-2:]
        if (words and not before.rstrip().endswith(tuple(",;:.!?\"'“”‘’()-—")) and (
                words[-1].lower() in DETERMINERS or (len(words) == 2 and words[-1].islower()
                                                     and words[0].lower() in DETERMINERS))):
            out[key(name)] += 1
    return out


def _lowercase_attested(word: str, lower_counts: Counter) -> bool:
    low = word.lower()
    return lower_counts[low] > 0 or (len(low) > 3 and low.endswith("s") and lower_counts[low[:-1]] > 0)


def clean_occurrences(occurrences: list[tuple[int, str, int]], *, raw: dict[tuple[int, int], str],
                      lower_counts: Counter, mid_counts: Counter, defined: set[str], key,
                      n_chars: int, determined: Counter | None = None) -> list[tuple[int, str, int]]:
    """Occurrences ``(chunk, name, position)`` that name something (see the module docs).

    ``raw`` maps ``(chunk, position)`` to the candidate's source text (to spot stutters), ``lower_counts``
    counts lowercase words, ``mid_counts`` capitalised mid-sentence occurrences of a word,
    ``defined`` the keys of names introduced by a definition, ``key`` the grouping key and
    ``n_chars`` the input's length (minimum support applies from ``SUPPORT_MIN_CHARS``) and ``determined``
    the :func:`determiner_counts` of ``occurrences`` (capitalised common nouns; none dropped without it).
    """
    determined = determined or Counter()
    totals = Counter(key(n) for _c, n, _p in occurrences if not n.isupper())
    long_input = n_chars >= SUPPORT_MIN_CHARS
    nominal = {k for k, total in totals.items() if " " not in k and k not in defined and (
        (2 * determined[k] >= total and _lowercase_attested(k, lower_counts))  # "the Feast": a common noun
        or (long_input and determined[k] == total >= 2))}  # "the Parrot", "its mighty Founder": never bare
    normal_keys = {key(n) for _c, n, _p in occurrences if not n.isupper()}
    kept = []
    for ci, name, pos in occurrences:
        words = name.split(" ")
        while len(words) > 1 and words[0].lower() in FUNCTION_WORDS:  # "THEN Ebenezer Scrooge"
            words = words[1:]
        name = " ".join(words)
        if len(words) > 1 and len(set(words)) == 1:
            name, words = words[0], words[:1]  # "Scrooge Scrooge"
        if _STUTTER.search(raw.get((ci, pos), "")):
            continue
        low = name.lower()
        if len(words) == 1 and (low in FUNCTION_WORDS or low.rstrip(".") in FUNCTION_WORDS):
            continue
        if _shouted(name, lower_counts) and key(name) not in normal_keys:
            continue
        if (len(words) == 1 and not name.isupper() and key(name) not in defined
                and lower_counts[low] >= max(1, mid_counts[name])):
            continue
        if len(words) == 1 and key(name) in nominal:
            continue
        if (long_input and len(words) == 1 and not name.isupper() and not mid_counts[name] and key(name) not in defined
                and not _CODE.match(name)):
            continue  # only ever capitalised where a sentence starts ("Formally,", "Returns"): not a name
        kept.append((ci, name, pos))
    need = MIN_SUPPORT if long_input else 1
    support = Counter(key(n) for _c, n, _p in kept)
    for _c, n, _p in kept:  # a full name supports its given name and surname ("Marcus", "Chen" of "Marcus Chen")
        core = [w for w in n.split(" ") if not _title(w)]
        if len(core) >= 2:
            support[key(core[0])] += 1
            support[key(core[-1])] += 1
    return [(ci, n, p) for ci, n, p in kept
            if (" " in n and not _common_words(n, lower_counts) and not lower_counts[n.split(" ")[-1].lower()])
            or support[key(n)] >= need or key(n) in defined or _CODE.match(n)
            or is_acronym(n, lower_counts)]


def _words(name: str) -> list[str]:
    return name.split(" ")


def _title(word: str) -> str | None:
    bare = word.rstrip(".").lower()
    return bare if bare in TITLES else None


def fold_names(canon: dict[str, str], counts: dict[str, int], concept_keys: set[str], lower_counts: Counter,
               key) -> tuple[dict[str, str], dict[str, set[str]]]:
    """``(target, aliases)``: each key's group root (its most frequent member) and the root's other forms."""
    parent: dict[str, str] = {}
    names = {k: v for k, v in canon.items() if k not in concept_keys}
    given = {key(_words(n)[0]) for n in names.values() if len(_words(n)) >= 2 and not _title(_words(n)[0])}

    full_names = _FullNames(names, names)  # built once: a lookup per key, not a scan of every name

    def link(k: str, into: str) -> None:
        if into and into in names and into != k:
            parent.setdefault(k, into)

    for k, name in names.items():
        words = _words(name)
        core = [w for w in words if not _title(w)]
        title = _title(words[0])
        if title and core and len(core) < len(words) and title in _MALE_TITLES | _FEMALE_TITLES:
            core_key = key(" ".join(core))
            if title in _MALE_TITLES or len(core) >= 2 or core_key in given:
                # "Mr. Scrooge" -> "Scrooge"; "Miss Belinda" -> "Belinda" (or "Belinda Cratchit"); not "Mrs. Cratchit"
                link(k, core_key if core_key in names else full_names.only(core_key))
        elif len(words) >= 2 and lower_counts[words[0].lower()] > 0 and not _title(words[0]) and not (
                len(words) == 2 and words[1].isupper()):
            # "Old Marley" -> "Marley", "Tiny Tim" -> "Tim"; never into an acronym ("Python API" is not "API")
            link(k, key(" ".join(words[1:])))
        if k not in parent and "of" in words[1:-1]:
            rest = words[words.index("of") + 1:]
            rest = rest[1:] if rest and rest[0] == "the" else rest
            if len(rest) >= 2 and lower_counts[words[0].lower()] > 0:
                link(k, key(" ".join(rest)))  # "Ghost of Jacob Marley" -> "Jacob Marley"
        if k not in parent and words[-1].endswith("s") and len(words[-1]) > 3 and not title:
            link(k, key(" ".join(words[:-1] + [words[-1][:-1]])))  # "Cratchits" -> "Cratchit"
    roots = {k: names[k] for k in names if k not in parent}
    root_full_names = _FullNames(roots, names)
    for k, name in roots.items():
        # an acronym joins a long name only where the text defines it (offline_extract._define_acronyms)
        if " " not in name and name[:1].isalpha() and not any(c.isdigit() for c in name) and not name.isupper():
            match = root_full_names.only(k)
            if match:
                parent[k] = match
    return _groups(canon, counts, parent)


class _FullNames:
    """The full names (two or more words besides titles, no connectors or digits) among ``candidates``, indexed
    by their first and last word, so that finding the one starting or ending with a word is a lookup: folding
    across a whole corpus asks it for every one-word name, and scanning every name each time grew with the
    square of the entity count."""

    def __init__(self, candidates, names: dict[str, str]) -> None:
        self._by_end: dict[str, list[str]] = defaultdict(list)
        for other in candidates:
            words = _words(names[other])
            core = [w.casefold() for w in words if not _title(w)]
            if len(core) < 2 or any(w in CONNECTORS for w in words) or any(c.isdigit() for c in other):
                continue
            for end in {core[0], core[-1]}:
                self._by_end[end].append(other)

    def only(self, k: str) -> str:
        """The only full name starting or ending with the one-word key ``k``; ``""`` when none or several."""
        matches = [other for other in self._by_end.get(k, ()) if other != k]
        return matches[0] if len(matches) == 1 else ""


def _groups(canon: dict[str, str], counts: dict[str, int], parent: dict[str, str]):
    def root(k: str) -> str:
        seen = set()
        while k in parent and k not in seen:
            seen.add(k)
            k = parent[k]
        return k

    members: dict[str, list[str]] = defaultdict(list)
    for k in canon:
        members[root(k)].append(k)
    target: dict[str, str] = {}
    aliases: dict[str, set[str]] = defaultdict(set)
    for group in members.values():
        # the group's name: its most frequent form (not all-caps), untitled, then the longest, then code-point order
        # a lone given name ("Priya", "Peter") never names the group; a surname can ("Scrooge", "Marley")
        firsts = {canon[k].split(" ")[0].casefold() for k in group if " " in canon[k]}
        eligible = [k for k in group if " " in canon[k] or k not in firsts] or group
        best = min(eligible, key=lambda k: (canon[k].isupper(), -counts[k], _title(_words(canon[k])[0]) is not None,
                                         -len(canon[k]), canon[k]))
        for k in group:
            target[k] = best
            if k != best:
                aliases[best].add(canon[k])
    return target, aliases
