"""Hostile and malformed input (issue 9), part 1: refs, the graph reader, step configs, recipes,
requests and view where-clauses; and the error contract itself.

The contract every property checks: a call either succeeds or raises a
:class:`crux_nb.errors.CruxError` whose ``code`` and ``hint`` are non-empty and
whose text prints; never a bare ``KeyError``/``TypeError``/... or a pandas or
pyarrow traceback; and a failed call leaves the knowledge base exactly as it was
(its immutable state object is the same one, its frames are equal). Read-only
calls leave the state untouched even when they succeed.

Documents, metadata and frames are in ``test_hostile_documents.py``; GraphRAG
folders in ``test_hostile_graphrag.py``. Hypothesis runs deterministically
(``derandomize=True``) under the ``hostile`` profile below; set
``CRUX_HOSTILE_EXAMPLES`` to scale every example budget (e.g. ``10`` for a long run).
"""

from __future__ import annotations

import datetime as dt
import inspect
import math
import os
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import crux_nb
import crux_nb.errors as errors_module
from crux_nb.errors import CruxError
from crux_nb.models import OfflineModel
from crux_nb.refs import ChunkRef, DocumentRef, EntityRef, ParentRef, as_ref, decode_ref, encode_ref
from crux_nb.retrieval import EvidenceHit, expand_relations, global_search, retrieve
from crux_nb.retrieval.custom import custom_step

# ------------------------------------------------------------------ settings
SCALE = float(os.environ.get("CRUX_HOSTILE_EXAMPLES", "1"))
settings.register_profile("hostile", max_examples=100, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                 HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
HOSTILE = settings.get_profile("hostile")


def examples(n: int) -> settings:
    """The hostile profile with ``n`` examples (scaled by ``CRUX_HOSTILE_EXAMPLES``)."""
    return settings(HOSTILE, max_examples=max(1, int(n * SCALE)))


# ------------------------------------------------------------------ the contract
def check_error(exc: CruxError) -> None:
    assert isinstance(exc.code, str) and exc.code.strip(), f"{type(exc).__name__} without a code: {exc!r}"
    assert isinstance(exc.hint, str) and exc.hint.strip(), f"{type(exc).__name__} without a hint: {exc!r}"
    str(exc).encode("utf-8")  # the text prints (user values are shown as escaped reprs)
    repr(exc)


def snapshot(kb):
    """The knowledge base's state object and a deep copy of its frames."""
    return kb.state, {name: frame.copy(deep=True) for name, frame in kb.frames().items()}


def assert_unchanged(kb, snap) -> None:
    """Same state object, and no frame changed in place (DataFrame.equals: fast and dtype-aware)."""
    state, frames = snap
    assert kb.state is state, "the knowledge base state changed"
    for name, frame in kb.frames().items():
        assert frame.equals(frames[name]) and list(frame.dtypes) == list(frames[name].dtypes), f"kb.{name} changed"


def attempt(call, kb=None, *, read_only: bool = False, deep: bool = False):
    """Run ``call()``: return ``(True, result)`` or ``(False, CruxError)``. Any other exception propagates
    (and fails the test). A failed call, and any read-only call, must leave ``kb`` with the same state object;
    ``deep`` also compares every frame (slow: the shared knowledge bases are instead compared once per test,
    see :func:`guarded`)."""
    snap = (snapshot(kb) if deep else (kb.state, None)) if kb is not None else None
    try:
        result = call()
    except CruxError as exc:
        check_error(exc)
        if kb is not None:
            assert_unchanged(kb, snap) if deep else _same_state(kb, snap)
        _event(f"rejected: {exc.code}")
        return False, exc
    if kb is not None and read_only:
        assert_unchanged(kb, snap) if deep else _same_state(kb, snap)
    _event("accepted")
    return True, result


def _event(text: str) -> None:
    """Count outcomes in hypothesis' statistics (``--hypothesis-show-statistics``); a no-op outside @given."""
    try:
        event(text)
    except Exception:
        pass


def _same_state(kb, snap) -> None:
    assert kb.state is snap[0], "the knowledge base state changed"


def guarded(kb):
    """Yield ``kb``, then check that nothing changed its frames in place (for fixtures shared by many calls)."""
    snap = snapshot(kb)
    yield kb
    assert_unchanged(kb, snap)


# ------------------------------------------------------------------ strategies
ODD_CHARS = ["\ud800", "\udfff", "\u200f", "\u202e", "\u0301", "\U0001F389", "\u200b", "\ufeff", "\x00", "\x1b",
             "\r", "\n", "\t", "\u2028", "\u0085", ":", "%", "%3A", "%3a", "%25", "%2", "/", "\\", "..", " ", "#"]
#: Strings with odd Unicode (lone surrogates, bidi marks, combining marks, emoji, zero-width) and ref syntax.
odd_text = st.lists(st.one_of(st.sampled_from(ODD_CHARS), st.characters(exclude_categories=())),
                    max_size=12).map("".join)


class Opaque:
    """An arbitrary user object."""


SPECIALS = [None, True, False, 0, -1, 1, 10**30, -10**30, 2**63, 2**64, 10**400, math.nan, math.inf, -math.inf,
            -0.0, 1.5, "", " ", "\ud800", "x", b"", b"\x00\xff", bytearray(b"x"), pd.NA, pd.NaT, np.nan,
            np.int64(3), np.float64("nan"), np.bool_(True), np.str_("x"), Decimal("1.5"), Decimal("nan"),
            dt.datetime(2020, 1, 1), dt.date(2020, 1, 1), dt.timedelta(days=1), 1j, Opaque(), Ellipsis, len, type,
            np.array([1, 2]), np.array([]), pd.Series([1, 2]), pd.DataFrame({"a": [1]}), range(3), frozenset({1}),
            {1, 2}, (), [], {}]
scalars = st.one_of(st.sampled_from(SPECIALS), st.integers(), st.floats(), st.text(max_size=8), odd_text,
                    st.binary(max_size=6))
#: Anything: scalars of every kind, nested in lists, tuples and dicts.
garbage = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                                                        st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                       max_leaves=6)


