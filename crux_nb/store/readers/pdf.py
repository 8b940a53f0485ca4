"""PDF text with pypdf (the ``formats`` extra), page by page.

The pages' texts are joined with a form feed (``\\f``, :data:`PAGE_BREAK`); the chunker cuts a paged
source at page breaks and records each chunk's 1-based ``page`` in its metadata, so a hit cites its
page. PDFs carry no reliable headings, so a PDF source has no sections.
"""

from __future__ import annotations

from pathlib import Path

from ..chunking import PAGE_BREAK

__all__ = ["PAGE_BREAK", "pdf_pages"]


def pdf_pages(path: Path) -> list[str]:
    """The text of each page (``""`` for a page without text, such as a scan).

    Raises ``ValueError`` for a file pypdf cannot read or an encrypted PDF.

    Examples
    --------
    >>> import io, pypdf
    >>> writer, blank = pypdf.PdfWriter(), io.BytesIO()
    >>> _ = writer.add_blank_page(width=72, height=72)
    >>> _ = writer.write(blank)
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "blank.pdf"
    >>> _ = path.write_bytes(blank.getvalue())
    >>> pdf_pages(path)
    ['']
    """
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise ValueError("it is encrypted")
        # a page break inside a page's own text would shift every later page number
        return [(page.extract_text() or "").replace(PAGE_BREAK, "\n") for page in reader.pages]
    except (PyPdfError, OSError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None
