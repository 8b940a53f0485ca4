"""Typed views: a named, validated metadata predicate over the sources of a knowledge base.

``where`` is one clause (field → scalar, or a list of scalars meaning IN; all
fields must match) or ``{"any": [clause, ...]}`` (any clause matches). Fields
are the scalar metadata fields the knowledge base's documents carry. Errors are
:class:`ViewWhereError` with upstream's codes: ``invalid_shape``, ``empty_any``,
``empty_clause``, ``unknown_field``, ``non_scalar_field``, ``non_scalar_value``,
``invalid_value``.

A view's *revision* is a content hash of its members (source id and content
hash, sorted); ``view.at(revision)`` pins one, and every read of a pinned view
first checks that each member is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._hashing import canonical_json, stable_hash
from .errors import CruxError, InputError
from .retrieval.filters import is_scalar, same

__all__ = ["View", "ViewRevision", "ViewWhereError", "normalise_where"]


class ViewWhereError(InputError):
    """A view's ``where`` clause is invalid; ``code`` says how."""

    default_code = "invalid_shape"
    default_hint = ("use {'field': value}, {'field': [value, ...]} (any of) or {'any': [clause, ...]}, over scalar "
                    "metadata fields of the knowledge base's documents (kb.documents['metadata']).")


@dataclass(frozen=True)
class ViewRevision:
    view_id: str
    revision: str
    members: tuple[str, ...]  # source ids, sorted

    def _repr_html_(self) -> str:
        from .display.html import view_revision_html

        return view_revision_html(self)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


def field_kinds(documents: Any) -> dict[str, set[str]]:
    """Observed value kinds per metadata field (``non-scalar`` for lists and mappings)."""
    kinds: dict[str, set[str]] = {}
    for meta in documents["metadata"]:
        for key, value in meta.items():
            kinds.setdefault(key, set()).add(_kind(value) if is_scalar(value) else "non-scalar")
    return kinds


def normalise_where(where: Any, kinds: dict[str, set[str]]) -> dict[str, Any]:
    """Validate and normalise (sorted fields and values, duplicates removed)."""
    if not isinstance(where, Mapping):
        raise ViewWhereError(f"where must be a mapping; got {type(where).__name__}.", code="invalid_shape",
                             hint="use {'team': 'platform'} or {'any': [{...}, {...}]}.")
    if "any" in where:
        if len(where) != 1:
            raise ViewWhereError("where with 'any' must have no other keys.", code="invalid_shape")
        clauses = where["any"]
        if isinstance(clauses, (str, bytes)) or not hasattr(clauses, "__iter__"):
            raise ViewWhereError("where['any'] must be a list of clauses.", code="invalid_shape")
        clauses = [_clause(c, kinds) for c in clauses]
        if not clauses:
            raise ViewWhereError("where['any'] is empty.", code="empty_any")
        unique = sorted({canonical_json(c): c for c in clauses}.items())
        return {"any": [c for _, c in unique]}
    return _clause(where, kinds)


def _clause(clause: Any, kinds: dict[str, set[str]]) -> dict[str, Any]:
    if not isinstance(clause, Mapping):
        raise ViewWhereError(f"a where clause must be a mapping; got {type(clause).__name__}.", code="invalid_shape")
    if not clause:
        raise ViewWhereError("a where clause is empty.", code="empty_clause")
    out: dict[str, Any] = {}
    for field in sorted(clause, key=str):
        if not isinstance(field, str) or field not in kinds:
            raise ViewWhereError(f"field {field!r} is not a metadata field of this knowledge base.", code="unknown_field",
                                 hint=f"known fields: {', '.join(sorted(kinds)) or '(none)'}.")
        if "non-scalar" in kinds[field]:
            raise ViewWhereError(f"field {field!r} holds lists or mappings; views filter scalar fields only.",
                                 code="non_scalar_field")
        value = clause[field]
        values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
        for v in values:
            if not is_scalar(v):
                raise ViewWhereError(f"where[{field!r}] holds {v!r}; values must be scalars or lists of scalars.",
                                     code="non_scalar_value")
            if _kind(v) not in kinds[field] and _kind(v) != "null":
                raise ViewWhereError(f"where[{field!r}] = {v!r} is a {_kind(v)}, but {field!r} holds "
                                     f"{'/'.join(sorted(kinds[field]))} values.", code="invalid_value")
        unique = sorted({canonical_json(v): v for v in values}.items())
        out[field] = [v for _, v in unique]
    return out


def matches(meta: Mapping[str, Any], where: dict[str, Any]) -> bool:
    if "any" in where:
        return any(matches(meta, clause) for clause in where["any"])
    for field, values in where.items():
        if field not in meta or not any(same(meta[field], v) for v in values):
            return False
    return True


