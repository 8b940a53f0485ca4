"""The offline entity graph on technical text (issue 31): identifiers, noise, acronyms, types, graph_report."""

from __future__ import annotations

import crux_nb
from crux_nb.extract.report import HUB_SHARE, graph_report, suspicious_alias
from crux_nb.models.offline_code import acronym_definitions, code_entities, code_spans, mask_noise
from crux_nb.models.offline_extract import extract_entities

DOC = """# Mapping access

Use `dict.get()` to read a key; `dict.get` returns None when the key is missing.
A subclass may define `__missing__()`, and dict.setdefault() inserts a default.
Run the tool with `--verbose` or `-v`; the `async with` statement also applies.
The `Path` class is not the `path` argument; see os.path.join for joining. A `Path` joins a `path`.
<!-- YAML
added: v1.0
-->
See https://example.org/Docs/Page and Section 24.3 for details, or /usr/lib/Python3/Site.
"""


def _entities(text: str) -> dict[str, str | None]:
    out = extract_entities([{"id": "c1", "text": text}])
    return {e["name"]: e.get("type") for e in out["entities"]}


def test_identifiers_in_code_spans_and_prose_are_typed_code_or_option():
    found = _entities(DOC)
    for name in ("dict.get", "__missing__", "dict.setdefault", "async with", "os.path.join", "Path", "path"):
        assert found.get(name) == "code", (name, found.get(name))
    assert found.get("--verbose") == "option" and found.get("-v") == "option"
    assert "dict.get()" not in found  # the call form folds into the name


def test_markup_noise_names_nothing():
    found = _entities(DOC)
    assert not {"YAML", "Section", "Docs", "Page", "Site"} & set(found), found
    assert not any("24.3" in n for n in found)
    masked = mask_noise("a <!-- YAML --> b https://x.org/Y c")
    assert len(masked) == len("a <!-- YAML --> b https://x.org/Y c") and "YAML" not in masked and "x.org" not in masked


def test_identifier_mentions_link_prose_and_code_spans_case_sensitively():
    kb = crux_nb.knowledge_base(id="tech")
    kb.add_text("a.md", "Call `dict.get()` first.\n\n" + "Filler words here. " * 80 + "\n\nThen dict.get again.")
    kb.add_text("b.md", "The `Path` object.\n\nThe `path` string.\n\nAnother `Path` and `path` use.")
    kb.extract_entities()
    ents = kb.entities.set_index("canonical_name")
    assert ents.loc["dict.get", "type"] == "code"
    assert ents.loc["Path", "entity_id"] != ents.loc["path", "entity_id"]
    mentions = kb.edges[(kb.edges["type"] == "mentions") & (kb.edges["to_ref"] == ents.loc["dict.get", "ref"])]
    refs = kb.chunks.loc[kb.chunks["source_id"] == "a.md", "ref"].tolist()
    assert len(refs) >= 3 and set(mentions["from_ref"]) == {refs[0], refs[-1]}  # the code span and the prose


def test_placeholders_and_plain_prose_quotes_are_not_identifiers():
    grammar = 'In simple terms "P1 | P2" tries "P1", then "P2"; "NAME1.NAME2" and "CLS(P1, attr=P2)" match.'
    types, _pos, _masked, _tech = code_entities([grammar])
    assert not {"P1", "P2", "NAME1.NAME2", "CLS"} & set(types), types
    story = '"Humbug!" said Scrooge. "Bah, it is Christmas Eve, you know." "A merry Christmas, uncle!"'
    types, _pos, _masked, technical = code_entities([story * 3])
    assert types == {} and not technical


def test_acronyms_merge_only_when_the_text_defines_them():
    text = ("The Application Programming Interface (API) is stable. The API and the CPU differ. "
            "The CPU runs the API. The Python API is documented.")
    out = extract_entities([{"id": "c1", "text": text}])
    by_name = {e["name"]: set(e["aliases"]) for e in out["entities"]}
    api = next(n for n, a in by_name.items() if n == "API" or "API" in a)
    assert "CPU" not in by_name[api] and "CPU" in by_name
    assert acronym_definitions(text) == {"API": "Application Programming Interface"}
    assert acronym_definitions("the Graphics Processing Unit (CPU)") == {}


