"""How text becomes BM25 terms: a knowledge base's language, stop words, stemmer and token rules.

:class:`LexicalSettings` is part of a knowledge base's configuration (saved in its manifest beside
``chunk_size``); :func:`analyzer` turns one into the function that splits chunks and queries alike.

Token rules (``tokenizer``):

* ``"bm25s"``: bm25s' default, ``\\b\\w\\w+\\b`` on lowercased text (a CJK sentence is one token);
* ``"crux"`` (the default): the same words, plus

  - identifiers kept whole as well as split: ``dict.setdefault``, ``os.path.join``, ``std::vector``, ``--verbose``
    are terms beside ``dict``, ``setdefault``...; ``async_with`` and ``__exit__`` add their parts (``async``,
    ``with``; ``exit``);
  - CJK runs (Han, kana, Hangul) become overlapping character bigrams (a lone character stays a unigram),
    as Lucene's CJK analyzer does, so a query matches inside an unspaced sentence.

Stop words and the stemmer apply to every term of a chunk and a query alike.

>>> from crux_nb.store.lexical import analyzer, lexical_settings
>>> split = analyzer(lexical_settings("knowledge_base()"))
>>> split("What does dict.setdefault() do with __exit__?")  # "with": an English stop word
['what', 'does', 'dict', 'setdefault', 'do', '__exit__', 'dict.setdefault', 'exit']
>>> split("日本語のテキスト")
['日本', '本語', '語の', 'のテ', 'テキ', 'キス', 'スト']
"""

from __future__ import annotations

import importlib.util
import re
import string
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CruxError, ParameterError

__all__ = ["BM25S_SETTINGS", "CODE_DENSITY", "DEFAULT_SETTINGS", "code_like", "identifier_counts", "LANGUAGES", "LexicalSettings", "analyzer", "lexical_settings", "settings_record",
           "settings_from_record"]

#: language code -> (name, bm25s stop-word list or None, Snowball stemmer or None)
LANGUAGES: dict[str, tuple[str, str | None, str | None]] = {
    "en": ("english", "STOPWORDS_EN", "english"), "fr": ("french", "STOPWORDS_FRENCH", "french"),
    "de": ("german", "STOPWORDS_GERMAN", "german"), "es": ("spanish", "STOPWORDS_SPANISH", "spanish"),
    "it": ("italian", "STOPWORDS_ITALIAN", "italian"), "pt": ("portuguese", "STOPWORDS_PORTUGUESE", "portuguese"),
    "nl": ("dutch", "STOPWORDS_DUTCH", "dutch"), "sv": ("swedish", "STOPWORDS_SWEDISH", "swedish"),
    "da": ("danish", "STOPWORDS_DANISH", "danish"), "no": ("norwegian", "STOPWORDS_NORWEGIAN", "norwegian"),
    "ru": ("russian", "STOPWORDS_RUSSIAN", "russian"), "tr": ("turkish", "STOPWORDS_TURKISH", "turkish"),
    "fi": ("finnish", None, "finnish"), "pl": ("polish", None, "polish"), "zh": ("chinese", "STOPWORDS_CHINESE", None),
    "ja": ("japanese", None, None), "ko": ("korean", "STOPWORDS_KOREAN", None),
}
_BY_NAME = {name: code for code, (name, _, _) in LANGUAGES.items()}
TOKENIZERS = ("crux", "bm25s")


@dataclass(frozen=True)
class LexicalSettings:
    """How a knowledge base's text becomes BM25 terms (build one with :func:`lexical_settings`).

    ``stopwords`` is ``"auto"`` (the language's list, or none on code-like text: see :func:`code_like`),
    ``"language"`` (the language's list), ``None`` (none), a language code, or a tuple of lowercased words;
    ``stemmer`` is ``None``, ``"language"`` or a language code.
    """

    language: str = "en"
    stopwords: str | tuple[str, ...] | None = "auto"
    stemmer: str | None = None
    tokenizer: str = "crux"

    def stopword_set(self) -> frozenset[str]:
        """The stop words themselves (empty for ``None`` or a language bm25s has no list for)."""
        if self.stopwords is None:
            return frozenset()
        if isinstance(self.stopwords, tuple):
            return frozenset(self.stopwords)
        code = self.language if self.stopwords in ("language", "auto") else self.stopwords
        listed = LANGUAGES[code][1]
        if listed is None:
            return frozenset()
        return frozenset(getattr(_bm25s_stopwords(), listed))

    def stemmer_name(self) -> str | None:
        """The Snowball algorithm applied, or None."""
        if self.stemmer is None:
            return None
        return LANGUAGES[self.language if self.stemmer == "language" else self.stemmer][2]

    def describe(self) -> str:
        """The settings as a user would pass them (for messages)."""
        return (f"language={self.language!r}, stopwords={self.stopwords!r}, stemmer={self.stemmer!r}, "
                f"tokenizer={self.tokenizer!r}")


