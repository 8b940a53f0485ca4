"""Offline model v8 (issue 31): metavariables, filler names, reST references, table gaps, noun + verb phrases.

Each test feeds the rule extractor a small technical text with one kind of junk the v7 rules kept (CMake's help
pages showed them) beside a real name of the same shape, so a rule that drops both fails too.
"""

from __future__ import annotations

from crux_nb.models.offline import OFFLINE_MODEL_VERSION
from crux_nb.models import offline_code
from crux_nb.models.offline_code import code_entities, mask_noise
from crux_nb.models.offline_extract import extract_entities

FILLER = "The sentence is long enough to count as prose in a technical document about the build system. " * 2


def _names(*texts: str) -> dict[str, str]:
    out = extract_entities([{"id": f"c{i}", "text": t} for i, t in enumerate(texts)])
    return {e["name"]: e["type"] for e in out["entities"]}


def test_version_is_8():
    assert OFFLINE_MODEL_VERSION == "8"


def test_a_metavariable_in_angle_brackets_is_no_identifier_unless_the_input_calls_it():
    text = ("Compare two files:\n\n.. code-block:: cmake\n\n  if(<file1> IS_NEWER_THAN <file2>)\n  list(APPEND <list> x)\n\n"
            "True if ``file1`` is newer than ``file2``. The ``list`` command, ``list(APPEND x)``, and ``$<CONFIG:cfgs>`` "
            "with ``cfgs`` a list of configurations; see ``file1``, ``list`` and ``cfgs`` again, and ``IS_NEWER_THAN``.\n")
    metavariables = offline_code.metavariables  # new in v8 (looked up here: the other tests run on v7's code too)
    assert metavariables([text]) == {"file1", "file2", "list", "cfgs"}
    found = _names(text)
    assert "file1" not in found and "file2" not in found and "cfgs" not in found
    assert found.get("list") == "code" and found.get("IS_NEWER_THAN") == "code"  # called: list(APPEND ...)
    assert metavariables(["<b>bold</b> and <code>x</code>"]) == frozenset()  # a tag closes


def test_a_name_with_a_filler_part_is_a_placeholder():
    text = ("Modules define ``Xxx_LIBRARIES`` and ``Xxx_VERSION_VV``; a provider is named ``xxx_provide_dependency()``. "
            "Use ``CMAKE_CXX_FLAGS`` and ``find_package()``.\n")
    types = code_entities([text])[0]
    assert "CMAKE_CXX_FLAGS" in types and "find_package" in types
    assert not {"Xxx_LIBRARIES", "Xxx_VERSION_VV", "xxx_provide_dependency"} & set(types)


def test_a_title_case_rest_reference_is_blanked_and_a_term_reference_stays_code():
    text = ("The options are described in `Options`_ below; see :ref:`Path Normalization <Normalization>` and "
            "`Path Structure And Terminology`_. A :ref:`bracket argument` and `RELATIVE_PART`_ stay. "
            "Other options follow.\n")
    masked = mask_noise(text)
    assert "Options" not in masked and "Normalization" not in masked and "Terminology" not in masked
    assert "bracket argument" in masked and "RELATIVE_PART" in masked
    found = _names(text)
    assert "Options" not in found and "Path Structure And Terminology" not in found
    assert "RELATIVE_PART" in found


def test_a_noun_and_its_verb_are_no_concept_but_a_plural_compound_is():
    texts = [FILLER + "The module provides the macro. The operation fails, and a file set is added. "
             "It provides a way out; the file sets of a target are listed. The operation fails again. "
             "The module is here, the operation is done and the file is read. If it fails, stop.\n"
             for _ in range(3)]
    texts.append("Use ``x_y`` here.\n" + FILLER * 30)  # a long, technical input: the noun-compound tests apply
    found = _names(*texts)
    assert "module provides" not in found and "operation fails" not in found
    assert found.get("file sets") == "concept"


def test_table_columns_and_a_title_with_function_words_are_no_name():
    text = ("Variables that Provide Information\n\n"
            "The table:\n\n Entry      Convention\n Cache      Stored\n\nWe use the Entry and the Convention here.\n"
            + FILLER * 30)
    found = _names(text)
    assert "Entry Convention" not in found and "Provide Information" not in found


def test_a_common_word_before_an_acronym_leaves_the_acronym():
    text = ("Hash files.\n\nCreate SHA512 checksum of files. Then create one per file.\n" + FILLER * 30)
    found = _names(text)
    assert "Create SHA512" not in found and "SHA512" in found


def test_file_names_templates_and_short_options_name_no_fragment():
    text = ("Headers such as ``[[\"other_header.h\"]]`` are kept. A target named ``test_prep/<name>`` is made. "
            "Run ``ctest`` as ctest -SP script; the option is short. Use ``snake_case_name`` too.\n")
    found = _names(text)
    assert "other_header" not in found and "test_prep" not in found and "SP" not in found
    assert found.get("snake_case_name") == "code"
