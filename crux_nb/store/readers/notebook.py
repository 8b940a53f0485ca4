"""Jupyter notebooks with nbformat (the ``formats`` extra): markdown cells as Markdown, code cells fenced.

Markdown cells keep their headings (so they become sections); code cells become fenced blocks in the
kernel's language; raw cells and outputs are left out (outputs are results, often large or binary).
"""

from __future__ import annotations

from pathlib import Path

from .markup import MarkdownWriter

__all__ = ["notebook_to_markdown"]


def notebook_to_markdown(path: Path) -> str:
    """A notebook's markdown and code cells as one Markdown text.

    Raises ``ValueError`` for a file nbformat cannot read.

    Examples
    --------
    >>> import nbformat, tempfile, pathlib
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Load\\n\\nRead the file."),
    ...                                      nbformat.v4.new_code_cell("# comment\\ndf = read()")])
    >>> nb.metadata["language_info"] = {"name": "python"}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "n.ipynb"
    >>> nbformat.write(nb, path)
    >>> print(notebook_to_markdown(path))
    # Load
    <BLANKLINE>
    Read the file.
    <BLANKLINE>
    ```python
    # comment
    df = read()
    ```
    """
    import nbformat

    try:
        notebook = nbformat.read(path, as_version=4)
    except (nbformat.reader.NotJSONError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(str(exc).split("\n")[0] or type(exc).__name__) from None
    meta = notebook.get("metadata", {})
    language = (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get("language") or ""
    blocks = []
    for cell in notebook.get("cells", []):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if not source.strip():
            continue
        if cell.get("cell_type") == "markdown":
            blocks.append(source.strip("\n"))
        elif cell.get("cell_type") == "code":
            code = MarkdownWriter()
            code.code(source, language)
            blocks.append(code.text())
    return "\n\n".join(blocks)
