"""Where the bundled data lies: inside the package in a wheel, the repository's ``data/`` in a checkout."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import NotFoundError

__all__ = ["data_path"]

# a checkout (or an editable install) reads the repository's top-level data/ folder
_REPO_DATA = Path(__file__).resolve().parents[2] / "data"


def _data_root() -> Path:
    # an installed wheel carries data/ inside the package (copied at build time by setup.py)
    packaged = resources.files(__package__) / "data"
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