def param(*valid):
    """A parameter value: one of the valid values (often), else anything."""
    return st.one_of(st.sampled_from(valid), garbage) if valid else garbage


def make_kb():
    kb = crux_nb.knowledge_base(id="t")
    kb.add_text("a.md", "# Alpha\n\nRelease planning starts in March.\n\n## Beta\n\nLaunch in May with Bob.",
                metadata={"team": "platform", "n": 1, "tags": ["x"]})
    kb.add_text("b:c.md", "Bob writes the plans. Carol reviews the launch.", metadata={"team": "docs", "n": 2.5,
                                                                                     "flag": True})
    kb.add_entities(pd.DataFrame({"entity_id": ["bob", "carol"], "canonical_name": ["Bob", "Carol"],
                                  "aliases": [["Bobby"], []]}))
    kb.add_edges(pd.DataFrame({"from_ref": ["chunk:a.md:c0001", "chunk:b%3Ac.md:c0000", "entity:bob"],
                               "to_ref": ["entity:bob", "entity:bob", "entity:carol"],
                               "type": ["mentions", "mentions", "related"],
                               "evidence": [["chunk:a.md:c0001"], ["chunk:b%3Ac.md:c0000"], ["chunk:b%3Ac.md:c0000"]],
                               "direction": ["directed", "directed", "symmetric"]}))
    return kb


@pytest.fixture
def kb(shared_kb):
    yield from guarded(shared_kb)


@pytest.fixture(scope="module")
def shared_kb():
    """A small knowledge base shared by the read-only properties (each checks it is left unchanged)."""
    return make_kb()


REFS = ["chunk:a.md:c0000", "chunk:a.md:c0001", "chunk:b%3Ac.md:c0000", "chunk:b%3ac.md:c0000", "document:a.md",
        "parent:a.md:alpha", "entity:bob", "entity:nobody", "chunk:a.md", "chunk:a.md:c0000:x", "asset:x", "chunk::",
        "document:", "entity:%", "entity:%zz", "CHUNK:a.md:c0000", " chunk:a.md:c0000", "chunk:a.md:c0000\n", ":"]
ref_like = st.one_of(st.sampled_from(REFS),
                     st.builds(lambda k, rest: f"{k}:{rest}", st.sampled_from(["chunk", "document", "parent", "entity"]),
                               st.text(alphabet="ab:%3Ac25.md0", max_size=10)),
                     st.builds(ChunkRef, param("a.md", "b:c.md"), param("c0000", "c0001")),
                     st.builds(EntityRef, param("bob", "carol")), st.builds(DocumentRef, param("a.md")),
                     st.builds(ParentRef, param("a.md"), param("alpha")),
                     odd_text, garbage)


