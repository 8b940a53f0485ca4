"""Sphinx configuration of the crux_nb documentation site (``make docs``; built offline).

The gallery notebooks are rendered by MyST-NB from their stored outputs (never executed here): they are
copied from ``../notebooks`` into ``notebooks/`` (ignored by git) when the build starts. A crux_nb view
publishes its widget and, as a second output, its static HTML; the widget output is dropped here (no
widget manager on a static site), so the page shows the static view. The API reference is autodoc over
the numpydoc docstrings (napoleon).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

project = "crux_nb"
author = "crux_nb developers"
copyright = "crux_nb developers"
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
html_theme = "alabaster"
html_title = "crux_nb"
html_theme_options = {"page_width": "1320px", "sidebar_width": "230px"}  # room for the views
html_static_path: list[str] = []

# MyST: heading anchors so pages can link to sections (`page.md#anchor`)
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# MyST-NB: stored outputs only; no widget JavaScript from a CDN; the static HTML wins over a widget view
nb_execution_mode = "off"
nb_ipywidgets_js: dict = {}
WIDGET = "application/vnd.jupyter.widget-view+json"
nb_mime_priority_overrides = [("*", WIDGET, None),
                              ("*", "application/vnd.jupyter.widget-state+json", None)]
nb_merge_streams = True

# API reference: numpydoc docstrings through napoleon, members in source order
napoleon_google_docstring = False
napoleon_numpy_docstring = True
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the signatures carry the types; the docstrings say what they mean
autodoc_default_options = {"imported-members": True}  # each automodule says :members:

# -n (nitpicky, as CI runs it): every reference into crux_nb must resolve; references to other
# projects (pandas, numpy, Python) are not checked, since the build is offline (no intersphinx).
# The storage layer and the offline model's helper modules are internals the reference does not cover.
INTERNAL = r"crux_nb\.(store|models\.(rating|offline_\w+|text)|retrieval\.globalsearch\.support)\b.*"
nitpick_ignore_regex = [(r"py:.*", r"(?!crux_nb\b).*"), (r"py:.*", INTERNAL)]
suppress_warnings = ["myst.header"]  # notebooks open with their own heading levels


def site_notebook(source: Path) -> str:
    """A notebook as the site shows it: a widget output whose static copy follows it is dropped (the copy
    shows the view; the widget's text repr alone would be a stray line). Older outputs that carry their
    static HTML in the widget's own bundle stay (the widget form is skipped by ``nb_mime_priority_overrides``)."""
    notebook = json.loads(source.read_text(encoding="utf-8"))
    for cell in notebook.get("cells", []):
        cell["outputs"] = [o for o in cell.get("outputs", [])
                           if not (WIDGET in o.get("data", {}) and "text/html" not in o.get("data", {}))]
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def copy_notebooks(app, config) -> None:
    """The gallery notebooks, copied in so MyST-NB reads them (the source of truth stays ../notebooks)."""
    target = HERE / "notebooks"
    target.mkdir(exist_ok=True)
    for source in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = site_notebook(source)
        copy = target / source.name
        if not copy.exists() or copy.read_text(encoding="utf-8") != text:
            copy.write_text(text, encoding="utf-8")


def setup(app):
    app.connect("config-inited", copy_notebooks)
