"""The best-first adaptive descent (fallback, budget cut, trace fields, determinism) and the calibrated rater."""

from __future__ import annotations

import random

import pytest

from crux_nb.errors import ParameterError
from crux_nb.models import OfflineModel
from crux_nb.models.rating import calibrated_ratings
from crux_nb.models.text import terms
from crux_nb.retrieval import global_search
from crux_nb.retrieval.globalsearch.best_first import RATING_SHARE
from crux_nb.retrieval.globalsearch.descent import budget_chars, descend
from crux_nb.community import Finding, Report

# root -> a, b; a -> a1, a2; b -> b1, b2 (leaves)
TREE = {"root": None, "a": "root", "b": "root", "a1": "a", "a2": "a", "b1": "b", "b2": "b"}


def unit(cid: str, parent: str | None, text: str = "") -> Report:
    level = 2 if cid == "root" else (1 if cid in ("a", "b") else 0)
    findings = (Finding(f"{cid}:f1", f"finding of {cid} {text}".strip(), ()),)
    return Report(cid, level, parent, f"title {cid}", f"summary {cid}", findings, generation_id="g")


def units(tree=TREE) -> list[Report]:
    return [unit(c, p) for c, p in tree.items()]


class Rater:
    """A fake rating call: fixed ratings per community, every call recorded."""

    def __init__(self, ratings: dict[str, float]):
        self.ratings, self.calls = ratings, []

    def __call__(self, batch: list[Report], k: int) -> dict[str, float]:
        self.calls.append([u.community_id for u in batch])
        return {u.community_id: self.ratings[u.community_id] for u in batch if u.community_id in self.ratings}


def rows(trace):
    return {r.community_id: r for r in (*trace.visited, *trace.skipped)}


def test_passing_children_are_visited_and_leaves_selected_without_fallback():
    rate = Rater({"a": 80, "b": 10, "a1": 90, "a2": 20, "b1": 99, "b2": 99})
    selected, trace, cut = descend(units(), rate, fallback="none")
    assert selected == {"a1"} and not cut and trace.rating_calls == len(rate.calls) == 2
    r = rows(trace)
    assert r["a"].decision == "visited" and r["b"].decision == "skipped" and "b1" not in r  # b's subtree never rated
    assert r["a1"].selected and not r["a2"].selected and not any(x.fallback for x in r.values())


def test_no_passing_child_falls_back_to_the_best_child_and_marks_it():
    rate = Rater({"a": 30, "b": 40, "a1": 5, "a2": 6, "b1": 45, "b2": 1})
    none, trace_none, _ = descend(units(), rate, fallback="none")
    assert none == set()  # the old rule: nothing passes, nothing is mapped
    selected, trace, _ = descend(units(), Rater(rate.ratings), fallback="best")
    r = rows(trace)
    assert r["b"].decision == "visited" and r["b"].fallback and r["b"].rating == 40  # best child of the root
    assert selected == {"b1"} and r["b1"].fallback and r["b1"].selected  # best child of b
    assert r["a"].decision == "skipped" and "a1" not in r


def test_next_level_fallback_rates_every_grandchild():
    rate = Rater({"a": 30, "b": 40, "a1": 70, "a2": 6, "b1": 10, "b2": 1})
    selected, trace, _ = descend(units(), rate, fallback="next-level")
    r = rows(trace)
    assert {c for call in rate.calls for c in call} == set(TREE) - {"root"}  # GraphRAG: the whole next level
    assert all(r[c].fallback for c in ("a1", "a2", "b1", "b2"))  # queued by the fallback
    assert selected == {"a1"}  # and rated on their own merit


def test_budget_cut_stops_the_descent_and_says_so():
    rate = Rater({c: 90 for c in TREE})
    all_units = units()
    one_rating = len("title a") + len("summary a")
    budget = int(2 * one_rating / RATING_SHARE) + 1  # rating calls may spend RATING_SHARE of it: two ratings
    selected, trace, cut = descend(all_units, rate, budget=budget, fallback="none")
    assert trace.spent_chars <= trace.budget_chars == budget and trace.truncated and rate.calls == [["a", "b"]]
    assert cut and all("budget" in c["reason"] for c in cut)
    r = rows(trace)
    assert {c for c, x in r.items() if x.decision == "truncated"} == {"a1", "a2", "b1", "b2"}
    assert all(r[c].rating is None for c in ("a1", "a2", "b1", "b2"))


def test_rating_call_ceiling_truncates():
    selected, trace, cut = descend(units(), Rater({}), max_calls=0, fallback="none")
    assert trace.rating_calls == 0 and cut[0]["reason"] == "rating call budget of 0 reached"
    assert sorted(cut[0]["community_ids"]) == ["a", "b"]


