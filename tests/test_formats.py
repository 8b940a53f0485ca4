"""add_path on documentation formats (issue 34): HTML, reStructuredText, PDF, notebooks and Markdown, every
file accounted for (read or skipped with a reason), globs, links leaving the folder, the missing-extra error."""

from __future__ import annotations

import importlib
import os
import sys
import warnings

import pytest

import crux_nb
from crux_nb.errors import CruxError, InputError, ParameterError
from crux_nb.testing import require_system
from formats_fixtures import mixed_folder, write_pdf


def _extra_installed() -> bool:
    try:
        for name in ("bs4", "docutils", "pypdf", "nbformat"):
            importlib.import_module(name)
    except ImportError:
        return False
    return True


@pytest.fixture(autouse=True)
def _formats_extra():
    require_system(_extra_installed(), "the formats extra is not installed (pip install 'crux_nb[formats]')")


def _every_file(root):
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def test_a_mixed_folder_ingests_with_every_file_accounted_for(tmp_path):
    root = mixed_folder(tmp_path / "docs")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n")
    kb = crux_nb.knowledge_base(id="mixed")
    with pytest.warns(UserWarning, match=r"skipped 1 of 6 files.*type '\.png' is not a format crux_nb reads: 'logo\.png'"):
        added = kb.add_path(root)
    assert added == ["flow.ipynb", "guide.html", "manual/valve.rst", "notes.md", "spec.pdf"]
    assert [(s.path, s.requested) for s in added.skipped] == [("logo.png", False)]
    assert set(added) | {s.path for s in added.skipped} == _every_file(root)
    media = dict(zip(kb.documents["source_id"], kb.documents["media_type"]))
    assert media == {"flow.ipynb": "application/x-ipynb+json", "guide.html": "text/html",
                     "manual/valve.rst": "text/x-rst", "notes.md": "text/markdown", "spec.pdf": "application/pdf"}
    titles = kb.parents.groupby("source_id")["title"].apply(list).to_dict()
    assert titles["guide.html"] == ["Pump guide", "Configuration"]  # headings became sections, the ¶ link dropped
    assert titles["manual/valve.rst"] == ["Valve manual", "Limits"]
    assert titles["flow.ipynb"] == ["Pump notebook"]
    assert "spec.pdf" not in titles  # a PDF has no reliable headings
    text = dict(kb.chunks.groupby("source_id")["content"].apply("\n".join))
    assert "```toml\n# limits, not a heading\npressure = 4\n```" in text["guide.html"]  # code kept, fenced
    assert "track()" not in text["guide.html"] and "Home" not in text["guide.html"]  # script and nav dropped
    assert "pressure | bar" in text["guide.html"]
    assert "```\n# reset, not a heading\nvalve --reset\n```" in text["manual/valve.rst"]
    assert "high pressure" in text["manual/valve.rst"] and ":ref:" not in text["manual/valve.rst"]
    assert "The limit can be changed at run time." in text["manual/valve.rst"]  # an unknown directive's content
    assert "```python\n# flow, not a heading\nflow = measure('pump')\n```" in text["flow.ipynb"]
    assert "raw cells" not in text["flow.ipynb"]
    pdf = kb.chunks[kb.chunks["source_id"] == "spec.pdf"]
    assert [m["page"] for m in pdf["metadata"]] == [1, 2]
    assert "second page" in pdf["content"].iloc[1]
    hits = kb.recipe().retrieve("pressure limits", filter={"page": 2})
    assert [str(h.ref) for h in hits] == ["chunk:spec.pdf:c0001"]