# ------------------------------------------------------------------ error classes
def _all_error_classes() -> list[type]:
    import crux_nb.models  # noqa: F401  (registers the model errors)
    import crux_nb.views  # noqa: F401

    seen, todo = [], [CruxError]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo += cls.__subclasses__()
    return seen


def _instantiate(cls: type) -> CruxError:
    params = [p for p in inspect.signature(cls.__init__).parameters.values()
              if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
              and p.default is p.empty]
    return cls(*["x"] * len(params))


def test_every_error_class_has_a_code_and_a_hint():
    classes = _all_error_classes()
    names = {c.__name__ for c in classes}
    assert {"ParameterError", "InputError", "RefError", "NotFoundError", "StorageError", "LeaseError",
            "RetrievalConfigError", "RetrievalRunError", "ModelError", "ValidationExhaustedError",
            "ViewWhereError"} <= names
    for cls in classes:
        exc = _instantiate(cls)
        check_error(exc)
        assert "Hint: " in str(exc), cls
        assert isinstance(cls.default_hint, str) and cls.default_hint.strip(), cls
    for name in errors_module.__all__:  # every class of crux_nb.errors says something of its own
        cls = getattr(errors_module, name)
        if cls not in (CruxError, errors_module.ValidationExhaustedError):
            assert "default_hint" in vars(cls), f"{name} has no default_hint of its own"


def test_explicit_hints_win_and_empty_hints_fall_back():
    assert CruxError("m", hint="do this").hint == "do this"
    assert CruxError("m", hint="").hint == CruxError.default_hint
    assert errors_module.RefError("m").hint == errors_module.RefError.default_hint
    assert "kb.recipe()" in errors_module.ParameterError("kb.recipe()", "concurrency", "an int", "x").hint


# ------------------------------------------------------------------ refs
KINDS = {"document": DocumentRef, "parent": ParentRef, "chunk": ChunkRef, "entity": EntityRef}


@examples(200)
@given(kind=st.sampled_from(sorted(KINDS)), a=st.one_of(odd_text, st.text()), b=st.one_of(odd_text, st.text()))
def test_refs_round_trip_any_strings(kind, a, b):
    cls = KINDS[kind]
    ref = cls(a) if kind in ("document", "entity") else cls(a, b)
    encoded = encode_ref(ref)
    assert encoded.split(":")[0] == kind and encoded.count(":") == len(ref.segments())
    back = decode_ref(encoded)
    assert back == ref and encode_ref(back) == encoded and str(back) == encoded
    assert as_ref(encoded) == ref


REF_TOKENS = ["chunk", "document", "parent", "entity", "asset", ":", ":", "%3a", "%3A", "%25", "%", "%2", "%zz", "a",
              "b.md", "", " ", "\ud800", "\u200f"]


@examples(200)
@given(text=st.one_of(st.lists(st.sampled_from(REF_TOKENS), max_size=8).map("".join), odd_text, st.text()))
@example("chunk:b%3ac.md:c%3a%25")
@example("entity:%3A%3a")
@example("parent:%25:%2")
def test_decode_arbitrary_strings(text):
    ref = decode_ref(text)
    ok, out = attempt(lambda: as_ref(text))
    assert ok == (ref is not None)
    if ref is not None:
        assert out == ref
        canonical = encode_ref(type(ref)(*ref.segments()))
        assert encode_ref(ref) == canonical, "equal refs must encode alike"
        assert decode_ref(canonical) == ref


@examples(100)
@given(value=garbage)
def test_refs_reject_garbage(value):
    assert decode_ref(value) is None or isinstance(value, str)
    attempt(lambda: encode_ref(value))
    for cls, n in ((ChunkRef, 2), (ParentRef, 2), (DocumentRef, 1), (EntityRef, 1)):
        ok, _ = attempt(lambda: encode_ref(cls(*[value] * n)))
        assert ok == isinstance(value, str)
    attempt(lambda: as_ref(value, kinds=("chunk",)))


# ------------------------------------------------------------------ the graph reader
#: Every special value, plus odd strings, for the exhaustive per-parameter grids below.
GRID = SPECIALS + ["\u202e", "\u200b\U0001F389", "../x", "chunk:a.md:c0000", ["chunk:a.md:c0000"], [None], [pd.NA],
                   [[1]], [{}], {"a": 1}, ("out",), [1, [2]]]


def grid(call, kb=None, **kwargs) -> int:
    """Call ``call(value)`` for every grid value under the contract; return how many ran."""
    for value in GRID:
        attempt(lambda: call(value), kb, **kwargs)
    return len(GRID)