def test_budget_fallback_fills_what_is_left_by_prior_within_budget():
    rate = Rater({"a": 10, "b": 10, "a1": 10, "a2": 10, "b1": 10, "b2": 10})
    all_units = units()
    leaves = [u for u in all_units if u.level == 0]
    budget = budget_chars(0.7, leaves)
    prior = {"a1": 1.0, "a2": 2.0, "b1": 9.0, "b2": 3.0}
    selected, trace, _ = descend(all_units, rate, budget=budget, fallback="budget", prior=prior)
    assert trace.spent_chars <= budget and "b1" in selected  # the best prior first
    assert all(rows(trace)[c].fallback for c in selected)


def test_guard_never_returns_empty_unless_asked():
    selected, trace, _ = descend(units(), Rater({}), fallback="best")  # the model rates nothing
    assert len(selected) == 1 and rows(trace)[next(iter(selected))].fallback


def test_forest_roots_are_rated_like_children():
    tree = {"r1": None, "r2": None, "x": "r1", "y": "r2"}
    rate = Rater({"r1": 70, "r2": 10, "x": 60, "y": 90})
    selected, trace, _ = descend([unit(c, p) for c, p in tree.items()], rate, fallback="none")
    assert rate.calls[0] == ["r1", "r2"] and selected == {"x"}


def test_descent_is_deterministic_and_ignores_input_order():
    ratings = {"a": 55, "b": 60, "a1": 70, "a2": 51, "b1": 10, "b2": 80}
    base = descend(units(), Rater(ratings), budget=5_000, prior={"a1": 3.0})
    shuffled = units()
    random.Random(7).shuffle(shuffled)
    again = descend(shuffled, Rater(ratings), budget=5_000, prior={"a1": 3.0})
    assert base == again


def test_trace_to_dict_carries_rating_decision_fallback_and_budget():
    _, trace, _ = descend(units(), Rater({"a": 30, "b": 40, "b1": 45}), budget=10_000)
    d = trace.to_dict()
    assert {"threshold", "rating_calls", "budget_chars", "spent_chars", "fallback", "truncated"} <= set(d)
    row = next(r for r in d["visited"] if r["community_id"] == "b")
    assert row == {"community_id": "b", "level": 1, "rating": 40.0, "decision": "visited", "fallback": True,
                   "prior": None, "selected": False}


def test_step_parameters_validate_and_show_in_repr():
    step = global_search(model=OfflineModel(), scan="adaptive", budget=2000, fallback="none", threshold=40)
    assert step.to_dict()["config"] | {} == {"model": "offline", "scan": "adaptive", "detail": "auto", "limit": 20,
                                             "threshold": 40, "budget": 2000, "fallback": "none"}
    for bad in ({"budget": 1.5}, {"budget": 0}, {"fallback": "all"}, {"threshold": 101}, {"prior": "chunks"}):
        with pytest.raises(ParameterError):
            global_search(model=OfflineModel(), **bad)


# ------------------------------------------------------------------ calibrated rater
LONG = "What does the story say about the ghost showing Scrooge his lonely childhood at the old school?"
SHORT = "Scrooge childhood school?"
DOCS = ["Scrooge saw his lonely childhood at school, a boy left alone.", "The Cratchits ate a goose and a pudding.",
        "Fezziwig's ball was merry and bright.", "Marley's ghost wore a chain of cash-boxes."]


def test_calibrated_ratings_are_bounded_ordered_and_deterministic():
    docs = [terms(d) for d in DOCS]
    for q in (LONG, SHORT):
        r = calibrated_ratings(terms(q), docs)
        assert r == calibrated_ratings(terms(q), docs) and all(0 <= x <= 100 for x in r)
        assert r[0] == max(r) and r[0] >= 50 and r[1] == 0 and r[2] == 0


def test_one_threshold_serves_short_and_long_questions():
    docs = [terms(d) for d in DOCS]
    long_cal, short_cal = calibrated_ratings(terms(LONG), docs)[0], calibrated_ratings(terms(SHORT), docs)[0]
    old = OfflineModel(rating="bm25")
    reports = [{"community_id": f"c{i}", "title": "", "summary": d} for i, d in enumerate(DOCS)]
    long_old = old.rate(LONG, reports)["ratings"][0]["rating"]
    assert long_cal >= 50 and short_cal >= 50  # the relevant report passes 50 for both
    assert long_old < 50  # the map's scale: the long question's relevant report does not


def test_calibrated_rating_does_not_move_when_unrelated_reports_join_the_call():
    docs = [terms(d) for d in DOCS]
    alone = calibrated_ratings(terms(SHORT), docs[:2])
    assert calibrated_ratings(terms(SHORT), docs)[:2] == alone


def test_nothing_relevant_rates_low_everywhere():
    r = calibrated_ratings(terms("Which dragons guard the mountain gold?"), [terms(d) for d in DOCS])
    assert max(r) < 50


def test_offline_rating_option_keeps_the_default_fingerprint():
    assert OfflineModel(rating="calibrated").fingerprint == OfflineModel().fingerprint
    assert OfflineModel(rating="bm25").fingerprint != OfflineModel().fingerprint
    with pytest.raises(ParameterError):
        OfflineModel(rating="llm")