def test_include_and_exclude_globs_skip_on_request_without_a_warning(tmp_path):
    root = mixed_folder(tmp_path / "docs")
    kb = crux_nb.knowledge_base(id="globs")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        added = kb.add_path(root, include=["*.rst", "*.md"])
        assert added == ["manual/valve.rst", "notes.md"]
        assert {s.path: s.reason for s in added.skipped}["spec.pdf"] == "not matched by include"
        again = crux_nb.knowledge_base(id="ex").add_path(root, exclude=["manual", "*.pdf"])
    assert again == ["flow.ipynb", "guide.html", "notes.md"]
    assert {s.path: s.reason for s in again.skipped} == {"manual/valve.rst": "excluded by 'manual'",
                                                        "spec.pdf": "excluded by '*.pdf'"}
    with pytest.raises(ParameterError, match="'include' must be a glob pattern"):
        kb.add_path(root, include=[3])
    with pytest.raises(ParameterError, match="'progress'"):
        kb.add_path(root, progress="yes")


def test_a_link_leaving_the_folder_is_refused(tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nThe password is swordfish.")
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nThe pump.")
    (root / "inner.md").symlink_to(root / "a.md")  # a link inside the folder is read
    (root / "leak.md").symlink_to(outside)
    kb = crux_nb.knowledge_base(id="links")
    with pytest.warns(UserWarning, match="a link leaving the folder"):
        added = kb.add_path(root)
    assert added == ["a.md", "inner.md"]
    assert [(s.path, s.reason) for s in added.skipped] == [("leak.md", "a link leaving the folder (not followed)")]
    assert not kb.chunks["content"].str.contains("swordfish").any()


def test_a_missing_parser_raises_missing_extra_naming_it(tmp_path, monkeypatch):
    pdf = write_pdf(tmp_path / "one.pdf", ["Page one."])
    (tmp_path / "b.md").write_text("# B\n\ntext")
    monkeypatch.setitem(sys.modules, "pypdf", None)  # import pypdf raises ImportError
    kb = crux_nb.knowledge_base(id="extra")
    with pytest.raises(CruxError, match=r"needs the 'formats' extra \(pypdf is not installed\)") as error:
        kb.add_path(pdf)
    assert error.value.code == "missing_extra" and "crux_nb[formats]" in error.value.hint
    with pytest.warns(UserWarning, match=r"PDF needs the 'formats' extra .*: 'one\.pdf'"):
        added = kb.add_path(tmp_path)
    assert added == ["b.md"]


def test_a_large_folder_shows_a_progress_bar(tmp_path, capsys):
    for i in range(3):
        (tmp_path / f"d{i}.md").write_text(f"# D{i}\n\nText {i}.")
    crux_nb.knowledge_base(id="bar").add_path(tmp_path, progress=True)
    assert "reading files" in capsys.readouterr().err
    crux_nb.knowledge_base(id="quiet").add_path(tmp_path)  # 3 files: below the threshold
    assert "reading files" not in capsys.readouterr().err


def test_bad_documents_of_the_new_formats_are_refused(tmp_path):
    kb = crux_nb.knowledge_base(id="bad")
    (tmp_path / "broken.ipynb").write_text("{not json")
    with pytest.raises(InputError, match="cannot be read as Jupyter notebook"):
        kb.add_path(tmp_path / "broken.ipynb")
    blank = write_pdf(tmp_path / "blank.pdf", [""])
    with pytest.raises(InputError, match="no text layer") as error:
        kb.add_path(blank)
    assert "OCR" in error.value.hint
    assert len(kb.documents) == 0


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_a_link_loop_in_a_folder_is_reported(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\ntext")
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    with pytest.warns(UserWarning, match="a link loop: 'loop'"):
        assert crux_nb.knowledge_base(id="loop").add_path(tmp_path) == ["a.md"]


def test_rst_backslash_escapes_read_as_their_characters(tmp_path):
    """docutils marks a backslash escape with a NUL inside its tree; the text read must not keep it."""
    (tmp_path / "esc.rst").write_text("Escapes\n=======\n\nA literal \\*star\\* and C:\\\\path.\n")
    kb = crux_nb.knowledge_base(id="esc")
    kb.add_path(tmp_path / "esc.rst")
    assert "A literal *star* and C:\\path." in kb.chunks["content"].iloc[0]
