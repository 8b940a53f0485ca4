"""Small, dependency-light text tools shared by the offline model.

* :func:`sentence_spans` splits text into sentences and returns character spans,
  so a sentence is always an exact substring of its text (reports quote verbatim).
* :func:`terms` tokenises for relevance: lowercase words, a small stop list and a
  light suffix stemmer (``changes``/``changed``/``changing`` → ``chang``).
* :class:`BM25` is a tiny Okapi BM25 (k1=1.2, b=0.75, Lucene's non-negative idf)
  with :meth:`BM25.scaled`, the 0..100 scale documented there.
* :func:`pagerank` is a personalised power iteration over a similarity matrix
  (numpy), used for TextRank-style sentence centrality.

Everything here is deterministic: no randomness, no hash-order iteration.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Span",
    "sentence_spans",
    "terms",
    "term_forms",
    "stem",
    "BM25",
    "pagerank",
    "cosine_matrix",
    "normalize_ws",
    "STOP_WORDS",
    "ENTITY_STOP",
    "INTERJECTIONS",
    "SENTENCE_STARTERS",
    "CALENDAR_WORDS",
    "CONNECTORS",
    "TITLES",
    "ORG_SUFFIXES",
    "CONCEPT_STOP",
]

#: Function words ignored for relevance and similarity.
STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves s t don shall may might must upon unto thee thou thy ye
    o oh let us yet""".split()
)

# ---- word lists of the offline extractor (lowercase) ---------------------------------
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
#: Interjections and exclamations (lowercase): never part of a name ("O Jacob Marley" is "Jacob Marley").
INTERJECTIONS = frozenset(
    "o oh ah aha eh ha hah haha alas bah hey ho hum hem hurrah hurray huzzah lo pooh pshaw tut ugh um uh whoa "
    "wow yay yo hallo halloa hello hullo hi ahem amen bravo heigh hark humbug".split()
)
#: Words never part of an entity name (lowercased).
ENTITY_STOP = frozenset(_PRONOUNS.split()) | frozenset(_CALENDAR.split()) | INTERJECTIONS | frozenset(
    "the a an this that these those yes no ceo cto cfo coo cio ciso vp svp evp".split()
)
CALENDAR_WORDS = frozenset(_CALENDAR.split())
SENTENCE_STARTERS = frozenset(_STARTERS.split()) | ENTITY_STOP
CONNECTORS = frozenset("of de van von der den la le du da del di".split())
TITLES = frozenset("mr mrs ms miss master dr sir lady lord madam prof professor capt captain st saint".split())
ORG_SUFFIXES = frozenset(
    "inc ltd llc corp corporation company co traders group bank labs partners holdings gmbh university "
    "institute agency foundation systems".split()
)
CONCEPT_STOP = frozenset(
    """across along among around behind beside beyond despite except inside near outside since toward towards
    via onto unless whether four five six seven eight nine ten eleven twelve hundred thousand million small
    large big little long short high low few several many much same different other whole full half next
    last previous early late good bad best better worse able new old said says say ships ship make made
    makes get got gets take took takes use used uses using need needs needed keep kept""".split()
)

