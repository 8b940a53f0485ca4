"""Bundled datasets.

``sample_path()`` is the folder of the bundled sample corpus (a fictional
product company, Lumen Labs: release planning, launch-plan revisions, teams,
services, incidents and decisions); ``load_sample()`` builds a knowledge base
from it. ``load_python_reference()`` builds one from the Python language
reference topics that ship with every Python (``pydoc_data.topics``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import NotFoundError
from ..knowledgebase import KnowledgeBase, knowledge_base

__all__ = ["data_path", "sample_path", "sample_later_path", "sample_entities_path", "load_sample",
           "load_python_reference"]

# a checkout (or an editable install) reads the repository's top-level data/ folder
_REPO_DATA = Path(__file__).resolve().parents[2] / "data"


def _data_root() -> Path:
    # an installed wheel carries data/ inside the package (copied at build time by setup.py)
    packaged = resources.files(__name__) / "data"
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    if _REPO_DATA.is_dir():
        return _REPO_DATA
    raise NotFoundError(f"crux_nb.datasets: the bundled data folder is missing (looked in {packaged} and {_REPO_DATA}).",
                        hint="install crux_nb from a wheel or an unpacked checkout; zipped installs are not supported")


def data_path(*parts: str) -> Path:
    """A file or folder of the bundled data (the repository's ``data/``, shipped inside the wheel).

    Parameters
    ----------
    *parts : str
        Path segments below the data folder; none gives the folder itself.

    Returns
    -------
    pathlib.Path
        The path; it exists for every file in the repository's ``data/``.

    Examples
    --------
    >>> data_path("sample_entities.csv").name
    'sample_entities.csv'
    >>> (data_path() / "sample").is_dir()
    True
    """
    return _data_root().joinpath(*parts)


def sample_path() -> Path:
    """The folder of the sample corpus (Markdown with front matter)."""
    return data_path("sample")


def sample_later_path() -> Path:
    """The folder holding a later launch-plan revision, for freshness demos."""
    return data_path("sample_later")


def sample_entities_path() -> Path:
    """The hand-made list of the sample corpus's main named entities (CSV: name, type, aliases)."""
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
    """A knowledge base of the Python language reference topics (about 80 sources)."""
    import pandas as pd
    from pydoc_data.topics import topics

    frame = pd.DataFrame({"id": sorted(topics), "text": [topics[k] for k in sorted(topics)]})
    frame = frame[frame["text"].str.strip().str.len() > 0]
    kb = knowledge_base(id=id, chunk_size=chunk_size)
    kb.add_frame(frame, format="text")
    return kb
