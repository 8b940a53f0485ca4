"""Document readers: each format crux_nb reads, and a file of one read as text for the chunker.

Markdown and plain text are read as they are. HTML, reStructuredText and notebooks are converted to
Markdown by a well-kept parser (Beautiful Soup, docutils, nbformat) so that their headings become sections
exactly as a Markdown source's; a PDF's pages (pypdf) are joined with a page break, and the chunker
records each chunk's page. The parsers are the optional ``formats`` extra: a format whose parser is not
installed raises :class:`~crux_nb.errors.CruxError` with code ``missing_extra`` naming the extra.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from ...errors import CruxError, InputError

__all__ = ["DocumentFormat", "FORMATS", "EXTRA", "format_of", "missing_modules", "missing_extra_error",
           "read_document"]

#: the optional dependency group that holds the parsers (``pip install 'crux_nb[formats]'``)
EXTRA = "formats"


@dataclass(frozen=True)
class DocumentFormat:
    """One format: its name, media type (stored in ``kb.documents``), suffixes and the modules it needs."""

    name: str
    media_type: str
    suffixes: tuple[str, ...]
    modules: tuple[str, ...] = ()


FORMATS = (
    DocumentFormat("Markdown", "text/markdown", (".md", ".markdown")),
    DocumentFormat("plain text", "text/plain", (".txt",)),
    DocumentFormat("HTML", "text/html", (".html", ".htm", ".xhtml"), ("bs4",)),
    DocumentFormat("reStructuredText", "text/x-rst", (".rst", ".rest"), ("docutils",)),
    DocumentFormat("PDF", "application/pdf", (".pdf",), ("pypdf",)),
    DocumentFormat("Jupyter notebook", "application/x-ipynb+json", (".ipynb",), ("nbformat",)),
)
_BY_SUFFIX = {suffix: fmt for fmt in FORMATS for suffix in fmt.suffixes}
SUFFIXES = ", ".join(suffix for fmt in FORMATS for suffix in fmt.suffixes)


def format_of(path: Path) -> DocumentFormat | None:
    """The format a file's suffix names, or None.

    Examples
    --------
    >>> from pathlib import Path
    >>> format_of(Path("guide/intro.RST")).name, format_of(Path("logo.png"))
    ('reStructuredText', None)
    """
    return _BY_SUFFIX.get(path.suffix.lower())


def missing_modules(fmt: DocumentFormat) -> list[str]:
    """The modules ``fmt`` needs that cannot be imported here."""
    missing = []
    for name in fmt.modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def missing_extra_error(fmt: DocumentFormat, path: str) -> CruxError:
    """The error for a file whose format's parser is not installed.

    Examples
    --------
    >>> error = missing_extra_error(FORMATS[4], "manual.pdf")
    >>> error.code, error.hint
    ('missing_extra', "pip install 'crux_nb[formats]' (Beautiful Soup, docutils, pypdf and nbformat).")
    """
    return CruxError(f"reading {fmt.name} files such as {path!r} needs the '{EXTRA}' extra "
                     f"({', '.join(fmt.modules)} is not installed).", code="missing_extra",
                     hint=f"pip install 'crux_nb[{EXTRA}]' (Beautiful Soup, docutils, pypdf and nbformat).")


def read_document(path: Path, fmt: DocumentFormat) -> str:
    """The text of ``path`` for the chunker: Markdown, plain text, or (PDF) pages joined by a page break.

    Raises :class:`~crux_nb.errors.InputError` for a file that cannot be read as its format, and the
    ``missing_extra`` error when the format's parser is not installed.
    """
    if missing_modules(fmt):
        raise missing_extra_error(fmt, str(path))
    shown = repr(str(path))
    try:
        if fmt.media_type == "application/pdf":
            from .pdf import PAGE_BREAK, pdf_pages

            pages = pdf_pages(path)
            if not any(page.strip() for page in pages):
                raise InputError(f"file {shown} has no text layer ({len(pages)} pages without extractable text).",
                                 hint="a scanned PDF needs OCR first (for example ocrmypdf), then add it again.")
            return PAGE_BREAK.join(pages)
        if fmt.media_type == "application/x-ipynb+json":
            from .notebook import notebook_to_markdown

            return notebook_to_markdown(path)
        if fmt.media_type == "text/html":
            from .html import html_to_markdown

            return html_to_markdown(path.read_bytes())  # Beautiful Soup finds the page's declared encoding
        text = path.read_text(encoding="utf-8")
        if fmt.media_type == "text/x-rst":
            from .rst import rst_to_markdown

            return rst_to_markdown(text)
        return text
    except UnicodeDecodeError:
        raise InputError(f"file {shown} is not UTF-8 text.", hint="re-encode it as UTF-8.") from None
    except OSError as exc:
        raise InputError(f"file {shown} cannot be read: {exc.strerror}.") from None
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, CruxError):
            raise
        raise InputError(f"file {shown} cannot be read as {fmt.name}: {str(exc)[:200]}.",
                         hint=f"check that the file is a valid {fmt.name} file (open it in a viewer).") from None