def test_reader_every_parameter_with_every_special_value(kb):
    reader = kb.reader
    ref = "chunk:a.md:c0001"
    tried = 0
    for call in (lambda v: reader.neighbors(v), lambda v: reader.neighbors(ref, types=v),
                 lambda v: reader.neighbors(ref, direction=v), lambda v: reader.neighbors(ref, limit=v),
                 lambda v: reader.neighbors(ref, include_evidence=v), lambda v: reader.reach(v),
                 lambda v: reader.reach("entity:bob", depth=v), lambda v: reader.reach("entity:bob", types=v),
                 lambda v: reader.reach("entity:bob", direction=v), lambda v: reader.hydrate(v)):
        tried += grid(call, kb, read_only=True)
    assert tried >= 500


@examples(150)
@given(ref=ref_like, types=param(None, ["mentions"], ["sequence", "hierarchy"], ()), direction=param(None, "out", "in"),
       limit=param(None, 0, 1, 64, 2.7), evidence=param(False, True))
def test_reader_neighbors(kb, ref, types, direction, limit, evidence):
    reader = kb.reader
    ok, out = attempt(lambda: reader.neighbors(ref, types=types, direction=direction, limit=limit,
                                               include_evidence=evidence), kb, read_only=True)
    if ok:
        assert isinstance(out, list)
        for n in out:
            assert decode_ref(encode_ref(n.ref)) == n.ref and n.direction in ("out", "in")


@examples(120)
@given(ref=ref_like, depth=param(0, 1, 2, 10**9), types=param(None, ["related"], []), direction=param(None, "out", "in"))
def test_reader_reach(kb, ref, depth, types, direction):
    ok, out = attempt(lambda: kb.reader.reach(ref, depth=depth, types=types, direction=direction), kb,
                      read_only=True, deep=False)
    if ok:
        assert all(isinstance(k, str) and isinstance(v, int) and v >= 1 for k, v in out.items())


@examples(120)
@given(ref=ref_like)
def test_reader_hydrate(kb, ref):
    ok, hit = attempt(lambda: kb.reader.hydrate(ref), kb, read_only=True)
    if ok and hit is not None:
        assert isinstance(hit, EvidenceHit) and hit.chunk_id in set(kb.chunks["chunk_id"])


def test_reader_reads_lowercase_escapes_like_canonical_ones(kb):
    """'%3a' decodes like '%3A': the reader and hydration must find the same chunk either way."""
    upper, lower = "chunk:b%3Ac.md:c0000", "chunk:b%3ac.md:c0000"
    assert kb.reader.neighbors(lower) == kb.reader.neighbors(upper) != []
    assert kb.reader.hydrate(lower) == kb.reader.hydrate(upper) is not None
    assert str(decode_ref(lower)) == upper


# ------------------------------------------------------------------ step configs
@examples(100)
@given(limit=param(1, 5, 10**30, 3.0), legs=param(None))
def test_retrieve_config(kb, limit, legs):
    ok, step = attempt(lambda: retrieve(limit=limit, legs=legs))
    if ok:
        repr(step), step.to_dict()
        ok, hits = attempt(lambda: kb.recipe([step]).run("release planning"), kb, read_only=True)
        assert ok and len(hits) >= 1


def test_step_configs_every_parameter_with_every_special_value(kb):
    model = OfflineModel()
    calls = [lambda v: retrieve(limit=v), lambda v: retrieve(legs=v)]
    calls += [lambda v, name=name: expand_relations(**{name: v}) for name in
              ("types", "direction", "depth", "limit", "seeds", "entity_hops")]
    calls += [lambda v: global_search(model=v)]
    calls += [lambda v, name=name: global_search(model=model, **{name: v}) for name in ("scan", "detail", "limit")]
    calls += [lambda v: kb.recipe(v), lambda v: kb.recipe([v]), lambda v: kb.recipe([retrieve(), v]),
              lambda v: kb.recipe(id=v), lambda v: kb.recipe(model=v), lambda v: kb.recipe(concurrency=v),
              lambda v: kb.recipe(executor=v)]
    tried = sum(grid(call, kb, read_only=True) for call in calls)
    assert tried >= 1000


def test_requests_every_parameter_with_every_special_value(kb):
    recipe = kb.recipe([retrieve(), expand_relations()])
    calls = [lambda v: recipe.run(v), lambda v: recipe.run("plan", filter=v), lambda v: recipe.run("plan", limit=v),
             lambda v: recipe.run("plan", admit=v), lambda v: recipe.run("plan", filter={"team": v}),
             lambda v: recipe.run("plan", filter={"tags": v}),
             lambda v: recipe.run("plan", filter={v: 1}) if _hashable(v) else None]
    tried = sum(grid(call, kb, read_only=True) for call in calls)
    assert tried >= 300


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


