"""Small documents of every format crux_nb reads, written by real libraries (the PDF by matplotlib)."""

from __future__ import annotations

from pathlib import Path

HTML = """<!doctype html><html><head><title>Pump guide</title><script>track()</script></head><body>
<nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav>
<div role="main"><h1>Pump guide<a class="headerlink" href="#p">¶</a></h1>
<p>The <b>pump</b> starts when the valve opens.</p>
<h2>Configuration</h2><p>Set the pressure limit in <code>pump.toml</code>.</p>
<pre class="language-toml"># limits, not a heading
pressure = 4</pre>
<table><tr><th>key</th><th>unit</th></tr><tr><td>pressure</td><td>bar</td></tr></table>
</div><footer>Copyright</footer></body></html>
"""

RST = """Valve manual
============

The valve closes at :ref:`high pressure <limits>`.

Limits
------

.. versionadded:: 2.1
   The limit can be changed at run time.

Use the command::

   # reset, not a heading
   valve --reset
"""


def write_pdf(path: Path, pages: list[str]) -> Path:
    """A real PDF with one text line per page (matplotlib's PDF backend, TrueType text: extractable)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    with matplotlib.rc_context({"pdf.fonttype": 42}), PdfPages(path) as pdf:
        for text in pages:
            figure = plt.figure(figsize=(4, 3))
            figure.text(0.05, 0.95, text, parse_math=False, fontsize=6, va="top")  # "$" is text, not math
            pdf.savefig(figure)
            plt.close(figure)
    return path


def write_notebook(path: Path) -> Path:
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Pump notebook\n\nWe measure the pump flow."),
        nbformat.v4.new_code_cell("# flow, not a heading\nflow = measure('pump')"),
        nbformat.v4.new_raw_cell("raw cells are left out")])
    notebook.metadata["language_info"] = {"name": "python"}
    nbformat.write(notebook, path)
    return path


def mixed_folder(root: Path) -> Path:
    """HTML, reStructuredText, PDF, notebook and Markdown, in a sub folder too."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "guide.html").write_text(HTML, encoding="utf-8")
    (root / "manual").mkdir()
    (root / "manual" / "valve.rst").write_text(RST, encoding="utf-8")
    write_pdf(root / "spec.pdf", ["The pump spec, first page.", "Pressure limits, second page."])
    write_notebook(root / "flow.ipynb")
    (root / "notes.md").write_text("# Notes\n\nThe pump was serviced in May.", encoding="utf-8")
    return root
