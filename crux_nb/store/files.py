"""``kb.add_path``: which files below a folder are read, which are skipped and why.

Every regular file below the folder is accounted for: read into a source spec, or skipped with a
reason (an ``include``/``exclude`` pattern, a format crux_nb does not read, a format whose optional
parser is not installed, a link leaving the folder or a broken link). Hidden files and folders (a name
starting with ``.``, such as ``.git``) are not looked at. A file that is read but turns out bad (not
UTF-8, empty, a broken PDF) still stops the whole call, so a bad file leaves the knowledge base as it was.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InputError, NotFoundError, ParameterError
from .ingest import SourceSpec, text_spec
from .readers import SUFFIXES, format_of, missing_extra_error, missing_modules, read_document

__all__ = ["Skipped", "AddedPaths", "PathResult", "path_specs", "check_patterns", "PROGRESS_FILES"]

#: a folder with at least this many files to read shows a progress bar (unless ``progress=False``)
PROGRESS_FILES = 200
_SHOWN = 3  # skipped files named per reason in the warning (all are in the result)


@dataclass(frozen=True)
class Skipped:
    """A file ``kb.add_path`` did not read (``path`` relative to the folder) and why."""

    path: str
    reason: str
    requested: bool = False  # skipped because an include/exclude pattern asked for it (no warning)


class AddedPaths(list):
    """The source ids ``kb.add_path`` added (a list), with ``skipped``: the files it did not read, and why."""

    def __init__(self, ids: list[str], skipped: tuple[Skipped, ...] = ()):
        super().__init__(ids)
        self.skipped = skipped


@dataclass(frozen=True)
class PathResult:
    specs: list[SourceSpec]
    skipped: tuple[Skipped, ...]
    warning: str | None

    def added(self) -> AddedPaths:
        """The ids, once they are committed; warns about the files skipped unasked."""
        if self.warning:
            warnings.warn(self.warning, stacklevel=3)
        return AddedPaths([s.source_id for s in self.specs], self.skipped)


def check_patterns(name: str, value: Any) -> tuple[str, ...]:
    """``include``/``exclude`` as a tuple of glob patterns (one pattern or a list of them)."""
    if value is None:
        return ()
    values = (value,) if isinstance(value, str) else value
    if not isinstance(values, Sequence) or not values or not all(isinstance(v, str) and v for v in values):
        raise ParameterError("kb.add_path()", name, "a glob pattern such as '*.rst' or a list of them", value)
    return tuple(values)


def matches(relative: str, pattern: str) -> bool:
    """A pattern without ``/`` matches a file's name or any of its folders' names (``*.rst``, ``build``);
    one with ``/`` matches the path from the folder (``api/*.html``; ``**/`` also matches no folder).

    Examples
    --------
    >>> matches("guide/intro.rst", "*.rst"), matches("build/x.md", "build"), matches("api/a.html", "**/a.html")
    (True, True, True)
    >>> matches("guide/intro.rst", "api/*")
    False
    """
    path = PurePosixPath(relative)
    if "/" not in pattern.strip("/"):
        return any(fnmatchcase(part, pattern.strip("/")) for part in path.parts)
    pattern = pattern.lstrip("/")
    return fnmatchcase(relative, pattern) or fnmatchcase(relative, pattern.replace("**/", ""))


def path_specs(path: Any, *, metadata: Any = None, include: Any = None, exclude: Any = None,
               progress: bool | None = None) -> PathResult:
    """Specs for one file, or for every file below a folder that passes the patterns and is of a format read."""
    if progress is not None and not isinstance(progress, bool):
        raise ParameterError("kb.add_path()", "progress", "True, False or None (a bar from 200 files)", progress)
    include, exclude = check_patterns("include", include), check_patterns("exclude", exclude)
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"path must be a string or a Path; got {type(path).__name__}.")
    root = Path(path)
    try:
        exists, is_file = root.exists(), root.is_file()
        listing = _listing(root) if exists and not is_file else []
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, a loop, no permission
        raise InputError(f"path {_short(str(root))} cannot be read ({getattr(exc, 'strerror', None) or exc}).",
                         hint=f"check the path: an existing file ({SUFFIXES}) or a folder of them.") from None
    if not exists:
        raise NotFoundError(f"path {str(root)!r} does not exist.", hint="check the path, relative to the working directory.")
    if is_file:
        fmt = format_of(root)
        if fmt is None:
            raise InputError(f"file {str(root)!r} has type {root.suffix.lower() or '(none)'!r}; crux_nb reads {SUFFIXES}.",
                             hint="convert it to one of these formats (Markdown or plain text always work) first.")
        return PathResult([_spec(root, root.name, fmt, metadata)], (), None)
    files, skipped = _select(root, listing, include, exclude)
    if not files:
        raise InputError(f"folder {str(root)!r} holds no file crux_nb reads ({SUFFIXES})"
                         + (f"; skipped: {_reasons(skipped)}" if skipped else "") + ".",
                         hint="check the folder and the include/exclude patterns; `pip install 'crux_nb[formats]'` "
                              "reads HTML, reStructuredText, PDF and notebooks.")
    specs = []
    with _bar(len(files), progress) as bar:
        for file, fmt in files:
            specs.append(_spec(file, file.relative_to(root).as_posix(), fmt, metadata))
            bar.update(1)
    unasked = [s for s in skipped if not s.requested]
    warning = (f"add_path: skipped {len(unasked)} of {len(unasked) + len(specs)} files in {str(root)!r}: "
               f"{_reasons(unasked)}. The list returned by add_path has them all in .skipped.") if unasked else None
    return PathResult(specs, tuple(skipped), warning)


def _listing(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if not _hidden(p.relative_to(root)))


def _select(root: Path, listing: list[Path], include: tuple[str, ...],
            exclude: tuple[str, ...]) -> tuple[list[tuple[Path, Any]], list[Skipped]]:
    real_root = root.resolve()
    files, skipped = [], []
    for entry in listing:
        relative = entry.relative_to(root).as_posix()
        link = entry.is_symlink()
        if link:
            try:
                inside = entry.resolve().is_relative_to(real_root)
            except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13)
                skipped.append(Skipped(relative, "a link loop"))
                continue
            if not inside:
                skipped.append(Skipped(relative, "a link leaving the folder (not followed)"))
                continue
        if not entry.is_file():
            if link and not entry.exists():
                skipped.append(Skipped(relative, "a broken link"))
            continue  # a folder (or a link to a folder inside this one, whose files are listed themselves)
        reason = _pattern_reason(relative, include, exclude)
        if reason:
            skipped.append(Skipped(relative, reason, requested=True))
            continue
        fmt = format_of(entry)
        if fmt is None:
            skipped.append(Skipped(relative, f"type {entry.suffix.lower() or '(none)'!r} is not a format crux_nb reads"))
        elif missing_modules(fmt):
            skipped.append(Skipped(relative, f"{fmt.name} needs the 'formats' extra (pip install 'crux_nb[formats]')"))
        else:
            files.append((entry, fmt))
    return files, skipped


def _pattern_reason(relative: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> str | None:
    if include and not any(matches(relative, p) for p in include):
        return "not matched by include"
    hit = next((p for p in exclude if matches(relative, p)), None)
    return f"excluded by {hit!r}" if hit else None


def _spec(file: Path, source_id: str, fmt: Any, metadata: Any) -> SourceSpec:
    if missing_modules(fmt):
        raise missing_extra_error(fmt, str(file))
    text = read_document(file, fmt)
    markdown = fmt.media_type == "text/markdown"
    spec = text_spec(source_id, text, metadata=metadata, format="markdown" if markdown else "text", path=str(file))
    return spec if markdown else replace(spec, media_type=fmt.media_type)


def _reasons(skipped: list[Skipped]) -> str:
    """The skipped files grouped by reason, a few named per reason (a folder may skip thousands)."""
    groups: dict[str, list[str]] = {}
    for s in skipped:
        groups.setdefault(s.reason, []).append(s.path)
    parts = []
    for reason, paths in groups.items():
        named = ", ".join(repr(p) for p in paths[:_SHOWN])
        parts.append(f"{reason}: {named}" + (f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else ""))
    return "; ".join(parts)


def _bar(total: int, progress: bool | None):
    from tqdm.auto import tqdm

    show = total >= PROGRESS_FILES if progress is None else bool(progress)
    return tqdm(total=total, desc="reading files", unit="file", disable=not show)


def _short(text: str, limit: int = 200) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)