def test_types_from_context_cues():
    text = ("They met Mr. Ada Fenwick and Dick Wilkins in London. \"Yes,\" said Wilkins. They walked to Camden Town "
            "on Christmas Eve and spoke of JavaScript and the HTTP protocol.")
    found = _entities(text)
    assert [t for n, t in found.items() if "Fenwick" in n] == ["person"], found
    assert found["Dick Wilkins"] == "person" and found["Camden Town"] == "place"
    assert found["Christmas Eve"] == "event" and found["JavaScript"] == "product" and found["HTTP"] == "concept"


def test_suspicious_alias_rule():
    assert suspicious_alias("API", "CPU") and suspicious_alias("API", "JavaScript")
    assert not suspicious_alias("Application Programming Interface", "API")
    assert not suspicious_alias("Scrooge", "Mr. Scrooge") and not suspicious_alias("ABC", "ABCs")


def test_graph_report_frame_repr_and_html():
    kb = crux_nb.knowledge_base(id="rep")
    for i in range(60):
        kb.add_text(f"d{i}.md", f"We run Beacon <b>{i}</b> with `cfg_{i % 7}` here. Note {i}." + (" Ada Lovelace met Charles Babbage." if i % 10 == 0 else ""))
    kb.extract_entities(progress=False)
    report = kb.graph_report(top=3)
    frame = report.to_frame()
    assert list(frame.columns) == ["kind", "entity", "value", "detail"]
    hubs = frame[frame["kind"] == "hub"]
    assert len(hubs) == 3 and hubs["value"].is_monotonic_decreasing
    assert hubs.iloc[0]["entity"] == "Beacon" and hubs.iloc[0]["value"] > HUB_SHARE and report.hubs == ["Beacon"]
    types = frame[frame["kind"] == "type"].set_index("entity")["value"]
    assert types.sum() == report.n_entities == len(kb.entities)
    assert 0.0 <= report.untyped_share <= 1.0 and "untyped=" in repr(report)
    html = report._repr_html_()
    assert html == kb.graph_report(top=3)._repr_html_() and "<script" not in html and "Beacon" in html
    frame.loc[0, "entity"] = "changed"  # a copy: the report is unchanged
    assert report.to_frame().loc[0, "entity"] == "Beacon"


def test_graph_report_escapes_user_text():
    kb = crux_nb.knowledge_base(id="esc")
    kb.add_text("a.md", "Use `a_b<script>` and `<img>` in `x_y`; then `x_y` again.")
    kb.extract_entities()
    html = graph_report(kb.state)._repr_html_()
    assert "<script>" not in html and "<img>" not in html


REST = """add_library
-----------

.. include:: DEPRECATED_POLICY_VERSIONS.rst

.. _`Target Usage Requirements`:

Set the :prop_tgt:`EXCLUDE_FROM_ALL` property; see |FIND_PACKAGE_ROOT_PREFIX_PATH_XXX| and
``CMAKE_LINK_GROUP_USING_<FEATURE>``, or <PackageName>_FIND_VERSION_MAJOR, and ``BUILD_SHARED_LIBS``.

.. signature::
  add_library(<name> [<type>])
  :target: normal

For example::

  ctest_start(GROUP SomeGroup QUIET APPEND)
  Template Parameter I2

>>> d = {"one": 1, "two": 2}
>>> del d["two"]

The Release Manager reviews it. | a | b | cells stay.
"""