EXPAND_VALID = {"types": (None, ["mentions", "related"], ()), "direction": ("out", "in", "both"),
                "depth": (0, 1, 2, 10**30), "limit": (0, 1, 20, 10**30), "seeds": (("hits",), ["query", "hits"], ()),
                "entity_hops": ("free", "counted")}


@examples(150)
@given(data=st.data())
def test_expand_relations_config(kb, data):
    chosen = data.draw(st.lists(st.sampled_from(sorted(EXPAND_VALID)), unique=True, max_size=3))
    kwargs = {name: data.draw(param(*EXPAND_VALID[name]), label=name) for name in chosen}
    ok, step = attempt(lambda: expand_relations(**kwargs))
    if ok:
        repr(step), step.to_dict()
        ok, hits = attempt(lambda: kb.recipe([retrieve(limit=2), step]).run("Bob launch"), kb, read_only=True,
                           deep=False)
        assert ok, hits


@examples(100)
@given(model=st.one_of(st.just(OfflineModel()), garbage), scan=param("all", "adaptive"),
       detail=param("auto", "overview", "detailed"), limit=param(1, 20, 10**30))
def test_global_search_config(kb, model, scan, detail, limit):
    ok, step = attempt(lambda: global_search(model=model, scan=scan, detail=detail, limit=limit))
    if ok:
        repr(step), step.to_dict()
        ok, err = attempt(lambda: kb.recipe([step]), kb, read_only=True)  # no communities configured
        assert not ok and err.code == "missing_model"


def _steps():
    return st.sampled_from([retrieve(), retrieve(limit=1), expand_relations(), expand_relations(depth=3),
                            global_search(model=OfflineModel()),
                            custom_step(lambda i, c: list(i.hits), id="keep"),
                            custom_step(lambda i, c: 1 / 0, id="boom"),
                            custom_step(lambda i, c: None, id="nothing"),
                            custom_step(lambda i, c: [object()], id="junk"),
                            custom_step(lambda i, c: list(i.queries), id="queries", phase=("queries", "queries")),
                            custom_step(lambda i, c: [], id="retrieve")])


@examples(150)
@given(steps=st.one_of(st.none(), st.lists(st.one_of(_steps(), garbage), max_size=3), st.lists(_steps(), max_size=3),
                       garbage),
       recipe_id=param(None, "r", "t", "", " ", "\ud800"), model=st.one_of(st.none(), st.just(OfflineModel()), garbage),
       concurrency=param(4, 1, 10**30), executor=param(None))
def test_recipe_construction_and_run(kb, steps, recipe_id, model, concurrency, executor):
    ok, recipe = attempt(lambda: kb.recipe(steps, id=recipe_id, model=model, concurrency=concurrency,
                                           executor=executor), kb, read_only=True)
    if ok:
        repr(recipe), recipe.to_dict()
        attempt(lambda: recipe.run("Bob launch planning"), kb, read_only=True)


@examples(200)
@given(query=st.one_of(st.sampled_from(["release planning", "Bob", "   ", "", "\x00", "x" * 100_000]), odd_text, garbage),
       filter=st.one_of(st.none(), garbage,
                        st.dictionaries(st.one_of(st.sampled_from(["team", "n", "flag", "tags", "source_id", "chunk_id",
                                                                   "namespace", "", "\ud800"]), st.text(max_size=4)),
                                        garbage, max_size=3)),
       limit=param(None, 1, 3, 10**30), admit=param(None, lambda preflight: True))
def test_requests(kb, query, filter, limit, admit):
    recipe = kb.recipe([retrieve(), expand_relations()])
    ok, result = attempt(lambda: recipe.retrieve_with_trace(query, filter=filter, limit=limit, admit=admit), kb,
                         read_only=True, deep=False)
    if ok:
        assert limit is None or len(result.hits) <= limit
        result.trace.to_dict() if hasattr(result.trace, "to_dict") else repr(result.trace)


