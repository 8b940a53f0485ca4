"""Short-document corpora of any size for the extraction benchmark (issue 35), built offline and reproducibly.

The first 9,003 documents are the real multi-hop passages (2WikiMultihopQA, then MuSiQue and HotpotQA; about
460 characters each; ``../shared/data/multihop``). Past them, round ``r`` (1, 2, ...) repeats the real passages
with their names relabeled: the *name words* (capitalised words, three letters or more, that never occur
lower-case anywhere in the passages: "Einstein", "Bavaria", not "The" or "However") are permuted among
themselves by a fixed hash of the round, the same permutation in every passage of the round. A round is thus
the real corpus with its names consistently renamed (same lengths, same sentence structure, the same names
recurring across passages), while the multi-word names ("Albert Einstein") become new combinations, so the
distinct-entity count grows with the document count as in a real corpus. A corpus that repeated the same
names would hide what issue 35 fixed: the cost that grew with the number of distinct entities.

Why not text that ships with Python: the standard library's docstrings and ``pydoc_data.topics`` give about
8,100 paragraphs of 80 characters or more (counted on Python 3.11), too few for 100k documents.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import pandas as pd

from _multihop import load_sample  # bench/ is the script's folder (a side may run with an older bench package)

SAMPLES = ("2wiki", "musique", "hotpotqa")
WORD = re.compile(r"\b[^\W\d_]{3,}\b")


@lru_cache(maxsize=1)
def real_passages() -> pd.DataFrame:
    """The 9,003 real passages: ``id`` (sample-passage), ``title``, ``text``."""
    return pd.concat([load_sample(name).passages.assign(id=lambda f, s=name: s + "-" + f["id"])
                      for name in SAMPLES], ignore_index=True)


@lru_cache(maxsize=1)
def name_words() -> tuple[str, ...]:
    """Capitalised words of the real passages that never occur with a lower-case first letter, sorted."""
    real = real_passages()
    words = set(WORD.findall("\n".join(real["title"]) + "\n" + "\n".join(real["text"])))
    lower = {w for w in words if w[0].islower()}
    return tuple(sorted(w for w in words if w[0].isupper() and w[1:].islower() and w.lower() not in lower))


def _relabel(round_: int):
    """A function replacing every name word by its image under round ``round_``'s fixed permutation."""
    pool = name_words()
    shuffled = sorted(pool, key=lambda w: hashlib.blake2b(f"{round_}\0{w}".encode(), digest_size=8).digest())
    image = dict(zip(pool, shuffled))
    return lambda text: WORD.sub(lambda m: image.get(m.group(0), m.group(0)), text)


def passages(n: int) -> pd.DataFrame:
    """The first ``n`` documents (``id``, ``title``, ``text``): the real passages, then relabeled rounds of them."""
    real = real_passages()
    parts, left, round_ = [real.iloc[:n]], n - len(real), 1
    while left > 0:
        block = real.iloc[:left]
        relabel = _relabel(round_)
        parts.append(pd.DataFrame({"id": f"r{round_}-" + block["id"], "title": block["title"].map(relabel),
                                   "text": block["text"].map(relabel)}))
        left, round_ = left - len(block), round_ + 1
    return pd.concat(parts, ignore_index=True)