#: What every knowledge base used before these settings existed: bm25s' tokenizer with its English stop words
#: (scores equal bm25s' bit for bit); a saved knowledge base without settings in its manifest opens with these.
BM25S_SETTINGS = LexicalSettings(language="en", stopwords="language", stemmer=None, tokenizer="bm25s")
#: What ``knowledge_base()`` uses when given no lexical settings (chosen by ``bench/lexical_settings.py``).
DEFAULT_SETTINGS = LexicalSettings()


def _language(owner: str, name: str, value: Any, *, none: bool = False) -> str | None:
    if value is None and none:
        return None
    if isinstance(value, str):
        code = _BY_NAME.get(value.lower(), value.lower())
        if code in LANGUAGES:
            return code
    choices = ", ".join(f"{c!r}" for c in LANGUAGES)
    raise ParameterError(owner, name, f"a language code ({choices}) or its English name"
                         + (", or None" if none else ""), value)


def lexical_settings(owner: str, *, language: Any = "en", stopwords: Any = "auto", stemmer: Any = None,
                     tokenizer: Any = "crux") -> LexicalSettings:
    """Validated, normalised :class:`LexicalSettings` (``ParameterError`` naming ``owner`` otherwise).

    >>> lexical_settings("knowledge_base()", language="French", stopwords=["Le", "la"]).stopwords
    ('la', 'le')
    >>> try:
    ...     lexical_settings("knowledge_base()", stopwords=3)
    ... except ValueError as error:
    ...     print(str(error).split(" Hint:")[0])  # doctest: +ELLIPSIS
    knowledge_base(): parameter 'stopwords' must be "auto", "language", None, a language code ... or a list of words; got 3.
    """
    code = _language(owner, "language", language)
    if stopwords is None or stopwords in ("language", "auto"):
        words = stopwords
    elif isinstance(stopwords, str):
        try:
            words = _language(owner, "stopwords", stopwords)
        except ParameterError:
            words = 0  # reported below with the full list of what is accepted
    elif isinstance(stopwords, (list, tuple, set, frozenset)) and all(isinstance(w, str) for w in stopwords):
        words = tuple(sorted({w.lower() for w in stopwords}))
    else:
        words = 0
    if words == 0:
        raise ParameterError(owner, "stopwords", '"auto", "language", None, a language code (e.g. "en", "fr") or a '
                             "list of words", stopwords)
    stem = stemmer if stemmer in (None, "language") else _language(owner, "stemmer", stemmer, none=True)
    settings = LexicalSettings(code, words, stem, _tokenizer(owner, tokenizer))
    if stem is not None:
        if settings.stemmer_name() is None:
            raise ParameterError(owner, "stemmer", "None or a language with a Snowball stemmer "
                                 f"({', '.join(c for c, v in LANGUAGES.items() if v[2])})", stemmer)
        _stemmer(settings.stemmer_name())  # fails now, not at the first query, when PyStemmer is missing
    return settings


def _tokenizer(owner: str, value: Any) -> str:
    if value not in TOKENIZERS:
        raise ParameterError(owner, "tokenizer", f"one of {list(TOKENIZERS)}", value)
    return value


def settings_record(settings: LexicalSettings) -> dict:
    """The settings as saved in a manifest (JSON)."""
    words = list(settings.stopwords) if isinstance(settings.stopwords, tuple) else settings.stopwords
    return {"language": settings.language, "stopwords": words, "stemmer": settings.stemmer,
            "tokenizer": settings.tokenizer}


