"""Turning one source text into a document row, section (parent) rows and chunk rows.

Markdown headings become parents (every media type but plain text and PDF is read as Markdown: the readers
of :mod:`crux_nb.store.readers` convert HTML, reStructuredText and notebooks to it); a PDF's pages are cut
apart at page breaks, each chunk's metadata gets its 1-based ``page``; text before the first heading gives
parentless chunks. Sections are cut into chunks of at most ``chunk_size``
characters, at paragraph, then sentence, then character boundaries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .._hashing import stable_hash
from ..errors import InputError, ParameterError
from ..refs import ChunkRef, encode_ref
from ..schema import frozen_metadata

#: A chunk may never exceed the community report budget.
MAX_CHUNK_SIZE = 24_000
DEFAULT_CHUNK_SIZE = 1_200
MIN_CHUNK_SIZE = 50

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SCALAR_INT = re.compile(r"^-?\d+$")
_SCALAR_FLOAT = re.compile(r"^-?\d+\.\d+$")
#: media types whose text is cut as it is (no headings); a paged type's pages are joined by PAGE_BREAK
PLAIN_TYPES = frozenset({"text/plain", "application/pdf"})
PAGED_TYPES = frozenset({"application/pdf"})
PAGE_BREAK = "\f"


@dataclass(frozen=True)
class Section:
    title: str | None
    heading_level: int
    text: str


@dataclass(frozen=True)
class SourceRows:
    """Rows for one source, ready to become frame rows."""

    document: dict[str, Any]
    parents: list[dict[str, Any]]
    chunks: list[dict[str, Any]]


def check_chunk_size(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_CHUNK_SIZE <= value <= MAX_CHUNK_SIZE:
        raise ParameterError("knowledge_base()", "chunk_size",
                             f"an integer from {MIN_CHUNK_SIZE} to {MAX_CHUNK_SIZE}", value)
    return value


def parse_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split ``---``-fenced ``key: value`` front matter off a Markdown text."""
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        return {}, text
    meta: dict[str, Any] = {}
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            return {}, text  # not front matter we understand: keep the text whole
        meta[key.strip()] = _scalar(value.strip())
    return meta, "\n".join(lines[end + 1 :])


def _scalar(value: str) -> Any:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if _SCALAR_INT.match(value):
        return int(value)
    if _SCALAR_FLOAT.match(value):
        return float(value)
    return value


def split_sections(text: str, *, markdown: bool) -> list[Section]:
    """Cut a text at Markdown headings (outside code fences)."""
    if not markdown:
        return [Section(None, 0, text)]
    sections: list[Section] = []
    title, level, buf = None, 0, []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line.strip()):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            sections.append(Section(title, level, "\n".join(buf)))
            title, level, buf = match.group(2).strip(), len(match.group(1)), [line]
        else:
            buf.append(line)
    sections.append(Section(title, level, "\n".join(buf)))
    return [s for s in sections if s.title is not None or s.text.strip()]


def pack(text: str, size: int) -> list[str]:
    """Pack paragraphs (then sentences, then characters) into pieces of at most ``size``."""
    pieces: list[str] = []
    for para in re.split(r"\n\s*\n", text.strip()):
        para = para.strip()
        if para:
            pieces.extend(_split_long(para, size))
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        candidate = f"{current}\n\n{piece}" if current else piece
        if len(candidate) <= size:
            current = candidate
        else:
            if current:
                chunks.append(current)
            current = piece
    if current:
        chunks.append(current)
    return chunks


def _split_long(para: str, size: int) -> list[str]:
    if len(para) <= size:
        return [para]
    out: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(para):
        while len(sentence) > size:  # one sentence longer than a chunk: cut it
            if current:
                out.append(current)
                current = ""
            out.append(sentence[:size])
            sentence = sentence[size:]
        candidate = f"{current} {sentence}" if current else sentence
        if len(candidate) <= size:
            current = candidate
        else:
            out.append(current)
            current = sentence
    if current:
        out.append(current)
    return out


def _slug(title: str) -> str:
    slug = re.sub(r"[^\w]+", "-", title.lower(), flags=re.UNICODE).strip("-")
    return slug[:60] or "section"


def source_rows(source_id: str, text: str, *, metadata: dict[str, Any], media_type: str,
                chunk_size: int, path: str | None = None) -> SourceRows:
    """Build the rows of one source; ``text`` must already be validated."""
    if media_type in PAGED_TYPES:
        pages = [(Section(None, 0, page), frozen_metadata({**metadata, "page": n}))
                 for n, page in enumerate(text.split(PAGE_BREAK), start=1)]
    else:
        pages = [(s, metadata) for s in split_sections(text, markdown=media_type not in PLAIN_TYPES)]
    parents: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []
    used: dict[str, int] = {}
    for section, chunk_metadata in pages:
        parent_id = None
        if section.title is not None:
            base = _slug(section.title)
            used[base] = used.get(base, 0) + 1
            parent_id = base if used[base] == 1 else f"{base}-{used[base]}"
            parents.append({"source_id": source_id, "parent_id": parent_id, "ordinal": len(parents),
                            "title": section.title, "heading_level": section.heading_level,
                            "metadata": metadata})
        for content in pack(section.text, chunk_size):
            ordinal = len(chunks)
            chunk_id = f"c{ordinal:04d}"
            chunks.append({"ref": encode_ref(ChunkRef(source_id, chunk_id)), "source_id": source_id,
                           "chunk_id": chunk_id, "parent_id": parent_id, "ordinal": ordinal,
                           "content": content, "n_chars": len(content), "metadata": chunk_metadata})
    if not chunks:
        raise InputError(f"source {source_id!r} has no text to index (only headings or blank lines).",
                         hint="pass a text with at least one non-blank line of content.")
    title = metadata.get("title") if isinstance(metadata.get("title"), str) else None
    if title is None:
        title = parents[0]["title"] if parents else source_id
    document = {"source_id": source_id, "title": title, "path": path, "media_type": media_type,
                "content_hash": stable_hash({"text": text, "metadata": metadata}),
                "n_chunks": len(chunks), "n_chars": len(text), "metadata": metadata}
    return SourceRows(document, parents, chunks)
