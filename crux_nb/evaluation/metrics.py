"""Per-question retrieval metrics against gold: chunk refs, source ids, passages, or a predicate on hits.

A gold item is a chunk ref (``"chunk:<source>:<chunk>"`` or a :class:`~crux_nb.refs.ChunkRef`),
a source id (any other string) or a passage (a :class:`GoldPassage`, or a mapping
``{"source_id": ..., "phrase": ...}`` as JSON lines hold it); a hit matches it when its
chunk is that chunk, when it comes from that source (a finding hit matches through the
chunks it cites), or, for a passage, when it comes from that source and its content
contains the phrase (see :class:`GoldPassage` for the exact rule; passage gold survives
re-chunking, chunk refs do not). Each gold item counts once, however many hits match it.
With a predicate there is one gold item: "some hit makes the predicate true".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError
from ..refs import encode_ref, is_ref

__all__ = ["Gold", "GoldPassage", "as_gold", "hit_matches", "question_metrics", "metric_names"]


# a phrase cut by a chunk boundary still matches the chunk holding its start: this many normalised characters
PREFIX_CHARS = 40


def _normalise(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class GoldPassage:
    """A passage of one source as gold: a hit matches when it comes from ``source_id`` and holds ``phrase``.

    Matching is on whitespace-normalised text (runs of spaces, tabs and newlines count as one
    space), case-sensitive: the hit's normalised content must contain the normalised phrase,
    or its first 40 normalised characters (so a phrase that a chunk boundary cuts still
    matches the chunk holding its start). The match does not depend on chunk ids, so gold
    written once survives re-chunking. A finding hit matches when it cites a chunk of the
    source and its own text holds the phrase. In a JSON-lines question file a passage is the object
    ``{"source_id": ..., "phrase": ...}`` (:meth:`to_dict`).

    Examples
    --------
    >>> from types import SimpleNamespace as N
    >>> gold = GoldPassage("with", "the  suite is   executed")
    >>> gold.phrase, gold.matches(N(source=N(id="with"), content="Then the suite is executed."))
    ('the suite is executed', True)
    >>> gold.matches(N(source=N(id="if"), content="the suite is executed"))
    False
    >>> str(gold), gold.to_dict()
    ('with: "the suite is executed"', {'source_id': 'with', 'phrase': 'the suite is executed'})
    """

    source_id: str
    phrase: str

    def __post_init__(self) -> None:
        if not isinstance(self.source_id, str) or not self.source_id:
            raise ParameterError("GoldPassage", "source_id", "a non-empty string", self.source_id)
        if not isinstance(self.phrase, str) or not self.phrase.strip():
            raise ParameterError("GoldPassage", "phrase", "a non-empty string", self.phrase)
        object.__setattr__(self, "phrase", _normalise(self.phrase))

    def __str__(self) -> str:
        return f'{self.source_id}: "{self.phrase}"'

    def to_dict(self) -> dict[str, str]:
        """The JSON form: ``{"source_id": ..., "phrase": ...}``."""
        return {"source_id": self.source_id, "phrase": self.phrase}

    def matches(self, hit: Any) -> bool:
        """Does ``hit`` come from this source and hold the phrase (or its first 40 characters)?"""
        if self.source_id not in _sources(hit):
            return False
        content = _normalise(getattr(hit, "content", "") or "")
        return self.phrase in content or self.phrase[:PREFIX_CHARS] in content

    @classmethod
    def from_value(cls, value: Any, *, where: str = "GoldPassage") -> GoldPassage:
        """A passage from a :class:`GoldPassage` or a mapping with exactly ``source_id`` and ``phrase``."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, Mapping) or set(value) != {"source_id", "phrase"}:
            raise ParameterError(where, "gold", 'a passage {"source_id": ..., "phrase": ...} (exactly these keys)',
                                 value)
        source_id, phrase = value["source_id"], value["phrase"]
        if not isinstance(source_id, str) or not source_id:
            raise ParameterError(where, "gold", "a passage whose source_id is a non-empty string", value)
        if not isinstance(phrase, str) or not phrase.strip():
            raise ParameterError(where, "gold", "a passage whose phrase is a non-empty string", value)
        return cls(source_id, phrase)


@dataclass(frozen=True)
class Gold:
    """What counts as a relevant hit for one question.

    Examples
    --------
    >>> from crux_nb.evaluation import Gold, as_gold
    >>> as_gold(["chunk:plan.md:c0000", "team.md"])
    Gold(items=('chunk:plan.md:c0000', 'team.md'), predicate=None)
    >>> as_gold(lambda hit: hit.score > 0.5).size
    1
    """

    items: tuple[str | GoldPassage, ...] = ()
    predicate: Callable[[Any], bool] | None = None

    @property
    def size(self) -> int:
        return 1 if self.predicate is not None else len(self.items)

    def matched(self, hit: Any) -> set[int]:
        """Indices of the gold items ``hit`` matches.

        Examples
        --------
        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="g")
        >>> kb.add_text("plan.md", "The launch moved to April.")
        >>> hit = kb.recipe().retrieve("launch")[0]
        >>> as_gold(["team.md", "plan.md"]).matched(hit), as_gold(["chunk:plan.md:c0001"]).matched(hit)
        ({1}, set())
        """
        if self.predicate is not None:
            return {0} if self.predicate(hit) else set()
        chunks, sources = _identities(hit)
        return {i for i, item in enumerate(self.items)
                if (item.matches(hit) if isinstance(item, GoldPassage)
                    else item in chunks if item.startswith("chunk:") else item in sources)}


