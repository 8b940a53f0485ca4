"""What ``kb.save`` checks before it takes the lease: its options and the target folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ParameterError, StorageError
from .generations import inside

__all__ = ["check_save_options", "check_target"]


def check_target(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise StorageError(f"{str(root)!r} exists and is not a folder.", hint="choose a folder path for kb.save().")
    if root.is_dir() and any(root.iterdir()) and not (root / "CURRENT").exists() and not (root / "generations").exists():
        raise StorageError(f"folder {str(root)!r} is not empty and is not a crux_nb knowledge base.",
                           hint="save into a new or empty folder.")
    gens = root / "generations"
    if gens.is_symlink() or gens.exists():
        inside(root, gens, "the generations folder")


def check_save_options(partition_rows: Any, overwrite: Any, merge: Any, keep: Any) -> None:
    if isinstance(partition_rows, bool) or not isinstance(partition_rows, int) or partition_rows < 1:
        raise ParameterError("kb.save", "partition_rows", "a positive integer", partition_rows)
    for name, value in (("overwrite", overwrite), ("merge", merge)):
        if not isinstance(value, bool):
            raise ParameterError("kb.save", name, "a boolean", value)
    if overwrite and merge:
        raise ParameterError("kb.save", "merge", "False when overwrite=True (choose one way out of a conflict)", merge)
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise ParameterError("kb.save", "keep", "a positive integer (generations kept) or None", keep)
