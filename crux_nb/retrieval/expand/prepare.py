"""Building ahead what a first ``expand_relations`` run reads and no query changes.

On a large knowledge base the first expansion builds the graph's traversal index, the cut of it its types,
direction and fan-out read (with the lists of incoming entries), the entity names a query is matched against and
the source names its titles match reads: ~1.5 s at 200k chunks. ``crux_nb.open`` builds them for the default step
in a background thread (:func:`prepare_expansion`), so the first query finds them ready.
"""

from __future__ import annotations

from typing import Any

from .entity_match import entity_name_index
from .step import ExpandRelationsStep, expand_relations
from .titles import source_names

__all__ = ["prepare_expansion", "prepare_traversal"]


def prepare_expansion(reader: Any, state: Any, step: ExpandRelationsStep | None = None) -> None:
    """Build the indexes ``step`` (default: ``expand_relations()``) reads on ``state`` through ``reader`` (its graph
    reader), each once per state: a run that arrives meanwhile waits for the build under way.

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="p")
    >>> kb.add_text("a.md", "# A\\n\\nAda met Alan.")
    >>> prepare_expansion(kb.reader, kb.state)
    >>> "entity-names" in kb.state.cache
    True
    """
    step = step if step is not None else expand_relations()
    prepare_traversal(reader, step)
    if "query" in step.seeds:
        entity_name_index(state)
    if step.ranking == "relevance" and step.titles:
        source_names(state)


def prepare_traversal(reader: Any, step: ExpandRelationsStep | None = None, *, state: Any = None) -> None:
    """The part of :func:`prepare_expansion` that reads no saved index: the traversal index, the cut of it ``step``
    reads and that cut's incoming lists, and with ``state`` the entity names a query is matched against
    (``crux_nb.open`` builds them while the saved lexical index is installed)."""
    step = step if step is not None else expand_relations()
    reader.traversal_index.view(*step.view_key()).transposed()
    if state is not None and "query" in step.seeds:
        entity_name_index(state)
