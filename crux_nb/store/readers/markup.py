"""Writing a parsed document back as Markdown, the one form the chunker cuts into sections.

Every reader (HTML, reStructuredText, notebooks) walks its parser's tree and emits blocks through
:class:`MarkdownWriter`: headings become ``#`` lines (so they become sections as in a Markdown
source), code is fenced (so a ``#`` comment inside it never reads as a heading), and everything else
is a paragraph.
"""

from __future__ import annotations

import re

__all__ = ["MarkdownWriter", "fence", "one_line"]

_SPACE = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLANKS = re.compile(r"\n\s*\n+")
_HEADING_LIKE = re.compile(r"(?m)^(#{1,6}[ \t])")


def one_line(text: str) -> str:
    """Whitespace runs (newlines too) as one space: a heading or table cell on one line."""
    return " ".join(text.split())


def fence(code: str, language: str = "") -> str:
    """``code`` in a fence longer than any backtick run inside it (so the fence cannot close early)."""
    code = code.strip("\n")
    longest = max((len(m) for m in re.findall(r"`{3,}", code)), default=2)
    marks = "`" * (longest + 1)
    return f"{marks}{language.strip()}\n{code}\n{marks}"


class MarkdownWriter:
    """Blocks in reading order, joined by blank lines.

    Examples
    --------
    >>> out = MarkdownWriter()
    >>> out.heading(2, "Install\\n  it")
    >>> out.paragraph("Run   the\\ninstaller.")
    >>> out.code("# not a heading", "sh")
    >>> print(out.text())
    ## Install it
    <BLANKLINE>
    Run the
    installer.
    <BLANKLINE>
    ```sh
    # not a heading
    ```
    """

    def __init__(self) -> None:
        self.blocks: list[str] = []

    def heading(self, level: int, title: str) -> None:
        title = one_line(title)
        if title:
            self.blocks.append(f"{'#' * min(max(level, 1), 6)} {title}")

    def paragraph(self, text: str, *, prefix: str = "") -> None:
        lines = [_SPACE.sub(" ", line).strip() for line in _BLANKS.sub("\n", text).split("\n")]
        body = "\n".join(line for line in lines if line)
        if body:
            # a paragraph line that starts with '#' would read as a heading: escape the mark
            body = _HEADING_LIKE.sub(r"\\\1", body)
            self.blocks.append(prefix + body)

    def code(self, code: str, language: str = "") -> None:
        if code.strip():
            self.blocks.append(fence(code, language))

    def text(self) -> str:
        return "\n\n".join(self.blocks)
