"""``python -m crux_nb.warmup``: compile crux_nb's numba loops into numba's disk cache, then exit.

Run by :mod:`crux_nb.graph.compiled` in a child process at the first traversal of a process (so that
process never waits for the compiler), and usable as an install step (a Docker image, a CI cache): every later
process loads the compiled loops from the cache. It traverses a two-source knowledge base with
``CRUX_NB_TRAVERSAL=kernel`` (compile and wait), which compiles the loops for the argument types every
knowledge base gives them.
"""

from __future__ import annotations

import os

__all__ = ["warm_up"]


def warm_up() -> None:
    """Compile the traversal and reach loops (no-op when numba is missing or the numpy traversal is asked for).

    >>> warm_up()  # doctest: +SKIP
    """
    from .graph import frontier_kernel

    if not frontier_kernel.installed() or os.environ.get("CRUX_NB_TRAVERSAL", "").lower() == "numpy":
        return
    import pandas as pd

    from .knowledgebase import knowledge_base
    from .retrieval import expand_relations, retrieve

    os.environ["CRUX_NB_TRAVERSAL"] = "kernel"
    kb = knowledge_base(id="warmup")
    kb.add_text("a.md", "Alpha meets beta.\n\nGamma follows.")
    kb.add_text("b.md", "Beta and gamma.")
    kb.add_edges(pd.DataFrame({"from_ref": ["chunk:a.md:c0000", "chunk:b.md:c0000"], "to_ref": ["entity:beta"] * 2,
                               "type": ["mentions"] * 2, "evidence": [["chunk:a.md:c0000"], ["chunk:b.md:c0000"]]}))
    for ranking in ("relevance", "upstream"):
        kb.recipe(steps=[retrieve(limit=5), expand_relations(depth=2, ranking=ranking)]).retrieve("alpha")
    kb.reader.reach("chunk:a.md:c0000", depth=2)


if __name__ == "__main__":
    warm_up()