def _sources(hit: Any) -> set[str]:
    """The source ids a hit stands for (a finding: those of the chunks it cites)."""
    if getattr(hit, "kind", None) == "finding":
        return {r.source_id for r in hit.citation.supports if getattr(r, "kind", None) == "chunk"}
    return {hit.source.id}


def _identities(hit: Any) -> tuple[set[str], set[str]]:
    """The chunk refs and source ids a hit stands for."""
    if getattr(hit, "kind", None) == "finding":
        return {encode_ref(r) for r in hit.citation.supports if getattr(r, "kind", None) == "chunk"}, _sources(hit)
    return {encode_ref(hit.ref)}, _sources(hit)


def as_gold(value: Any, *, where: str = "evaluate()") -> Gold:
    """A :class:`Gold` from a list of chunk refs / source ids / passages, a single one, or a predicate ``hit -> bool``.

    A passage is a :class:`GoldPassage` or a mapping ``{"source_id": ..., "phrase": ...}``.

    >>> as_gold(["chunk:a.md:c0001", "b.md"]).items
    ('chunk:a.md:c0001', 'b.md')
    >>> as_gold([{"source_id": "with", "phrase": "the suite is executed"}]).items
    (GoldPassage(source_id='with', phrase='the suite is executed'),)
    """
    if isinstance(value, Gold):
        return value
    if callable(value) and not is_ref(value):
        return Gold(predicate=value)
    if isinstance(value, (str, Mapping, GoldPassage)) or is_ref(value):
        value = [value]
    if not isinstance(value, Iterable):
        raise ParameterError(where, "gold", "a list of chunk refs or source ids, or a predicate on hits", value)
    items = []
    for item in value:
        if isinstance(item, (Mapping, GoldPassage)):
            passage = GoldPassage.from_value(item, where=where)
            if passage not in items:
                items.append(passage)
            continue
        text = encode_ref(item) if is_ref(item) else item
        if not isinstance(text, str) or not text:
            raise ParameterError(where, "gold", "a list of chunk refs, source ids (non-empty strings) or passages", item)
        if text not in items:
            items.append(text)
    if not items:
        raise ParameterError(where, "gold", "a non-empty list of chunk refs or source ids", list(value))
    return Gold(items=tuple(items))


def hit_matches(hits: Sequence[Any], gold: Gold) -> list[bool]:
    """For each hit in order: does it match a gold item no earlier hit matched (a *new* relevant hit)?"""
    found: set[int] = set()
    out = []
    for hit in hits:
        new = gold.matched(hit) - found
        found |= new
        out.append(bool(new))
    return out


def metric_names(ks: Sequence[int]) -> list[str]:
    """Column names in order: ``recall@k``, ``precision@k``, ``hit@k`` per k, ``mrr``, ``ndcg@k`` per k.

    Examples
    --------
    >>> metric_names([1, 5])
    ['recall@1', 'recall@5', 'precision@1', 'precision@5', 'hit@1', 'hit@5', 'mrr', 'ndcg@1', 'ndcg@5']
    """
    return ([f"{m}@{k}" for m in ("recall", "precision", "hit") for k in ks] + ["mrr"] + [f"ndcg@{k}" for k in ks])


def question_metrics(hits: Sequence[Any], gold: Gold, ks: Sequence[int]) -> dict[str, float]:
    """Recall@k, precision@k, hit@k, MRR and nDCG@k (binary gains) of one ranked hit list.

    >>> from types import SimpleNamespace as N
    >>> from crux_nb.refs import ChunkRef
    >>> hit = lambda s, c: N(kind="evidence", ref=ChunkRef(s, c), source=N(id=s))
    >>> m = question_metrics([hit("x.md", "c1"), hit("a.md", "c1")], as_gold(["a.md", "b.md"]), [1, 2])
    >>> m["recall@2"], m["precision@2"], m["mrr"], round(m["ndcg@2"], 3)
    (0.5, 0.5, 0.5, 0.387)
    """
    relevant = hit_matches(hits, gold)
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = sum(relevant[:k]) / gold.size
    for k in ks:
        out[f"precision@{k}"] = sum(relevant[:k]) / k
    for k in ks:
        out[f"hit@{k}"] = float(any(relevant[:k]))
    first = next((i for i, r in enumerate(relevant) if r), None)
    out["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    for k in ks:
        dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(relevant[:k]) if r)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(gold.size, k)))
        out[f"ndcg@{k}"] = dcg / ideal if ideal else 0.0
    return out
