"""Values derived from a knowledge base's frames, kept across its states while those frames stay the same objects.

Frames are immutable and an edit replaces only the tables it touches (``add_text`` leaves the entities and edges
frames as they were), so an index built from the entities frame, or from the edges and their evidence, holds for
every later state that still has those frames: the first query after a small edit need not build it again.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["derived", "kept"]

_KEPT = "derived-from-frames"  # KBState.shared key: cache key -> (weak references to the frames, value)


def derived(shared: dict, key: Any, build: Any, depends: tuple) -> Any:
    """The value ``shared`` keeps for ``key`` when it was built from the frames ``depends`` (the same objects),
    else ``build()``, then kept for the states that follow. The frames are referred to weakly, but the value is
    kept strongly (the states that will ask may not exist yet), so a value that holds its frames (the graph's
    adjacency holds the edges and evidence) keeps one set alive per key until the key is built from other frames.

    >>> import pandas as pd
    >>> shared, frame = {}, pd.DataFrame({"a": [1]})
    >>> derived(shared, "k", lambda: 1, (frame,)), derived(shared, "k", lambda: 2, (frame,))
    (1, 1)
    >>> derived(shared, "k", lambda: 3, (frame.copy(),))  # another frame: built again
    3
    """
    found = kept(shared, key, depends)
    if found is not None:
        return found
    value = build()
    shared.setdefault(_KEPT, {})[key] = (tuple(weakref.ref(frame) for frame in depends), value)
    return value


def kept(shared: dict, key: Any, depends: tuple) -> Any:
    """What :func:`derived` would take for ``key`` and the frames ``depends`` without building: the value kept
    when it was built from these very frames, else None."""
    found = shared.get(_KEPT, {}).get(key)
    if found is not None and len(found[0]) == len(depends) and all(r() is f for r, f in zip(found[0], depends)):
        return found[1]
    return None
