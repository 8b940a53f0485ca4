"""Knowledge refs: the four kinds and upstream's string codec.

A ref encodes as ``<kind>:<segment>[:<segment>]`` where every segment escapes
``%`` as ``%25`` first and then ``:`` as ``%3A``::

    >>> from crux_nb.refs import ChunkRef, decode_ref, encode_ref
    >>> encode_ref(ChunkRef("guide:v1", "intro%1"))
    'chunk:guide%3Av1:intro%251'
    >>> decode_ref("chunk:guide%3Av1:intro%251")
    ChunkRef(source_id='guide:v1', chunk_id='intro%1')
    >>> decode_ref("asset:x") is None
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Union

from .errors import RefError, short_repr

__all__ = [
    "DocumentRef",
    "ParentRef",
    "ChunkRef",
    "EntityRef",
    "KnowledgeRef",
    "RefKind",
    "REF_KINDS",
    "encode_ref",
    "decode_ref",
    "as_ref",
    "is_ref_kind",
    "is_ref",
]

RefKind = Literal["document", "parent", "chunk", "entity"]
REF_KINDS: tuple[str, ...] = ("document", "parent", "chunk", "entity")
_SEGMENTS = {"document": 1, "parent": 2, "chunk": 2, "entity": 1}
_BAD_ESCAPE = re.compile(r"%(?!25|3[aA])")


class _Ref:
    kind: str

    def __str__(self) -> str:
        return encode_ref(self)

    def segments(self) -> tuple[str, ...]:
        raise NotImplementedError

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, _Ref):
            return NotImplemented
        return encode_ref(self) < encode_ref(other)


@dataclass(frozen=True)
class DocumentRef(_Ref):
    """A source document.

    >>> str(DocumentRef("notes/plan.md")), DocumentRef("notes/plan.md").segments()
    ('document:notes/plan.md', ('notes/plan.md',))
    """

    source_id: str

    @property
    def kind(self) -> str:
        return "document"

    def segments(self) -> tuple[str, ...]:
        """The ids after the kind, ``(source_id,)``.

        >>> DocumentRef("notes/plan.md").segments()
        ('notes/plan.md',)
        """
        return (self.source_id,)


@dataclass(frozen=True)
class ParentRef(_Ref):
    """A section (Markdown heading) of a source.

    >>> str(ParentRef("plan.md", "p0001")), ParentRef("plan.md", "p0001").segments()
    ('parent:plan.md:p0001', ('plan.md', 'p0001'))
    """

    source_id: str
    parent_id: str

    @property
    def kind(self) -> str:
        return "parent"

    def segments(self) -> tuple[str, ...]:
        """The ids after the kind, ``(source_id, parent_id)``.

        >>> ParentRef("plan.md", "p0001").segments()
        ('plan.md', 'p0001')
        """
        return (self.source_id, self.parent_id)


@dataclass(frozen=True)
class ChunkRef(_Ref):
    """A chunk of a source; a colon in an id is escaped in the encoding.

    >>> str(ChunkRef("a:b.md", "c0000")), ChunkRef("a:b.md", "c0000").segments()
    ('chunk:a%3Ab.md:c0000', ('a:b.md', 'c0000'))
    """

    source_id: str
    chunk_id: str

    @property
    def kind(self) -> str:
        return "chunk"

    def segments(self) -> tuple[str, ...]:
        """The ids after the kind, ``(source_id, chunk_id)``, unescaped.

        >>> ChunkRef("a:b.md", "c0000").segments()
        ('a:b.md', 'c0000')
        """
        return (self.source_id, self.chunk_id)


@dataclass(frozen=True)
class EntityRef(_Ref):
    """An entity.

    >>> str(EntityRef("ada-lovelace")), EntityRef("ada-lovelace").segments()
    ('entity:ada-lovelace', ('ada-lovelace',))
    """

    entity_id: str

    @property
    def kind(self) -> str:
        return "entity"

    def segments(self) -> tuple[str, ...]:
        """The ids after the kind, ``(entity_id,)``.

        >>> EntityRef("ada-lovelace").segments()
        ('ada-lovelace',)
        """
        return (self.entity_id,)


KnowledgeRef = Union[DocumentRef, ParentRef, ChunkRef, EntityRef]
_CLASSES = {"document": DocumentRef, "parent": ParentRef, "chunk": ChunkRef, "entity": EntityRef}


def is_ref_kind(value: object) -> bool:
    """True only for the four kind names."""
    return isinstance(value, str) and value in _SEGMENTS


def _escape(segment: str) -> str:
    if "%" not in segment and ":" not in segment:
        return segment
    return segment.replace("%", "%25").replace(":", "%3A")


def _unescape(segment: str) -> str | None:
    if "%" not in segment:
        return segment
    if _BAD_ESCAPE.search(segment):
        return None
    return re.sub(r"%(25|3[aA])", lambda m: "%" if m.group(1) == "25" else ":", segment)


def encode_ref(ref: KnowledgeRef) -> str:
    """The encoded string of ``ref`` (``chunk:<source>:<chunk>`` and so on).

    >>> encode_ref(ChunkRef("plan.md", "c0002"))
    'chunk:plan.md:c0002'
    """
    cached = getattr(ref, "__dict__", {}).get("_encoded")
    if cached is not None:
        return cached
    if not isinstance(ref, _Ref):
        raise RefError(f"encode_ref() needs a knowledge ref; got {type(ref).__name__}.",
                       hint="build one with DocumentRef, ParentRef, ChunkRef or EntityRef.")
    for segment in ref.segments():
        if not isinstance(segment, str):
            raise RefError(f"{ref.kind} ref segments must be strings; got {type(segment).__name__}.",
                           hint="source, section, chunk and entity ids are strings; convert other values with str().")
    encoded = ":".join((ref.kind, *(_escape(s) for s in ref.segments())))
    object.__setattr__(ref, "_encoded", encoded)  # refs are immutable: encode once
    return encoded


def decode_ref(text: object) -> KnowledgeRef | None:
    """Parse an encoded ref; ``None`` for anything that is not a valid encoding.

    >>> decode_ref("chunk:a%3Ab.md:c0000")
    ChunkRef(source_id='a:b.md', chunk_id='c0000')
    >>> decode_ref("chunk:only-one-segment") is None
    True
    """
    if not isinstance(text, str):
        return None
    parts = text.split(":")
    kind = parts[0]
    if kind not in _SEGMENTS or len(parts) != _SEGMENTS[kind] + 1:
        return None
    segments = [_unescape(p) for p in parts[1:]]
    if any(s is None for s in segments):
        return None
    ref = _CLASSES[kind](*segments)
    # cache the canonical encoding: a lowercase escape ('%3a') decodes too, but equal refs encode alike
    canonical = text if "%" not in text else ":".join((kind, *(_escape(s) for s in segments)))
    object.__setattr__(ref, "_encoded", canonical)
    return ref


def as_ref(value: object, *, kinds: tuple[str, ...] = REF_KINDS, what: str = "ref") -> KnowledgeRef:
    """Accept a ref or its encoded string; raise :class:`RefError` otherwise."""
    ref = value if isinstance(value, _Ref) else decode_ref(value)
    if ref is None:
        raise RefError(
            f"{what} {short_repr(value)} is not a valid knowledge ref.",
            hint="use an encoded ref such as 'chunk:<source_id>:<chunk_id>' or a ref object from crux_nb.refs.",
        )
    if ref.kind not in kinds:
        raise RefError(f"{what} {encode_ref(ref)!r} must be a {' or '.join(kinds)} ref; got a {ref.kind} ref.")
    return ref


def is_ref(value: object) -> bool:
    """True for the four ref classes (not for encoded strings)."""
    return isinstance(value, _Ref)