class View:
    """A typed view of a knowledge base (``kb.view(id=..., where=...)``): the sources whose metadata match.

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "The EU launch moved to May.", metadata={"region": "eu"})
    >>> kb.add_text("b.md", "The US launch stays in March.", metadata={"region": "us"})
    >>> eu = kb.view(id="eu", where={"region": "eu"})
    >>> eu
    View(id='eu', where={'region': ['eu']})
    >>> [str(h.ref) for h in eu.recipe().retrieve("launch")]
    ['chunk:a.md:c0000']
    """

    def __init__(self, kb: Any, id: str, where: dict[str, Any], *, pinned: str | None = None):
        self.kb, self.id, self.where, self.pinned = kb, id, where, pinned
        self._communities = None

    def _members(self, state: Any) -> list[tuple[str, str]]:
        docs = state.documents
        return sorted((s, h) for s, h, m in zip(docs["source_id"], docs["content_hash"], docs["metadata"])
                      if matches(m, self.where))

    def resolve(self) -> ViewRevision:
        """The current revision: a content hash of the members; recorded so it can be pinned later.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Alpha.", metadata={"team": "x"})
        >>> kb.view(id="x", where={"team": "x"}).resolve()
        ViewRevision(view_id='x', revision='vr-...', members=('a.md',))
        """
        state = self.kb.state
        if self.pinned is not None:
            return self._replay(state)
        members = self._members(state)
        revision = "vr-" + stable_hash({"view": self.id, "members": members})
        self.kb.view_revisions.setdefault((self.id, revision), tuple(members))
        return ViewRevision(self.id, revision, tuple(s for s, _ in members))

    def _replay(self, state: Any) -> ViewRevision:
        recorded = self.kb.view_revisions.get((self.id, self.pinned))
        if recorded is None:
            raise CruxError(f'View "{self.id}" has no revision "{self.pinned}".', code="unknown_revision",
                            hint="use a revision returned by view.resolve().")
        current = dict(zip(state.documents["source_id"], state.documents["content_hash"]))
        for source_id, content_hash in recorded:
            if current.get(source_id) != content_hash:
                raise CruxError(f'View "{self.id}" revision "{self.pinned}" is not exactly replayable; source '
                                f'"{source_id}" is missing or has changed.', code="revision_not_replayable")
        return ViewRevision(self.id, self.pinned, tuple(s for s, _ in recorded))

    def at(self, revision: str) -> View:
        """This view pinned to ``revision`` (checked on every read): a changed member makes it fail loudly.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Alpha.", metadata={"team": "x"})
        >>> view = kb.view(id="x", where={"team": "x"})
        >>> pinned = view.at(view.resolve().revision)
        >>> kb.add_text("a.md", "Alpha, changed.", metadata={"team": "x"})
        >>> pinned.members()
        Traceback (most recent call last):
        ...
        crux_nb.errors.CruxError: View "x" revision "vr-..." is not exactly replayable; source "a.md" is missing or has changed. ...
        """
        return View(self.kb, self.id, self.where, pinned=revision)

    def members(self) -> set[str]:
        """The source ids of the current (or pinned) revision.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Alpha.", metadata={"team": "x"})
        >>> kb.view(id="x", where={"team": "x"}).members()
        {'a.md'}
        """
        return set(self.resolve().members)

    @property
    def communities(self):
        """Communities of this view's current revision (each revision is its own materialisation)."""
        from .community.restore import ModelRequired
        from .community.surface import CommunitySurface

        if isinstance(self.kb.communities, ModelRequired):  # opened without its model: the same answer here
            return self.kb.communities
        config = self.kb.communities.config
        revision = self.resolve().revision
        return CommunitySurface(self.kb, config, scope=f"view:{self.id}@{revision}",
                                visible_sources=lambda state: set(self.resolve().members), view=(self.id, revision))

    def recipe(self, steps: list | None = None, *, id: str | None = None, model: Any = None, concurrency: int = 4,
               executor: Any = None):
        """A recipe over this view: retrieval, hydration and communities see only its members.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Alpha launch.", metadata={"team": "x"})
        >>> kb.add_text("b.md", "Beta launch.", metadata={"team": "y"})
        >>> len(kb.view(id="x", where={"team": "x"}).recipe().retrieve("launch"))
        1
        """
        from .retrieval.recipe import Recipe

        return Recipe.bind(self.kb, steps=steps, id=id, model=model, concurrency=concurrency, view=self,
                           executor=executor)

    def inspect(self) -> dict[str, Any]:
        """What the view is, as plain data.

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="docs")
        >>> kb.add_text("a.md", "Alpha.", metadata={"team": "x"})
        >>> kb.view(id="x", where={"team": "x"}).inspect()
        {'id': 'x', 'namespace': 'docs', 'where': {'team': ['x']}, 'revision': None}
        """
        return {"id": self.id, "namespace": self.kb.namespace, "where": self.where, "revision": self.pinned}

    def __repr__(self) -> str:
        pin = f", revision={self.pinned!r}" if self.pinned else ""
        return f"View(id={self.id!r}, where={self.where!r}{pin})"

    def _repr_html_(self) -> str:
        from .display.html import view_html

        try:
            return view_html(self, self.resolve())
        except CruxError as exc:  # a pinned revision that no longer replays: show why instead of failing
            return view_html(self, None, exc.message)
