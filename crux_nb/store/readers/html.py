"""HTML to Markdown with Beautiful Soup (the ``formats`` extra): main text, headings, code kept.

The main text is the page's ``<main>`` (or ``role="main"``, or ``<article>``, or ``<body>``) without
scripts, styles, navigation, forms and the permalink anchors documentation generators add to headings.
``h1``-``h6`` become headings (so sections), ``<pre>`` becomes a fenced code block (its language from a
``language-x`` / ``highlight-x`` class), and each other block element (paragraph, list item, table row,
...) becomes a paragraph of its text.
"""

from __future__ import annotations

import re

from .markup import MarkdownWriter, one_line

__all__ = ["html_to_markdown"]

_DROP = ("script", "style", "noscript", "template", "nav", "form", "button", "svg", "iframe", "select")
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
# elements whose children are laid out as blocks (a paragraph inside one is a paragraph of its own)
_BLOCKS = frozenset({"address", "article", "aside", "blockquote", "body", "dd", "details", "div", "dl", "dt",
                     "fieldset", "figcaption", "figure", "footer", "header", "hgroup", "li", "main", "ol", "p",
                     "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
                     "caption", "hr", "br", *_HEADINGS})
_LANGUAGE = re.compile(r"^(?:language|lang|highlight|sourceCode)-(\w[\w+#.-]*)$")
_PERMALINK = re.compile(r"^\s*[¶#§🔗]\s*$")


def html_to_markdown(markup: str | bytes) -> str:
    """The main text of an HTML page as Markdown.

    Examples
    --------
    >>> page = ('<html><head><title>T</title><script>x()</script></head><body><nav>Home</nav><main>'
    ...         '<h1>Install<a class="headerlink" href="#i">¶</a></h1><p>Run <code>pip</code> first.</p>'
    ...         '<pre class="language-sh"># a comment\\npip install x</pre><ul><li>one</li><li>two</li></ul>'
    ...         '</main></body></html>')
    >>> print(html_to_markdown(page))
    # Install
    <BLANKLINE>
    Run pip first.
    <BLANKLINE>
    ```sh
    # a comment
    pip install x
    ```
    <BLANKLINE>
    - one
    <BLANKLINE>
    - two
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(markup, "html.parser")
    for tag in soup.find_all(_DROP):
        tag.decompose()
    for anchor in soup.find_all("a"):
        if _PERMALINK.match(anchor.get_text()):
            anchor.decompose()
    root = (soup.find("main") or soup.find(attrs={"role": "main"}) or soup.find("article") or soup.body or soup)
    out = MarkdownWriter()
    _walk(root, out)
    return out.text()


def _walk(node, out: MarkdownWriter) -> None:
    inline: list[str] = []
    for child in node.children:
        name = getattr(child, "name", None)
        if name is None:  # a text node (comments and doctype are skipped)
            if type(child).__name__ == "NavigableString":
                inline.append(str(child))
            continue
        if name not in _BLOCKS and not _has_block(child):
            inline.append(child.get_text())
            continue
        _flush(inline, out)
        _block(child, name, out)
    _flush(inline, out)


def _flush(inline: list[str], out: MarkdownWriter) -> None:
    if inline:
        out.paragraph(one_line("".join(inline)))
        inline.clear()


def _block(tag, name: str, out: MarkdownWriter) -> None:
    if name in _HEADINGS:
        out.heading(_HEADINGS[name], tag.get_text(" "))
    elif name == "pre":
        out.code(tag.get_text(), _language(tag))
    elif name == "tr":
        out.paragraph(" | ".join(one_line(c.get_text(" ")) for c in tag.find_all(["td", "th"], recursive=False)))
    elif _has_block(tag):
        _walk(tag, out)
    else:
        out.paragraph(one_line(tag.get_text()), prefix="- " if name == "li" else "")


def _has_block(tag) -> bool:
    return any(getattr(d, "name", None) in _BLOCKS for d in tag.descendants)


def _language(pre) -> str:
    for tag in (pre, pre.find("code"), pre.parent, pre.parent.parent if pre.parent else None):
        for cls in (tag.get("class") or []) if tag is not None and hasattr(tag, "get") else []:
            match = _LANGUAGE.match(cls)
            if match and match.group(1) not in ("default", "none"):
                return match.group(1)
    return ""
