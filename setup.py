"""Build hook: the wheel carries the top-level ``data/`` folder as ``crux_nb/datasets/data/``.

``data/`` stays the one copy in the repository (the design keeps it at the top, where notebooks
and people find it); every file under it, whatever its name, is copied into the package when a
wheel is built, so ``crux_nb.datasets`` reads it through ``importlib.resources`` after a plain
``pip install``. ``tests/test_wheel.py`` checks the built wheel holds exactly these files.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data"
PACKAGE_DATA = ("crux_nb", "datasets", "data")


def data_files() -> list[Path]:
    """Every file under data/, relative to it, skipping hidden files and caches."""
    return sorted(path.relative_to(DATA) for path in DATA.rglob("*") if path.is_file()
                  and not any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(DATA).parts))


class build_py_with_data(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads data/ in the checkout itself
        target = Path(self.build_lib, *PACKAGE_DATA)
        for rel in data_files():
            self.mkpath(str((target / rel).parent))
            self.copy_file(str(DATA / rel), str(target / rel))


setup(cmdclass={"build_py": build_py_with_data})