# Words whose trailing period does not end a sentence.
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr st jr sr prof rev gen col capt lt sgt mt ft vs etc eg ie inc ltd co corp no nos
    fig figs vol approx dept est jan feb mar apr jun jul aug sep sept oct nov dec""".split()
)
_END = re.compile(r"[.!?]+[\"'”’)\]*_]*(?=\s|$)")
_MD_STRUCTURE = re.compile(r"^\s{0,3}(#{1,6}\s|[-*+]\s|\d{1,3}[.)]\s|>|\|)")
_MD_MARKER = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+(?:\[[ xX]\]\s+)?|\d{1,3}[.)]\s+|>\s*)")
_BLOCK_SPLIT = re.compile(r"\n[ \t]*\n")
_WORD = re.compile(r"[^\W_][\w'’-]*")
# a dotted number (a version, a section) is one term: "3.12" is not "3" and "12", which every text has
_WORD_NUMBERS = re.compile(r"\d+(?:\.\d+)+|[^\W_][\w'’-]*")
_WS = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Span:
    """One sentence: ``text == source[start:end]``; ``kind`` is ``"prose"``, ``"item"`` or ``"heading"``."""

    start: int
    end: int
    text: str
    kind: str = "prose"


def normalize_ws(text: str) -> str:
    """Trim and collapse runs of whitespace to one space."""
    return _WS.sub(" ", text).strip()


def _segments(text: str) -> Iterable[tuple[int, int, str]]:
    """Blocks separated by blank lines; Markdown-structured blocks split into lines."""
    pos = 0
    bounds = []
    for m in _BLOCK_SPLIT.finditer(text):
        bounds.append((pos, m.start()))
        pos = m.end()
    bounds.append((pos, len(text)))
    for start, end in bounds:
        block = text[start:end]
        lines = block.split("\n")
        if len(lines) > 1 and any(_MD_STRUCTURE.match(line) for line in lines):
            offset = start
            for line in lines:
                yield offset, offset + len(line), _line_kind(line)
                offset += len(line) + 1
        else:
            yield start, end, _line_kind(block)


def _line_kind(line: str) -> str:
    stripped = line.lstrip()
    if stripped.startswith("#"):
        return "heading"
    if _MD_STRUCTURE.match(line):
        return "item"
    return "prose"


def _is_abbreviation(segment: str, dot: int) -> bool:
    """True when the period at ``segment[dot]`` follows an abbreviation or an initial."""
    j = dot
    while j > 0 and (segment[j - 1].isalpha() or segment[j - 1] == "."):
        j -= 1
    word = segment[j:dot].replace(".", "").lower()
    if not word:
        return False
    if word in _ABBREVIATIONS:
        return True
    return len(word) == 1 and segment[dot - 1].isupper()


def sentence_spans(text: str) -> list[Span]:
    """Sentences of ``text`` as spans (exact substrings, stripped of Markdown markers)."""
    spans: list[Span] = []
    for seg_start, seg_end, kind in _segments(text):
        segment = text[seg_start:seg_end]
        marker = _MD_MARKER.match(segment) if kind != "prose" else None
        cursor = marker.end() if marker else 0
        pieces = []
        for m in _END.finditer(segment, cursor):
            dot = m.start()
            if segment[dot] == "." and m.group().startswith(".") and len(m.group().rstrip("\"'”’)]*_")) == 1:
                if _is_abbreviation(segment, dot):
                    continue
            rest = segment[m.end():].lstrip()
            if rest and rest[0].islower():
                continue
            pieces.append((cursor, m.end()))
            cursor = m.end()
        pieces.append((cursor, len(segment)))
        for a, b in pieces:
            raw = segment[a:b]
            lead = len(raw) - len(raw.lstrip())
            trail = len(raw.rstrip())
            if trail <= lead:
                continue
            start, end = seg_start + a + lead, seg_start + a + trail
            spans.append(Span(start, end, text[start:end], kind))
    return spans


def stem(word: str) -> str:
    """A light English suffix stripper (plural, -ed, -ing, final -e, doubled consonant)."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.strip("'")
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz" and w[-1].isalpha():
        w = w[:-1]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def terms(text: str, *, whole_numbers: bool = False) -> list[str]:
    """Lowercase, stop-word-free, stemmed word terms of ``text`` (in order, with repeats).

    ``whole_numbers`` keeps a dotted number whole (the map scorer's terms: a question about version
    ``3.12`` asks for ``3.12``, not for any ``3`` and any ``12``).

    >>> terms("Changed in Python 3.12"), terms("Changed in Python 3.12", whole_numbers=True)
    (['chang', 'python', '3', '12'], ['chang', 'python', '3.12'])
    """
    out = []
    for m in (_WORD_NUMBERS if whole_numbers else _WORD).finditer(text):
        word = m.group().lower().replace("’", "'").strip("'-")
        if word.endswith("'s"):
            word = word[:-2]
        if not word or word in STOP_WORDS:
            continue
        out.append(stem(word))
    return out


