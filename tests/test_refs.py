import pytest
from hypothesis import given
from hypothesis import strategies as st

from crux_nb.errors import RefError
from crux_nb.refs import ChunkRef, DocumentRef, EntityRef, ParentRef, as_ref, decode_ref, encode_ref, is_ref_kind

segments = st.text(min_size=0, max_size=20)
refs = st.one_of(
    st.builds(DocumentRef, segments),
    st.builds(ParentRef, segments, segments),
    st.builds(ChunkRef, segments, segments),
    st.builds(EntityRef, segments),
)


def test_upstream_example_and_kinds():
    assert encode_ref(ChunkRef("guide:v1", "intro%1")) == "chunk:guide%3Av1:intro%251"
    assert decode_ref("chunk:guide%3Av1:intro%251") == ChunkRef("guide:v1", "intro%1")
    assert str(ParentRef("a", "b")) == "parent:a:b"
    assert EntityRef("x").kind == "entity" and DocumentRef("d").kind == "document"
    assert [is_ref_kind(k) for k in ("document", "parent", "chunk", "entity", "asset", 3)] == [True] * 4 + [False] * 2


@pytest.mark.parametrize("text", [
    "asset:x", "chunk:a", "chunk:a:b:c", "document", "entity:a:b", "parent:a", "", "chunk:a%2:b", "chunk:a%zz:b",
    "document:%", "Document:a", "entity:%3",
])
def test_invalid_encodings_decode_to_none(text):
    assert decode_ref(text) is None


def test_escapes_are_case_insensitive_on_decode():
    assert decode_ref("entity:a%3ab%25") == EntityRef("a:b%")


def test_non_strings_decode_to_none():
    assert decode_ref(None) is None and decode_ref(3) is None and decode_ref(["chunk", "a", "b"]) is None


@given(refs)
def test_round_trip(ref):
    assert decode_ref(encode_ref(ref)) == ref


@given(st.text(max_size=40))
def test_decode_never_raises_and_round_trips_when_valid(text):
    ref = decode_ref(text)
    if ref is not None:
        assert decode_ref(encode_ref(ref)) == ref


def test_as_ref_errors_name_the_value():
    with pytest.raises(RefError, match="not a valid knowledge ref") as info:
        as_ref("nope")
    assert info.value.code == "invalid_ref" and info.value.hint
    with pytest.raises(RefError, match="must be a chunk ref"):
        as_ref("entity:x", kinds=("chunk",))
    assert as_ref(EntityRef("x")) == EntityRef("x")


def test_refs_are_hashable_ordered_and_frozen():
    a, b = ChunkRef("s", "a"), ChunkRef("s", "b")
    assert len({a, ChunkRef("s", "a"), b}) == 2
    assert sorted([b, a]) == [a, b]
    with pytest.raises(AttributeError):
        a.chunk_id = "z"