def test_the_best_rated_is_mapped_first_when_the_budget_allows_one():
    rate = Rater({"a": 80, "b": 10, "a1": 60, "a2": 95})
    tree = [unit(c, p, "x" * 200 if c in ("a1", "a2") else "") for c, p in TREE.items()]
    ratings_cost = 2 * 16 + 2 * 18  # the calls [a, b] and [a1, a2]: title + summary characters
    budget = ratings_cost + tree[3].chars + 1  # room for the two calls and one leaf
    assert RATING_SHARE * budget >= ratings_cost
    selected, trace, cut = descend(tree, rate, budget=budget, fallback="none")
    assert rate.calls == [["a", "b"], ["a1", "a2"]]
    assert selected == {"a2"}  # rated 95, mapped before a1 (60), which shared its call
    assert any(c["kind"] == "adaptive-map" and c["community_ids"] == ["a1"] for c in cut)


def test_guard_maps_one_report_even_past_a_tiny_budget():
    selected, trace, _ = descend(units(), Rater({"a": 10, "b": 10}), budget=1, fallback="budget")
    assert len(selected) == 1 and trace.spent_chars > trace.budget_chars == 1


# ------------------------------------------------------------------ prior, first call, evidence-free fill
def test_finding_prior_scores_a_report_by_its_best_finding():
    from crux_nb.retrieval.globalsearch.descent import finding_prior, report_prior

    def report(cid: str, statements: list[str]) -> Report:
        fs = tuple(Finding(f"{cid}:f{i}", s, ()) for i, s in enumerate(statements))
        return Report(cid, 0, "root", f"title {cid}", "", fs, generation_id="g")

    filler = [f"The {w} was cold and the street was dark and long." for w in ("night", "yard", "room", "door", "bell")]
    long_one = report("long", ["Scrooge saw his lonely childhood at the old school."] + filler)
    diffuse = report("diffuse", ["Scrooge walked home.", "The school bell rang.", "A childhood friend waved."])
    other = report("other", ["The Cratchits ate a goose."])
    query = "What does Scrooge see of his childhood at school?"
    prior = finding_prior([long_one, diffuse, other], query)
    assert prior == finding_prior([other, diffuse, long_one], query)  # input order does not matter
    assert prior["long"] > prior["diffuse"] > prior["other"] == 0.0
    assert report_prior([long_one, diffuse, other], query)["long"] < prior["long"]  # diluted by its other text


def test_the_first_rating_call_stays_within_the_rating_budget():
    rate = Rater({c: 90 for c in TREE})
    one_rating = len("title a") + len("summary a")
    budget = int(1.5 * one_rating / RATING_SHARE)  # room for one rating, not two
    _, trace, cut = descend(units(), rate, budget=budget, fallback="none")
    assert rate.calls[0] == ["a"]  # one community, not a full batch past the budget
    assert trace.truncated and any("budget" in c["reason"] for c in cut)


def test_budget_fill_skips_reports_without_evidence():
    rate = Rater({c: 10 for c in TREE})
    prior = {"a1": 5.0, "a2": 0.0, "b1": 0.0, "b2": 3.0}
    selected, trace, _ = descend(units(), rate, budget=None, fallback="budget", prior=prior)
    assert selected == {"a1", "b2"}  # a2 and b1: nothing of the question in them, and no rating passed
    r = rows(trace)
    assert "a2" not in r or not r["a2"].selected
    none_prior, _, _ = descend(units(), Rater(rate.ratings), budget=None, fallback="budget", prior={})
    assert none_prior == {"a1", "a2", "b1", "b2"}  # without a prior every report may be filled in


def test_mappable_overrides_the_detail_rule_and_only_its_way_is_rated():
    """``mappable`` (overview's parents plus top-level leaves): a leaf under the root is rated and mapped;
    leaves below a parent are never rated."""
    tree = {"root": None, "a": "root", "c": "root", "a1": "a", "a2": "a"}
    us = [unit(k, p) for k, p in tree.items()]
    rate = Rater({"a": 10, "c": 90})
    selected, trace, _ = descend(us, rate, mappable={"root", "a", "c"}, budget=None, fallback="none")
    assert sorted(c for call in rate.calls for c in call) == ["a", "c"]
    assert "c" in selected and "a" not in selected and rows(trace)["c"].rating == 90


def test_a_truncated_community_mapped_by_the_fill_is_not_reported_as_cut():
    prior = {u.community_id: 50.0 for u in units()}
    selected, trace, cut = descend(units(), Rater({}), leaves=False, max_calls=0, budget=None, fallback="budget",
                                   prior=prior)  # overview: the queued parents are what the fill maps
    assert trace.truncated and cut and {"a", "b"} <= selected
    assert not set(cut[0]["community_ids"]) & selected
