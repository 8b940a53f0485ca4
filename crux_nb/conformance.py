"""Conformance checks for recipe steps and knowledge models (as scikit-learn's ``check_estimator``).

Run them on your own steps and models in your tests; crux_nb runs them on every built-in one.
Each check raises ``AssertionError`` naming the rule that failed.

>>> from crux_nb.retrieval import expand_relations
>>> from crux_nb.models import OfflineModel
>>> check_step(expand_relations(limit=3))
>>> check_knowledge_model(OfflineModel())
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .errors import ParameterError
from .hits import EvidenceHit, FindingHit, to_data
from .retrieval import types as step_types

__all__ = ["check_step", "check_knowledge_model", "assert_hits_equal"]

_CORPUS = {
    "plan.md": "# Launch plan\n\nAda Park leads the Lumen launch. The launch moved to May.",
    "team.md": "# Team\n\nAda Park works with Ben Ortiz on Lumen pricing.",
    "notes.md": "# Notes\n\nBen Ortiz reviews the Lumen launch plan every week.",
}
_QUERY = "Lumen launch plan"


def assert_hits_equal(left: Any, right: Any) -> None:
    """Assert two hit lists are equal hit by hit (kind, key, score, provenance: everything in ``to_data``).

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Alpha beta.")
    >>> assert_hits_equal(kb.recipe().retrieve("alpha"), kb.recipe().retrieve("alpha"))
    """
    left, right = list(left), list(right)
    assert len(left) == len(right), f"hit lists differ in length: {len(left)} != {len(right)}"
    for i, (a, b) in enumerate(zip(left, right)):
        assert to_data(a) == to_data(b), f"hit {i} differs:\n{to_data(a)}\n{to_data(b)}"


def check_step(step: Any, *, factory: Any = None) -> None:
    """Check a recipe step against the step contract.

    Data form (``to_dict()`` is JSON with ``id``, ``kind``, ``phase``, ``needs_model``, ``config``),
    a deterministic repr without memory addresses, immutability, the factory round trip
    (``factory(**config)`` rebuilds an equal step; built-in factories are found by name), parameter
    messages in the one format naming the factory, and the phase contract on a small knowledge
    base: the step runs in a recipe, returns what its phase says, and returns the same hits twice.

    Examples
    --------
    >>> from crux_nb.retrieval import retrieve
    >>> check_step(retrieve(limit=2))
    """
    _check_data_form(step)
    _check_frozen(step)
    factory = factory or _builtin_factory(step)
    if factory is not None:
        _check_round_trip(step, factory)
        _check_messages(step, factory)
    _check_phase_contract(step)


def _check_data_form(step: Any) -> None:
    data = step.to_dict()
    assert set(data) >= {"id", "kind", "phase", "needs_model", "config"}, f"to_dict() keys: {sorted(data)}"
    json.dumps(data)  # raises for anything that is not plain data
    assert isinstance(step.id, str) and step.id.strip(), f"step id must be a non-empty string: {step.id!r}"
    assert tuple(data["phase"]) == tuple(step.phase) and len(step.phase) == 2, f"phase: {step.phase!r}"
    assert all(p in step_types.PHASES for p in step.phase), f"phase must use {step_types.PHASES}: {step.phase!r}"
    assert data["config"] == step.config(), "to_dict()['config'] must be config()"
    assert repr(step) == repr(step) and "0x" not in repr(step), f"repr must be deterministic: {step!r}"


def _check_frozen(step: Any) -> None:
    try:
        setattr(step, "id", "changed")
    except (dataclasses.FrozenInstanceError, AttributeError):
        return
    raise AssertionError(f"{step!r} must be immutable (a frozen dataclass)")


def _builtin_factory(step: Any) -> Any:
    from . import retrieval

    if not getattr(step, "builtin", False) and getattr(step, "factory", None) != "custom_step":
        return None
    return getattr(retrieval, getattr(step, "factory", ""), None)


def _check_round_trip(step: Any, factory: Any) -> None:
    # config shows models and legs by name; the step's fields hold the objects themselves
    kwargs = {k: getattr(step, k, v) for k, v in step.config().items()}
    if "fn" in kwargs:
        kwargs.update(needs_model=step.needs_model, model=step.model)
    rebuilt = factory(**kwargs)
    assert rebuilt.to_dict() == step.to_dict(), f"{factory.__name__}(**config) gives {rebuilt!r}, not {step!r}"
    assert repr(rebuilt) == repr(step)


def _check_messages(step: Any, factory: Any) -> None:
    kwargs = {k: getattr(step, k, v) for k, v in step.config().items()}
    if "fn" in kwargs:
        return
    ints = [k for k, v in kwargs.items() if isinstance(v, int) and not isinstance(v, bool)]
    for name in ints + (["id"] if "id" in _parameters(factory) else []):
        try:
            factory(**{**kwargs, name: "not valid" if name != "id" else ""})
        except ParameterError as error:
            prefix = f"{factory.__name__}(): parameter '{name}' must be "
            assert str(error).startswith(prefix), f"message {str(error)!r} must start with {prefix!r}"
        else:
            raise AssertionError(f"{factory.__name__}({name}=invalid) must raise ParameterError")


def _parameters(factory: Any) -> set[str]:
    import inspect

    return set(inspect.signature(factory).parameters)


def _check_phase_contract(step: Any) -> None:
    from .knowledgebase import knowledge_base
    from .models import OfflineModel
    from .community.config import communities
    from .retrieval import retrieve

    kb = knowledge_base(id="conformance", communities=communities(model=OfflineModel()))
    for source_id, text in _CORPUS.items():
        kb.add_text(source_id, text)
    if step.kind == "global-search":
        kb.communities.prepare(progress=False)
    steps = {("queries", "hits"): [step], ("hits", "hits"): [retrieve(limit=3), step],
             ("queries", "queries"): [step, retrieve(limit=3)]}.get(tuple(step.phase))
    assert steps is not None, f"unknown phase {step.phase!r}"
    model = OfflineModel() if step.needs_model and step.model is None else None
    runs = [kb.recipe(steps=steps, id="check", model=model).retrieve_with_trace(_QUERY, admit=lambda e: True)
            for _ in range(2)]
    trace = runs[0].trace.step(step.id)
    assert trace is not None and trace.status == "success", f"{step.id} did not run: {trace}"
    if step.phase[1] == "hits":
        assert all(isinstance(h, (EvidenceHit, FindingHit)) for h in runs[0].hits), "hits must be hit types"
    assert_hits_equal(runs[0].hits, runs[1].hits)


def check_knowledge_model(model: Any) -> None:
    """Check a knowledge model: the protocol, a stable fingerprint, valid and deterministic task
    outputs on small inputs, and the one-repair rule (a call given ``repair=`` issues still returns
    valid output).

    Examples
    --------
    >>> from crux_nb.models import OfflineModel
    >>> check_knowledge_model(OfflineModel(max_findings=3))
    """
    from .models import KnowledgeModel, issued_ids_for, validate_output
    from .models.protocol import check_model

    check_model(model, owner="check_knowledge_model()")
    assert isinstance(model, KnowledgeModel)
    assert model.fingerprint == model.fingerprint and "0x" not in repr(model), "fingerprint and repr must be stable"
    for task, args in _task_inputs().items():
        first = getattr(model, task)(*args, repair=None)
        again = getattr(model, task)(*args, repair=None)
        assert first == again, f"{task} must be deterministic for equal input"
        issued = issued_ids_for(task, args)
        _, issues = validate_output(task, first, issued_ids=issued)
        assert not issues, f"{task} returned invalid output: {issues}"
        repaired = getattr(model, task)(*args, repair=[{"path": "$", "code": "check"}])
        _, issues = validate_output(task, repaired, issued_ids=issued)
        assert not issues, f"{task} with repair= returned invalid output: {issues}"


def _task_inputs() -> dict[str, tuple]:
    unit = {"community_id": "c1", "level": 0, "title": "Lumen launch", "summary": "Ada Park leads the launch.",
            "findings": [{"id": "c1:1", "statement": "The Lumen launch moved to May.", "evidence": ["chunk:plan.md:c0"]}]}
    community = {"community_id": "c1", "level": 0, "entities": [{"name": "Ada Park"}, {"name": "Lumen"}],
                 "chunks": [{"ref": "chunk:plan.md:c0", "text": _CORPUS["plan.md"]}], "children": []}
    chunks = [{"id": "chunk:plan.md:c0", "text": _CORPUS["plan.md"]}, {"id": "chunk:team.md:c0", "text": _CORPUS["team.md"]}]
    return {"extract": (chunks,), "write_report": (community,), "map_findings": (_QUERY, [unit]),
            "rate": (_QUERY, [unit])}