def settings_from_record(record: Any) -> LexicalSettings:
    """The settings a manifest saved; :data:`BM25S_SETTINGS` (the behaviour it was built with) when it has none."""
    if not isinstance(record, dict):
        return BM25S_SETTINGS
    return lexical_settings("crux_nb.open()", **record)


def _stemmer(name: str):
    try:
        import Stemmer
    except ImportError:
        raise CruxError("stemming needs the PyStemmer package.", code="missing_dependency",
                        hint="pip install 'crux_nb[stem]' (or PyStemmer), or pass stemmer=None.") from None
    return Stemmer.Stemmer(name)


_WORD = re.compile(r"(?u)\b\w\w+\b")  # bm25s.tokenize's default token pattern
# identifiers whole: dotted and :: chains starting with a letter or underscore (os.path.join, std::vector), and
# options (--verbose, -m) after a space, an opening bracket, a double quote or a backtick: not a plain-text dash
# after a word or a closing mark ('Much!'--Marley, counting-house--mark me;--in); a trailing dot ends a sentence. Hyphenated words (follow-up, INC-2041) and
# CamelCase parts were measured and left out: they cost the sample corpus 2.7 points of Recall@5 and pyref's
# Recall@10 0.9 (bench/lexical_settings.py)
_COMPOUND = re.compile(r"(?u)(?<![\w.:\-])[^\W\d]\w*(?:(?:\.|::)\w+)+|(?<![^\s(\[{\"`])--?[^\W\d](?:[\w\-]*\w)?")
# a cheap test for where _COMPOUND may match (a joined name or an option's dash): most prose chunks have neither.
# Each branch starts with its literal ('.', '::', '-'; what precedes is checked behind it), so re scans for those
# characters instead of trying the pattern at every position: the same answer at a fifth of the cost
_MAY_COMPOUND = re.compile(r"\.(?<=\w\.)\w|::(?<=\w::)\w|-(?<![\w\-]-)-?[^\W\d]").search
# snake_case and __dunder__ names; not _emphasis_ (Markdown's and Project Gutenberg's italics), whose parts cost
# the Christmas Carol's 37 questions 2.7 points of Recall@10 (bench/lexical_settings.py)
_UNDERSCORED = re.compile(r"(?u)\b(?:\w*[^\W_]_[^\W_]\w*|__\w+)\b").findall
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\uff66-\uff9f"
_CJK = re.compile(f"[{_CJK_CHARS}]+")
_HAS_CJK = re.compile(f"[{_CJK_CHARS}]").search
# ASCII text's non-word characters (what \w leaves out) as spaces: the split's pieces are then the maximal runs of
# word characters, and those of two or more are exactly _WORD's matches
_ASCII_NON_WORD = str.maketrans({chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")})
#: the one-character pieces of lowercased ASCII text (not _WORD tokens)
_ASCII_SINGLES = frozenset(string.ascii_lowercase + string.digits + "_")


def _identifiers(lower: str, tokens: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(``_COMPOUND``'s matches, ``_UNDERSCORED``'s) in ``lower``, in text order. Each match lies inside one
    whitespace-separated token, and each pattern sees white space and the text's edge around a token alike (re's
    ``\\s`` is ``str.split``'s white space), so they run on the few tokens holding their marks rather than over
    the whole text: the same matches at a third of the cost. ``tokens``: ``lower.split()``, when the caller has it.

    >>> _identifiers("call os.path.join(x) or --verbose; not snake_case. __init__")
    (['os.path.join', '--verbose'], ['snake_case', '__init__'])
    """
    compound, underscored = _MAY_COMPOUND(lower), "_" in lower
    if not (compound or underscored):
        return [], []
    tokens = lower.split() if tokens is None else tokens
    return ([m for t in tokens if "." in t or ":" in t or "-" in t for m in _COMPOUND.findall(t)] if compound else [],
            [w for t in tokens if "_" in t for w in _UNDERSCORED(t)] if underscored else [])


def _extra_terms(lower: str) -> list[str]:
    """The identifier terms the plain word split misses (wholes and parts)."""
    out, underscored = _identifiers(lower)
    for word in underscored:
        parts = _WORD.findall(word.replace("_", " "))
        if parts != [word]:
            out += parts
    return out


#: identifier terms per word from which a text is code-like: the technical corpora measured hold 36 and 80 per
#: 1,000 words (CPython's reference, CMake's help), the prose ones 0 to 1.4 (sample, MuSiQue, HotpotQA, 2Wiki);
#: 10 per 1,000 sits between them with a wide margin either side
CODE_DENSITY = 0.01


def identifier_counts(texts: list[str]) -> tuple[int, int]:
    """(identifier terms, words) of ``texts``: the statistic of :func:`code_like` (words split on white space:
    a cheap count, well inside the margin of :data:`CODE_DENSITY`).

    >>> identifier_counts(["Call os.path.join or pass --verbose to __main__.", "Plain prose here."])
    (3, 10)
    """
    identifiers = words = 0
    for text in texts:
        lower = text.lower()
        tokens = lower.split()
        words += len(tokens)
        wholes, underscored = _identifiers(lower, tokens)
        identifiers += len(wholes) + len(underscored)
    return identifiers, words


def code_like(identifiers: int, words: int) -> bool:
    """Does a corpus read as code (at least :data:`CODE_DENSITY` identifier terms per word)? ``stopwords="auto"``
    then keeps every word: in code, stop words are keywords (``with``, ``if``, ``in``, ``not``...)."""
    return words > 0 and identifiers >= CODE_DENSITY * words


def _cjk_terms(lower: str) -> list[str]:
    """A text with CJK characters: its other-script words, and CJK runs as bigrams (a lone character kept)."""
    out = _WORD.findall(_CJK.sub(" ", lower))
    for run in _CJK.findall(lower):
        out += [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]
    return out


def _bm25s_stopwords() -> Any:
    """bm25s' module of stop-word lists (plain Python lists), loaded on its own: ``import bm25s.stopwords`` runs
    the package's ``__init__`` first, which imports numba and scipy (about a second of every ``crux_nb.open``,
    for word lists). The package itself is used when it is loaded already or its file cannot be found."""
    module = sys.modules.get("bm25s.stopwords") or sys.modules.get(_STOPWORDS)
    if module is not None:
        return module
    found = importlib.util.find_spec("bm25s")  # locates the package without running it
    folders = (found.submodule_search_locations or []) if found is not None else []
    origin = Path(folders[0]) / "stopwords.py" if folders else None
    if origin is None or not origin.is_file():
        import bm25s.stopwords

        return bm25s.stopwords
    spec = importlib.util.spec_from_file_location(_STOPWORDS, origin)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return sys.modules.setdefault(_STOPWORDS, module)


_STOPWORDS = "crux_nb._bm25s_stopwords"  # the name bm25s' stop-word module is loaded under (see above)


def analyzer(settings: LexicalSettings) -> Callable[[str], list[str]]:
    """The function giving a text's BM25 terms under ``settings`` (the same for chunks and queries).

    >>> from crux_nb.store.lexical import BM25S_SETTINGS
    >>> analyzer(BM25S_SETTINGS)("The with statement, os.path.join")  # bm25s' split and English stop words
    ['statement', 'os', 'path', 'join']
    >>> analyzer(lexical_settings("f()", stopwords=None))("The with statement, os.path.join")
    ['the', 'with', 'statement', 'os', 'path', 'join', 'os.path.join']
    """
    stop = settings.stopword_set()
    crux = settings.tokenizer == "crux"
    name = settings.stemmer_name()
    stem = _stemmer(name).stemWord if name else None

    drop = _ASCII_SINGLES | stop  # on ASCII text: pieces that are no token, and stop words, dropped in one pass

    def split(text: str) -> list[str]:
        lower = text.lower()
        if lower.isascii():  # most text: _WORD's matches by translate and split (C loops, ~40% less than re)
            words = [w for w in lower.translate(_ASCII_NON_WORD).split() if w not in drop]
        else:
            words = _cjk_terms(lower) if crux and _HAS_CJK(lower) else _WORD.findall(lower)
            words = [w for w in words if w not in stop] if stop else words
        if crux:
            extra = _extra_terms(lower)
            words += [w for w in extra if w not in stop] if stop else extra
        if stem is not None:
            words = [w if _HAS_CJK(w) else stem(w) for w in words]
        return words

    return split
