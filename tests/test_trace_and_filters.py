"""Request filters on unknown fields warn; repeated trace warnings are collapsed with a count (issue 15)."""

import warnings

import pytest

import crux_nb
from crux_nb.retrieval.trace import collapse_warnings


@pytest.fixture
def kb():
    kb = crux_nb.knowledge_base(id="f")
    kb.add_text("a.md", "---\nteam: x\n---\n# A\n\nRelease planning starts in March.")
    kb.add_text("b.md", "# B\n\nRelease planning for team b.")
    return kb


def test_a_filter_on_a_field_no_chunk_has_warns(kb):
    with pytest.warns(UserWarning, match="filter field 'tem' is not a field of any chunk"):
        hits = kb.recipe().retrieve("release planning", filter={"tem": "x"})
    assert len(hits) == 0
    with pytest.warns(UserWarning):
        result = kb.recipe().retrieve_with_trace("release planning", filter={"tem": "x"})
    assert len(result.trace.warnings) == 1 and "'tem'" in result.trace.warnings[0] and "team" in result.trace.warnings[0]


@pytest.mark.parametrize("filter", [{"team": "x"}, {"source_id": "a.md"}, {"namespace": "f"}])
def test_a_filter_on_a_known_field_does_not_warn(kb, filter):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = kb.recipe().retrieve_with_trace("release planning", filter=filter)
    assert result.trace.warnings == ()


def test_a_filter_value_no_chunk_holds_warns(kb):
    """A known field, but a value no chunk holds: the filter matches nothing (issue 34: no silent empties)."""
    with pytest.warns(UserWarning, match=r"no chunk has 'team' = 'nobody'.*\(values: 'x'\)"):
        result = kb.recipe().retrieve_with_trace("release planning", filter={"team": "nobody"})
    assert len(result.hits) == 0 and len(result.trace.warnings) == 1


def test_repeated_warnings_are_collapsed_with_a_count():
    assert collapse_warnings(["x", "y", "x", "z", "x", "y"]) == ("x (3 times)", "y (2 times)", "z")
    assert collapse_warnings([]) == ()


def test_a_trace_carries_each_repeated_warning_once(kb):
    with pytest.warns(UserWarning):
        result = kb.recipe().retrieve_with_trace("release planning", filter={"tem": "x"})
    from crux_nb.retrieval.types import StepOutput  # a step that repeats one warning, as expand_relations can

    step = kb.recipe().steps[0]
    run = type(step).run

    def noisy(self, input, context):
        out = run(self, input, context)
        return StepOutput(hits=out.hits, warnings=("truncated at 50.",) * 5 + ("other.",))

    try:
        type(step).run = noisy
        trace = kb.recipe().retrieve_with_trace("release planning").trace
    finally:
        type(step).run = run
    assert trace.warnings == ("truncated at 50. (5 times)", "other.")
    assert trace.steps[0].warnings == ("truncated at 50. (5 times)", "other.")
    assert result.trace.to_frame()["warnings"].tolist() == [1]
