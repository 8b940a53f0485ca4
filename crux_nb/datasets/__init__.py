"""Bundled datasets.

``sample_path()`` is the folder of the bundled sample corpus (a fictional
product company, Lumen Labs: release planning, launch-plan revisions, teams,
services, incidents and decisions); ``load_sample()`` builds a knowledge base
from it. ``load_python_reference()`` builds one from the Python language
reference topics that ship with every Python (``pydoc_data.topics``).
``load_sample_questions()`` gives the sample corpus's labelled questions,
``load_python_reference_questions()`` the reference topics' (passage gold), and
``load_multihop(name)`` a public multi-hop sample (MuSiQue, HotpotQA, 2Wiki) with
its questions, for ``crux_nb.evaluate``. ``load_tiny()`` is a three-sentence knowledge
base (optionally with entities or communities) for examples, ``load_tiny_questions()``
its two labelled questions.
"""

from __future__ import annotations

from pathlib import Path

from ..knowledgebase import KnowledgeBase, knowledge_base
from .paths import data_path

__all__ = ["data_path", "sample_path", "sample_later_path", "sample_entities_path", "load_sample",
           "load_python_reference", "load_python_reference_questions", "python_reference_questions_path",
           "read_questions", "load_sample_questions", "sample_questions_path", "load_multihop", "multihop_root",
           "load_tiny", "load_tiny_questions"]

def sample_path() -> Path:
    """The folder of the sample corpus (Markdown with front matter).

    Examples
    --------
    >>> folder = sample_path()
    >>> len(list(folder.glob("*.md"))), (folder / "architecture-overview.md").read_text().startswith("---")
    (40, True)
    """
    return data_path("sample")


def sample_later_path() -> Path:
    """The folder holding a later launch-plan revision, for freshness demos.

    Examples
    --------
    >>> [p.name for p in sample_later_path().iterdir()]
    ['launch-plan-v4.md']
    """
    return data_path("sample_later")


def sample_entities_path() -> Path:
    """The hand-made list of the sample corpus's main named entities (CSV: name, type, aliases).

    Examples
    --------
    >>> import pandas as pd
    >>> entities = pd.read_csv(sample_entities_path())
    >>> list(entities.columns), entities.iloc[0].tolist()
    (['name', 'type', 'aliases'], ['Priya Raman', 'person', 'Priya'])
    """
    return data_path("sample_entities.csv")


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
    """A knowledge base of the Python language reference topics (about 80 sources).

    Examples
    --------
    >>> kb = load_python_reference()
    >>> kb.id, "assert" in set(kb.documents["source_id"]), kb.summary()["documents"] > 50
    ('pyref', True, True)
    >>> kb.recipe().retrieve("assert statement")[0].source.id
    'assert'
    """
    import pandas as pd
    from pydoc_data.topics import topics

    frame = pd.DataFrame({"id": sorted(topics), "text": [topics[k] for k in sorted(topics)]})
    frame = frame[frame["text"].str.strip().str.len() > 0]
    kb = knowledge_base(id=id, chunk_size=chunk_size)
    kb.add_frame(frame, format="text")
    return kb


from .questions import (load_multihop, load_python_reference_questions, load_sample_questions,  # noqa: E402
                        multihop_root, python_reference_questions_path, read_questions, sample_questions_path)
from .tiny import load_tiny, load_tiny_questions  # noqa: E402