def test_rest_markup_names_nothing():
    masked = mask_noise(REST)
    assert len(masked) == len(REST) and masked.count("\n") == REST.count("\n")
    for markup in ("include", "DEPRECATED_POLICY_VERSIONS.rst", "Target Usage Requirements", "prop_tgt",
                   "FIND_PACKAGE_ROOT_PREFIX_PATH_XXX", "CMAKE_LINK_GROUP_USING_", "_FIND_VERSION_MAJOR", "signature",
                   ":target:"):
        assert markup not in masked, markup
    assert "EXCLUDE_FROM_ALL" in masked and "| a | b |" in masked  # a role's content and a table's cells stay
    found = _entities(REST)
    assert {"EXCLUDE_FROM_ALL", "BUILD_SHARED_LIBS"} <= set(found) and "Release Manager" in found
    for junk in ("prop_tgt", "CMAKE_LINK_GROUP_USING_", "_FIND_VERSION_MAJOR", "FIND_PACKAGE_ROOT_PREFIX_PATH_XXX",
                 "DEPRECATED_POLICY_VERSIONS.rst", "GROUP SomeGroup QUIET APPEND", "SomeGroup", "I2",
                 "Template Parameter", "two"):
        assert not any(junk in name for name in found), (junk, found)


def test_code_blocks_hold_no_code_spans():
    text = 'See "d.get_item" and "x_y". More "a.b_c" words.\n\n>>> d = {"one": 1, "x_z": 2}\n\nExample::\n\n  ``q_r``\n'
    spans = [content for _a, _b, content in code_spans(text, quoted=True)]
    assert spans == ["d.get_item", "x_y", "a.b_c"]


# offline model v7: CMake help as the chunker hands it over -- a paragraph's first line has lost its indentation
CHUNKED = """Path Queries
^^^^^^^^^^^^

These expressions query a path. The Release Manager reads them.

.. code-block:: cmake

find_package(Stats 2.6.4 REQUIRED)
  target_link_libraries(ClimbingStats PUBLIC Stats::Types)

Code Injection
^^^^^^^^^^^^^^

The Release Manager reviews code injection and the query paths of every path query.

.. signature::
  list(TRANSFORM <list> <ACTION> REGEX <regex>)

  Transforms the list; the Release Manager approves each query. Call frobnicate_all() on it.

It prints::

Immediate Message
  Deferred Message

A call names keywords and values: ctest_start(GROUP SomeGroup QUIET APPEND) or
project(MyProject NONE); the Release Manager reviews each call and its path queries.
"""


def test_rest_section_titles_read_as_headings():
    masked = mask_noise(CHUNKED)
    assert "^^^" not in masked and len(masked) == len(CHUNKED)  # the adornment line is markup
    found = _entities(CHUNKED)
    assert "Release Manager" in found
    for heading in ("Path Queries", "Code Injection"):  # a title of common words names nothing
        assert heading not in found, (heading, found)


def test_code_directive_and_literal_bodies_are_code_though_dedented():
    masked = mask_noise(CHUNKED)
    assert "Stats 2.6.4" not in masked and "ClimbingStats" not in masked  # a code-block's body, first line dedented
    assert "TRANSFORM" not in masked  # a signature's call ...
    assert "Transforms the list" in masked and "frobnicate_all" in masked  # ... but not its description
    found = _entities(CHUNKED)
    assert "frobnicate_all" in found
    for junk in ("Stats 2.6.4", "Stats", "TRANSFORM REGEX", "Immediate Message Deferred Message", "Immediate Message"):
        assert junk not in found, (junk, found)


def test_a_calls_arguments_are_no_run_of_names():
    found = _entities(CHUNKED)
    for junk in ("GROUP SomeGroup QUIET APPEND", "GROUP SomeGroup", "MyProject NONE"):
        assert junk not in found, (junk, found)
    # prose outside a call still joins a capitalised run, and a text without code has no calls to split
    assert "Release Manager" in found
    novel = "The clerk wrote it down(Ebenezer Scrooge, of Scrooge and Marley) and Ebenezer Scrooge signed.\n" * 3
    assert "Ebenezer Scrooge" in _entities(novel)
