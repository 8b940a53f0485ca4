"""OfflineModel: determinism, extraction rules, grounded extractive reports, lexical map/rate."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crux_nb._hashing import canonical_json
from crux_nb.errors import ParameterError
from crux_nb.models import KnowledgeModel, OfflineModel, validate_output

PLAN = [
    {
        "id": "chunk:plan.md:c0000",
        "text": (
            "# Launch Plan v2\n\n"
            "The Ingest Gateway team met on Tuesday. Priya Raman's plan moved the launch of Beacon 3.0 to May. "
            "Northwind Traders asked for an earlier date.\n\n"
            "- Priya owns the rollout.\n- Marcus Chen reviews the launch plan."
        ),
    },
    {
        "id": "chunk:plan.md:c0001",
        "text": (
            "Yesterday Priya said the Ingest Gateway needs a new launch plan. However, Chen disagreed. "
            "The launch plan depends on Beacon 3.0. We will meet in March."
        ),
    },
    {
        "id": "chunk:plan.md:c0002",
        "text": "THE ROLLOUT\n\nPriya's team owns the launch plan. When Northwind Traders signed, Marcus was happy.",
    },
]


def names(out):
    return {e["name"] for e in out["entities"]}


def entity(out, name):
    return next(e for e in out["entities"] if e["name"] == name)


@pytest.fixture(scope="module")
def extracted():
    return OfflineModel().extract(copy.deepcopy(PLAN))


# ------------------------------------------------------------------ identity
def test_protocol_name_and_fingerprint():
    model = OfflineModel()
    assert isinstance(model, KnowledgeModel)
    assert model.name == "offline"
    assert model.fingerprint == OfflineModel().fingerprint
    assert OfflineModel(max_findings=3).fingerprint != model.fingerprint
    assert OfflineModel(name="other").fingerprint != model.fingerprint
    assert repr(model) == f"OfflineModel(name='offline', fingerprint='{model.fingerprint}')"


def test_bad_options_are_parameter_errors():
    with pytest.raises(ParameterError, match="max_findings"):
        OfflineModel(max_findings=-1)
    with pytest.raises(ParameterError, match="name"):
        OfflineModel(name=" ")
    with pytest.raises(TypeError):
        OfflineModel(3)  # keyword-only


def test_same_input_same_output_byte_for_byte(extracted):
    model = OfflineModel()
    again = OfflineModel().extract(copy.deepcopy(PLAN))
    assert canonical_json(again) == canonical_json(extracted)
    community = leaf_community()
    assert canonical_json(model.write_report(community)) == canonical_json(OfflineModel().write_report(copy.deepcopy(community)))
    units = map_units()
    assert canonical_json(model.map_findings("launch plan", units)) == canonical_json(model.map_findings("launch plan", copy.deepcopy(units)))


# ---------------------------------------------------------------- extraction
def test_multiword_names_kept_whole(extracted):
    assert {"Ingest Gateway", "Northwind Traders", "Beacon 3.0", "Priya Raman", "Marcus Chen"} <= names(extracted)
    assert "Gateway" not in names(extracted) and "Traders" not in names(extracted)


def test_possessives_case_variants_and_lone_names_fold(extracted):
    priya = entity(extracted, "Priya Raman")
    assert "Priya" in priya["aliases"]  # lone first name, possessive "Priya's" folded too
    assert not any("'" in n or "’" in n for n in names(extracted))
    marcus = entity(extracted, "Marcus Chen")
    assert {"Marcus", "Chen"} <= set(marcus["aliases"])
    assert "Priya" not in names(extracted) and "Chen" not in names(extracted)


def test_stop_words_and_sentence_initial_noise_are_dropped(extracted):
    for noise in ("The", "Tuesday", "May", "March", "Yesterday", "However", "We", "When", "THE ROLLOUT", "ROLLOUT", "Launch Plan"):
        assert noise not in names(extracted), noise
    assert entity(extracted, "Northwind Traders").get("type") == "organization"
    assert entity(extracted, "Beacon 3.0").get("type") == "product"


def test_ambiguous_lone_name_stays_separate():
    out = OfflineModel().extract([
        {"id": "a", "text": "We met Bob Cratchit and Peter Cratchit at noon. Later Mrs. Cratchit arrived with Cratchit."},
    ])
    assert {"Bob Cratchit", "Peter Cratchit", "Mrs. Cratchit", "Cratchit"} <= names(out)


def test_mentions_and_related_cite_only_issued_chunks(extracted):
    issued = {c["id"] for c in PLAN}
    assert {m["chunk_id"] for m in extracted["mentions"]} <= issued
    by_chunk = {(m["chunk_id"], m["name"]) for m in extracted["mentions"]}
    assert ("chunk:plan.md:c0001", "Marcus Chen") in by_chunk  # via the alias "Chen"
    rel = {(r["from"], r["to"]): r for r in extracted["related"]}
    pair = rel[("Beacon 3.0", "Priya Raman")]
    assert pair["chunk_ids"] == ["chunk:plan.md:c0000", "chunk:plan.md:c0001"]
    assert pair["description"] == "Priya Raman's plan moved the launch of Beacon 3.0 to May."
    for r in extracted["related"]:
        assert r["from"] < r["to"] and set(r["chunk_ids"]) <= issued
        for cid in r["chunk_ids"]:
            assert (cid, r["from"]) in by_chunk and (cid, r["to"]) in by_chunk
    cleaned, issues = validate_output("extract", extracted, issued_ids=issued)
    assert issues == [] and cleaned == extracted


def test_recurring_lowercase_phrase_becomes_a_concept(extracted):
    assert entity(extracted, "launch plan")["type"] == "concept"
    assert "launch plan" not in names(OfflineModel(concepts=False).extract(PLAN))


# -------------------------------------------------------------------- reports
EVIDENCE = [
    ("chunk:plan.md:c0000", "Priya Raman owns the Beacon 3.0 launch plan. The plan moved the launch to May after the load tests."),
    ("chunk:plan.md:c0001", "The Ingest Gateway team supports the launch plan with extra capacity. Priya Raman owns the Beacon 3.0 launch plan."),
    ("chunk:incident.md:c0000", "INC-2041 was an outage of the Ingest Gateway that lasted forty minutes on a busy Monday morning."),
    ("chunk:incident.md:c0001", "The postmortem for INC-2041 asked the Ingest Gateway team to add backpressure before the launch."),
    ("chunk:notes.md:c0000", "Northwind Traders asked for an earlier launch date because their quarter ends in April."),
]


def leaf_community():
    return {
        "community_id": "leaf-1",
        "level": 0,
        "entities": [{"name": "Priya Raman"}, {"name": "Ingest Gateway", "description": "event intake"}, {"name": "INC-2041"}],
        "chunks": [{"ref": ref, "text": text} for ref, text in EVIDENCE],
        "children": [],
    }


def test_leaf_report_is_grounded_verbatim():
    report = OfflineModel().write_report(leaf_community())
    cleaned, issues = validate_output("write_report", report, issued_ids=[ref for ref, _ in EVIDENCE])
    assert issues == []
    texts = dict(EVIDENCE)
    assert report["findings"]
    for finding in report["findings"]:
        assert finding["evidence"], finding
        for ref in finding["evidence"]:
            assert finding["statement"] in texts[ref]
        # cites exactly the chunks whose text contains the sentence
        assert finding["evidence"] == [ref for ref, text in EVIDENCE if finding["statement"] in text]
    shared = next(f for f in report["findings"] if f["statement"] == "Priya Raman owns the Beacon 3.0 launch plan.")
    assert shared["evidence"] == ["chunk:plan.md:c0000", "chunk:plan.md:c0001"]
    assert 1 <= len(report["title"]) <= 120
    assert any(name in report["title"] for name in ("Priya Raman", "Ingest Gateway", "INC-2041"))
    for sentence in report["summary"].split(". "):
        assert any(sentence.rstrip(".") in text for _ref, text in EVIDENCE)


def test_long_sentences_are_skipped_not_cut():
    long_sentence = "The Ingest Gateway " + "handles a great many events, " * 20 + "and then it rests."
    community = leaf_community()
    community["chunks"].append({"ref": "chunk:long.md:c0000", "text": long_sentence})
    report = OfflineModel().write_report(community)
    assert all(len(f["statement"]) <= 500 for f in report["findings"])
    assert all("chunk:long.md:c0000" not in f["evidence"] for f in report["findings"])


def test_parent_report_uses_child_findings_only():
    model = OfflineModel()
    leaf = model.write_report(leaf_community())
    other = model.write_report({
        "community_id": "leaf-2", "level": 0, "entities": [{"name": "Northwind Traders"}], "children": [],
        "chunks": [{"ref": "chunk:notes.md:c0009", "text": "Northwind Traders renewed their contract for two more years with the Beacon team."}],
    })
    children = [dict(leaf, community_id="leaf-1"), dict(other, community_id="leaf-2")]
    parent = model.write_report({
        "community_id": "parent-1", "level": 1, "entities": [{"name": "Priya Raman"}, {"name": "Northwind Traders"}],
        "chunks": [], "children": children,
    })
    child_findings = {f["statement"]: f["evidence"] for c in children for f in c["findings"]}
    assert parent["findings"]
    for finding in parent["findings"]:
        assert finding["statement"] in child_findings  # copied, never new text
        assert finding["evidence"] == child_findings[finding["statement"]]
    assert validate_output("write_report", parent)[1] == []


def test_parent_merges_evidence_of_identical_child_statements():
    children = [
        {"community_id": "a", "title": "A", "summary": "", "findings": [{"id": "f1", "statement": "Same sentence here about Beacon.", "evidence": ["chunk:x:1"]}]},
        {"community_id": "b", "title": "B", "summary": "", "findings": [{"id": "f1", "statement": "Same sentence here about Beacon.", "evidence": ["chunk:y:2"]}]},
    ]
    parent = OfflineModel().write_report({"community_id": "p", "level": 1, "entities": [], "chunks": [], "children": children})
    assert parent["findings"] == [{"id": "finding-1", "statement": "Same sentence here about Beacon.", "evidence": ["chunk:x:1", "chunk:y:2"]}]
    assert parent["title"] == "A; B"


def test_empty_community_still_valid():
    report = OfflineModel().write_report({"community_id": "empty", "level": 0, "entities": [], "chunks": [], "children": []})
    assert validate_output("write_report", report)[1] == []
    assert report["findings"] == []


# ---------------------------------------------------------------- map / rate
def map_units():
    return [
        {"community_id": "c1", "level": 0, "title": "Launch", "summary": "",
         "findings": [{"id": "c1:f1", "statement": "Priya Raman owns the Beacon 3.0 launch plan."},
                      {"id": "c1:f2", "statement": "The office plants are watered on Fridays."}]},
        {"community_id": "c2", "level": 0, "title": "Gateway", "summary": "",
         "findings": [{"id": "c2:f1", "statement": "The launch plan changed after the Ingest Gateway outage."},
                      {"id": "c2:f2", "statement": "Priya Raman owns the Beacon 3.0 launch plan."}]},
    ]


def test_map_scores_in_range_relevant_first_statements_verbatim():
    out = OfflineModel().map_findings("Who owns the launch plan?", map_units())
    assert validate_output("map_findings", out, issued_ids=["c1:f1", "c1:f2", "c2:f1", "c2:f2"])[1] == []
    statements = {f["statement"] for u in map_units() for f in u["findings"]}
    assert out["findings"], out
    for f in out["findings"]:
        assert 0 < f["score"] <= 100 and f["statement"] in statements
    top = out["findings"][0]
    assert top["statement"] == "Priya Raman owns the Beacon 3.0 launch plan."
    assert top["finding_ids"] == ["c1:f1", "c2:f2"]  # identical statements merge
    assert all("plants" not in f["statement"] for f in out["findings"])  # zero relevance omitted
    scores = [f["score"] for f in out["findings"]]
    assert scores == sorted(scores, reverse=True)


def test_map_with_no_overlap_returns_nothing():
    assert OfflineModel().map_findings("quantum chromodynamics", map_units()) == {"findings": []}


def test_rate_every_report_in_range_relevant_higher():
    reports = [
        {"community_id": "plants", "title": "Office plants", "summary": "Watering on Fridays.", "findings": []},
        {"community_id": "launch", "title": "Launch plan", "summary": "Priya Raman owns the Beacon 3.0 launch plan.",
         "findings": [{"id": "f1", "statement": "The launch plan moved to May."}]},
    ]
    out = OfflineModel().rate("launch plan owner", reports)
    assert validate_output("rate", out, issued_ids=["plants", "launch"])[1] == []
    ratings = {r["community_id"]: r["rating"] for r in out["ratings"]}
    assert list(ratings) == ["plants", "launch"]
    assert all(0 <= v <= 100 for v in ratings.values())
    assert ratings["launch"] > ratings["plants"] == 0
    assert ratings["launch"] >= 50


# ------------------------------------------------------------------ properties
_WORDS = ["Priya", "Raman", "Beacon", "3.0", "the", "launch", "plan", "moved", "Ingest", "Gateway", "owns", "Mr.",
          "Fezziwig's", "team", "and", "of", "ÉCOLE", "x" * 30, "|", "#", "-", "**Owner**:", "'Hi!'", "said"]
_SEPS = [" ", " ", " ", ". ", "\n", "\n\n", ", ", "; ", "? "]
_texts = st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_SEPS)), max_size=120).map(
    lambda parts: "".join(w + s for w, s in parts))


@settings(max_examples=60, deadline=None)
@given(st.lists(_texts, min_size=1, max_size=4))
def test_any_text_gives_valid_grounded_output(texts):
    model = OfflineModel()
    chunks = [{"id": f"chunk:d:{i}", "text": t} for i, t in enumerate(texts)]
    extracted = model.extract(chunks)
    assert validate_output("extract", extracted, issued_ids=[c["id"] for c in chunks])[1] == []
    community = {"community_id": "c", "level": 0, "entities": [{"name": e["name"]} for e in extracted["entities"]],
                 "chunks": [{"ref": c["id"], "text": c["text"]} for c in chunks], "children": []}
    report = model.write_report(community)
    assert validate_output("write_report", report, issued_ids=[c["id"] for c in chunks])[1] == []
    for finding in report["findings"]:
        assert finding["evidence"] == [c["id"] for c in chunks if finding["statement"] in c["text"]]
    units = [{"community_id": "c", "level": 0, "title": report["title"], "summary": report["summary"],
              "findings": [{"id": f"c:{f['id']}", "statement": f["statement"]} for f in report["findings"]]}]
    assert validate_output("map_findings", model.map_findings(texts[0][:80], units))[1] == []
    assert validate_output("rate", model.rate(texts[0][:80], units), issued_ids=["c"])[1] == []


def test_map_score_does_not_depend_on_the_batch():
    """A finding's map score is the same whichever reports share its batch (v4, v5 with the corpus idf); v3's
    batch idf was not."""
    a = {"community_id": "a", "level": 0, "title": "A", "summary": "",
         "findings": [{"id": "a:f1", "statement": "Marley wears the chain he forged in life."},
                      {"id": "a:f2", "statement": "Scrooge sees the ghost of Marley at his door."}]}
    b = {"community_id": "b", "level": 0, "title": "B", "summary": "",
         "findings": [{"id": "b:f1", "statement": "The ghost of Marley walks with a chain of cash-boxes."},
                      {"id": "b:f2", "statement": "Marley's ghost warns Scrooge about the chain."}]}
    q = "Why does Marley's ghost wear a chain?"

    def scores(model, units):
        return {f["finding_ids"][0]: f["score"] for f in model.map_findings(q, units)["findings"]}

    alone, together = scores(OfflineModel(), [a]), scores(OfflineModel(), [a, b])
    assert alone and alone == {k: v for k, v in together.items() if k.startswith("a:")}
    # v5: weighted by the corpus idf every unit carries (the searched corpus', not the batch's): still independent
    corpus = {"documents": 160, "df": {"marley": 40, "ghost": 70, "wear": 3, "chain": 12}}
    a_idf, b_idf = {**a, "corpus": corpus}, {**b, "corpus": corpus}
    alone_idf, together_idf = scores(OfflineModel(), [a_idf]), scores(OfflineModel(), [a_idf, b_idf])
    assert alone_idf and alone_idf == {k: v for k, v in together_idf.items() if k.startswith("a:")}
    assert scores(OfflineModel(), [b_idf, a_idf]) == together_idf  # nor on the order of the batch
    assert alone_idf != alone  # the idf moved the scores: "wear" (3 chunks) outweighs "ghost" (70)
    old_alone, old_together = scores(OfflineModel(map_score="batch-bm25"), [a]), scores(OfflineModel(map_score="batch-bm25"), [a, b])
    assert old_alone != {k: v for k, v in old_together.items() if k.startswith("a:")}  # the batch moved v3's scores
    assert OfflineModel(map_score="batch-bm25").fingerprint != OfflineModel().fingerprint