# ------------------------------------------------------------------ views
FIELDS = ["team", "n", "flag", "tags", "any", "missing", "", "\ud800"]
VALID_WHERE = ["platform", "docs", 1, 2.5, True, None, ["platform", "docs"], (1, 2.5), [], "nobody"]
where_values = st.one_of(st.sampled_from(VALID_WHERE), st.sampled_from(VALID_WHERE), garbage)
clauses = st.dictionaries(st.one_of(st.sampled_from(["team", "n", "flag"]), st.sampled_from(FIELDS),
                                    st.text(max_size=4)), where_values, max_size=3)
likely = st.dictionaries(st.sampled_from(["team", "n", "flag"]), st.sampled_from(VALID_WHERE), min_size=1, max_size=2)
wheres = st.one_of(likely, likely, clauses,
                   st.fixed_dictionaries({"any": st.one_of(st.lists(st.one_of(likely, clauses, garbage), max_size=3),
                                                           garbage)}),
                   garbage)


@examples(200)
@given(where=wheres, view_id=st.one_of(st.just("v"), st.just("team-view"), garbage))
def test_view_where(views_kb, where, view_id):
    kb = views_kb
    ok, view = attempt(lambda: kb.view(id=view_id, where=where), kb, read_only=True)
    if ok:
        members = view.members()
        assert members <= set(kb.documents["source_id"])
        ok, hits = attempt(lambda: view.recipe().run("Bob plans launch"), kb, read_only=True)
        assert ok and {h.source.id for h in hits} <= members
        assert view.at(view.resolve().revision).members() == members
    kb._views.clear()


def test_views_every_parameter_with_every_special_value(views_kb):
    kb = views_kb
    calls = [lambda v: kb.view(id=v, where={"team": "docs"}), lambda v: kb.view(id="g", where=v),
             lambda v: kb.view(id="g", where={"team": v}), lambda v: kb.view(id="g", where={"n": v}),
             lambda v: kb.view(id="g", where={"any": v}), lambda v: kb.view(id="g", where={"any": [v]}),
             lambda v: kb.view(id="g", where={"any": [{"team": v}]}),
             lambda v: kb.view(id="g", where={v: "docs"}) if _hashable(v) else None]
    tried = 0
    for call in calls:
        for value in GRID:
            ok, view = attempt(lambda: call(value), kb, read_only=True)
            if ok and view is not None:
                attempt(lambda: view.recipe().run("plan"), kb, read_only=True)
            kb._views.clear()
            tried += 1
    assert tried >= 400


@pytest.fixture
def views_kb():
    """A knowledge base of its own (views register on it), checked unchanged after the test."""
    yield from guarded(make_kb())


def test_view_registration_conflict_keeps_the_first():
    kb = make_kb()
    kb.view(id="v", where={"team": "docs"})
    ok, err = attempt(lambda: kb.view(id="v", where={"team": "platform"}), kb)
    assert not ok and err.code == "view_conflict"
    assert kb.view(id="v", where={"team": ["docs"]}).members() == {"b:c.md"}


def test_knowledge_base_every_parameter_with_every_special_value():
    calls = [lambda v: crux_nb.knowledge_base(id=v), lambda v: crux_nb.knowledge_base(namespace=v),
             lambda v: crux_nb.knowledge_base(chunk_size=v), lambda v: crux_nb.knowledge_base(communities=v),
             lambda v: crux_nb.communities(model=v), lambda v: crux_nb.communities(model=OfflineModel(), id=v),
             lambda v: crux_nb.communities(model=OfflineModel(), resolution=v),
             lambda v: crux_nb.communities(model=OfflineModel(), seed=v),
             lambda v: crux_nb.communities(model=OfflineModel(), max_children=v),
             lambda v: crux_nb.communities(model=OfflineModel(), incremental_engine=v)]
    assert sum(grid(call) for call in calls) >= 500


def test_clustering_seams_every_parameter_with_every_special_value():
    from crux_nb.community import CommunityGraph, cluster_graph, community_graph

    g = CommunityGraph(nodes=("chunk:a:1", "chunk:a:2", "entity:x"), links=((0, 2, 1.0), (1, 2, 1.0)),
                       sizes=(10, 10, 3), chunk_count=2)
    kb = make_kb()
    calls = [lambda v: cluster_graph(v), lambda v: cluster_graph(g, resolution=v), lambda v: cluster_graph(g, seed=v),
             lambda v: cluster_graph(g, budget=v), lambda v: cluster_graph(g, max_children=v),
             lambda v: cluster_graph(g, previous=v), lambda v: cluster_graph(g, engine=v),
             lambda v: community_graph(v), lambda v: community_graph(kb, sources=v)]
    assert sum(grid(call) for call in calls) >= 100
