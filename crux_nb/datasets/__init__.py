"""Bundled datasets.

``sample_path()`` is the folder of the bundled sample corpus (a fictional
product company, Lumen Labs: release planning, launch-plan revisions, teams,
services, incidents and decisions); ``load_sample()`` builds a knowledge base
from it. ``load_python_reference()`` builds one from the Python language
reference topics that ship with every Python (``pydoc_data.topics``).
"""

from __future__ import annotations

from pathlib import Path

from ..knowledgebase import KnowledgeBase, knowledge_base

__all__ = ["sample_path", "sample_later_path", "sample_entities_path", "load_sample", "load_python_reference"]

_PACKAGE_DATA = Path(__file__).parent / "data"
_REPO_DATA = Path(__file__).resolve().parents[2] / "data"


def _data_root() -> Path:
    # an installed wheel carries the corpus inside the package; a checkout reads data/ at the top
    return _PACKAGE_DATA if (_PACKAGE_DATA / "sample").is_dir() else _REPO_DATA


def sample_path() -> Path:
    """The folder of the sample corpus (Markdown with front matter)."""
    return _data_root() / "sample"


def sample_later_path() -> Path:
    """The folder holding a later launch-plan revision, for freshness demos."""
    return _data_root() / "sample_later"


def sample_entities_path() -> Path:
    """The hand-made list of the sample corpus's main named entities (CSV: name, type, aliases)."""
    return _data_root() / "sample_entities.csv"


def load_sample(*, id: str = "lumen", chunk_size: int = 1200) -> KnowledgeBase:
    """A knowledge base of the sample corpus.

    >>> kb = load_sample()
    >>> kb.summary()["documents"] > 30
    True
    """
    kb = knowledge_base(id=id, chunk_size=chunk_size)
    kb.add_path(sample_path())
    return kb


def load_python_reference(*, id: str = "pyref", chunk_size: int = 1200) -> KnowledgeBase:
    """A knowledge base of the Python language reference topics (about 80 sources)."""
    import pandas as pd
    from pydoc_data.topics import topics

    frame = pd.DataFrame({"id": sorted(topics), "text": [topics[k] for k in sorted(topics)]})
    frame = frame[frame["text"].str.strip().str.len() > 0]
    kb = knowledge_base(id=id, chunk_size=chunk_size)
    kb.add_frame(frame, format="text")
    return kb
