"""reStructuredText to Markdown with docutils (the ``formats`` extra): sections from headings, literal blocks kept.

docutils parses the text to a doctree; sections become headings at their depth, literal and doctest blocks
become fenced code, every other text element a paragraph. Sphinx and project directives docutils does not
know (``versionadded``, ``signature``, ``code-block`` in older docutils ...) would come back as one raw
error block: their arguments are kept as a paragraph and their content is parsed as reStructuredText in
turn. An unknown role (``:command:`add_library```) keeps its text (``add_library``). Nothing is read
from or included off disk (``include`` and ``raw`` are off) and docutils prints no reports.
"""

from __future__ import annotations

import io
import re
import textwrap
import threading

from .markup import MarkdownWriter, one_line

__all__ = ["rst_to_markdown"]

#: unknown directives nested deeper than this keep their raw text (a bound on re-parsing)
MAX_DEPTH = 8
_ROLE = re.compile(r"^:[\w.:+-]+:`(.*)`_{0,2}$", re.S)
_TARGET = re.compile(r"^(.*?)\s+<[^<>]*>$", re.S)
_ESCAPE = re.compile(r"\\(.)")
_DIRECTIVE = re.compile(r"^\.\.\s+([\w.:+-]+)::\s*(.*)$")
_OPTION = re.compile(r"^\s*:[\w.+-]+:(\s.*)?$")
_LOCAL = threading.local()
_SKIP = frozenset({"comment", "substitution_definition", "target", "raw", "pending", "system_message"})
_SETTINGS = {"report_level": 5, "halt_level": 5, "file_insertion_enabled": False, "raw_enabled": False,
             "doctitle_xform": False, "sectsubtitle_xform": False, "input_encoding": "unicode",
             "syntax_highlight": "none", "_disable_config": True}


def rst_to_markdown(text: str) -> str:
    """A reStructuredText document as Markdown.

    Examples
    --------
    >>> doc = '''Install
    ... =======
    ...
    ... Run :command:`pip` first.
    ...
    ... .. versionadded:: 2.0
    ...    Works offline.
    ...
    ... ::
    ...
    ...    # a comment, not a heading
    ...    pip install x
    ... '''
    >>> print(rst_to_markdown(doc))
    # Install
    <BLANKLINE>
    Run pip first.
    <BLANKLINE>
    versionadded 2.0
    <BLANKLINE>
    Works offline.
    <BLANKLINE>
    ```
    # a comment, not a heading
    pip install x
    ```
    """
    out = MarkdownWriter()
    _walk(_parse(text), out, level=0, depth=0)
    return out.text()


def _parse(text: str):
    """The doctree of ``text``: parser and settings made once (``publish_doctree`` builds both per call, which
    costs more than parsing a page; the many unknown directives of a Sphinx project are each parsed too)."""
    from docutils.utils import new_document

    parser, settings = _parser()
    document = new_document("<rst>", settings)
    parser.parse(text, document)
    document.transformer.populate_from_components((parser,))
    document.transformer.apply_transforms()
    return document


def _parser():
    """This thread's parser and settings (a docutils parser keeps its state machine on itself)."""
    made = getattr(_LOCAL, "parser", None)
    if made is None:
        from docutils.frontend import get_default_settings
        from docutils.parsers.rst import Parser

        settings = get_default_settings(Parser)
        for key, value in {**_SETTINGS, "warning_stream": io.StringIO()}.items():
            setattr(settings, key, value)
        made = _LOCAL.parser = (Parser(), settings)
    return made


def _walk(node, out: MarkdownWriter, *, level: int, depth: int) -> None:
    from docutils import nodes

    for child in node.children:
        if isinstance(child, nodes.system_message):
            _unknown_directive(child, out, level=level, depth=depth)
        elif isinstance(child, nodes.section):
            _walk(child, out, level=level + 1, depth=depth)
        elif isinstance(child, nodes.title):
            if isinstance(node, nodes.section):
                out.heading(level, _inline(child))
            else:
                out.paragraph(_inline(child))
        elif isinstance(child, (nodes.literal_block, nodes.doctest_block)):
            classes = [c for c in child.get("classes", []) if c != "code"]
            out.code(child.astext(), classes[0] if classes else "")
        elif isinstance(child, nodes.row):
            out.paragraph(" | ".join(one_line(_inline(entry)) for entry in child.children))
        elif isinstance(child, nodes.topic) and "contents" in child.get("classes", []):
            continue  # a generated table of contents repeats the headings
        elif isinstance(child, nodes.Text):
            out.paragraph(child.astext())
        elif isinstance(child, nodes.TextElement) and not isinstance(child, nodes.Inline):
            out.paragraph(_inline(child))
        elif isinstance(child, nodes.Element) and child.tagname not in _SKIP:
            _walk(child, out, level=level, depth=depth)


def _inline(node) -> str:
    from docutils import nodes

    if isinstance(node, nodes.Text):
        return node.astext()  # str() would keep docutils' NUL-marked backslash escapes
    if isinstance(node, nodes.problematic):
        return _role_text(node.astext())
    if isinstance(node, (nodes.system_message, nodes.comment, nodes.target)):
        return ""
    return "".join(_inline(child) for child in node.children)


def _role_text(raw: str) -> str:
    """``:ref:`Static Library <Static Libraries>``` -> ``Static Library``; ``:command:`~a.b``` -> ``a.b``."""
    match = _ROLE.match(raw.strip())
    if not match:
        return raw
    inner = _ESCAPE.sub(r"\1", match.group(1))
    target = _TARGET.match(inner)
    return (target.group(1) if target and target.group(1) else inner).lstrip("~!")


def _unknown_directive(message, out: MarkdownWriter, *, level: int, depth: int) -> None:
    from docutils import nodes

    if message.get("level", 0) < 3:
        return
    blocks = [c for c in message.children if isinstance(c, nodes.literal_block)]
    if not blocks or not message.children[0].astext().startswith("Unknown directive type"):
        return
    lines = blocks[0].astext().split("\n")
    head = _DIRECTIVE.match(lines[0])
    if head is None:
        return
    end = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    out.paragraph(f"{head.group(1)} {head.group(2)}")
    # the rest of the arguments and the content, read as reStructuredText (options dropped)
    rest = [line for line in lines[1:end] if not _OPTION.match(line)] + lines[end:]
    body = textwrap.dedent("\n".join(rest)).strip("\n")
    if not body.strip():
        return
    if depth >= MAX_DEPTH:
        out.paragraph(body)
    else:
        _walk(_parse(body), out, level=level, depth=depth + 1)