def term_forms(text: str, *, whole_numbers: bool = False) -> list[tuple[str, str]]:
    """``(term, word as written)`` for each term :func:`terms` finds in ``text`` (to name a term to a reader).

    >>> term_forms("Changes in 3.12?", whole_numbers=True)
    [('chang', 'Changes'), ('3.12', '3.12')]
    """
    out = []
    for m in (_WORD_NUMBERS if whole_numbers else _WORD).finditer(text):
        written = m.group().replace("’", "'").strip("'-")
        word = written.lower()
        if word.endswith("'s"):
            word, written = word[:-2], written[:-2]
        if word and word not in STOP_WORDS:
            out.append((stem(word), written))
    return out


class BM25:
    """Okapi BM25 over a small list of documents (already tokenised with :func:`terms`).

    ``scaled(query)`` maps raw scores to 0..100 *relative to a reference score*: the
    score a document of average length would get if it contained every distinct query
    term exactly once, which is ``Σ idf(t)`` over the distinct query terms. So a score
    of 100 means "as good as a full single match"; half the query's idf weight matched
    gives about 50; more occurrences can exceed the reference and are capped at 100.
    Query terms that occur in no document count in the reference (with the highest
    idf), so a query about something absent scores low everywhere.
    """

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.tf = [Counter(d) for d in docs]
        self.lengths = [len(d) for d in docs]
        self.n = len(docs)
        self.avgdl = (sum(self.lengths) / self.n) if self.n and sum(self.lengths) else 1.0
        df: Counter[str] = Counter()
        for counts in self.tf:
            df.update(counts.keys())
        self.df = df

    def idf(self, term: str) -> float:
        n = self.df.get(term, 0)
        return math.log(1.0 + (self.n - n + 0.5) / (n + 0.5))

    def score(self, query: Sequence[str], index: int) -> float:
        counts, dl = self.tf[index], self.lengths[index]
        total = 0.0
        for term in dict.fromkeys(query):
            f = counts.get(term, 0)
            if f:
                norm = self.k1 * (1.0 - self.b + self.b * dl / self.avgdl)
                total += self.idf(term) * f * (self.k1 + 1.0) / (f + norm)
        return total

    def scaled(self, query: Sequence[str]) -> list[float]:
        """Every document's score on the 0..100 scale (rounded to 2 decimals)."""
        reference = sum(self.idf(t) for t in dict.fromkeys(query))
        if reference <= 0:
            return [0.0] * self.n
        return [round(min(100.0, 100.0 * self.score(query, i) / reference), 2) for i in range(self.n)]


def cosine_matrix(docs: Sequence[Sequence[str]]) -> np.ndarray:
    """Cosine similarity of tf-idf vectors (idf over ``docs``); zero diagonal."""
    n = len(docs)
    vocab: dict[str, int] = {}
    for d in docs:
        for t in d:
            vocab.setdefault(t, len(vocab))
    if n == 0 or not vocab:
        return np.zeros((n, n))
    mat = np.zeros((n, len(vocab)))
    for i, d in enumerate(docs):
        for t, c in Counter(d).items():
            mat[i, vocab[t]] = c
    df = (mat > 0).sum(axis=0)
    mat = mat * (np.log((1.0 + n) / (1.0 + df)) + 1.0)
    norms = np.linalg.norm(mat, axis=1)
    norms[norms == 0] = 1.0
    mat = mat / norms[:, None]
    sim = mat @ mat.T
    np.fill_diagonal(sim, 0.0)
    return sim


def pagerank(sim: np.ndarray, *, personalization: Sequence[float] | None = None, damping: float = 0.85,
             iterations: int = 200, tol: float = 1e-12) -> np.ndarray:
    """Personalised PageRank over a non-negative similarity matrix (TextRank)."""
    n = sim.shape[0]
    if n == 0:
        return np.zeros(0)
    p = np.ones(n) if personalization is None else np.asarray(personalization, dtype=float)
    p = p / p.sum() if p.sum() > 0 else np.full(n, 1.0 / n)
    out = sim.sum(axis=1)
    dangling = out == 0
    trans = np.divide(sim, out[:, None], out=np.zeros_like(sim), where=out[:, None] > 0)
    rank = p.copy()
    for _ in range(iterations):
        new = damping * (rank @ trans + rank[dangling].sum() * p) + (1.0 - damping) * p
        if np.abs(new - rank).sum() < tol:
            rank = new
            break
        rank = new
    return np.round(rank, 12)
