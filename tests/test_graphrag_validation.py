"""GraphRAG import validation (issue 15): bad values raise an InputError naming table, column and row; rows the
import leaves out or completes are counted in ``kb.graphrag.warnings``."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crux_nb.errors import InputError
from crux_nb.io import read_graphrag

from graphrag_tiny import tiny_tables


def write(folder: Path, tables: dict) -> Path:
    folder.mkdir(parents=True)
    for name, frame in tables.items():
        frame.to_parquet(folder / f"{name}.parquet", index=False)
    return folder


def _with(table: str, column: str, values) -> dict:
    tables = tiny_tables()
    frame = tables[table].copy()
    frame[column] = values
    tables[table] = frame
    return tables


@pytest.mark.parametrize("values,said", [
    (["A one.", None, "B one.", "B two."], "it is missing"),
    ([None] * 4, "it is missing"),
    ([1, 2, 3, 4], "it is a int"),
    (["A one.", "   ", "B one.", "B two."], "the text is empty"),
    (["A one.", "A\x00two", "B one.", "B two."], "binary"),
], ids=["one-null", "all-null", "integers", "blank", "nul"])
def test_bad_text_unit_text_names_table_column_and_row(tmp_path, values, said):
    with pytest.raises(InputError) as info:
        read_graphrag(write(tmp_path / "g", _with("text_units", "text", values)))
    message = str(info.value)
    assert "'text_units.parquet'" in message and "column 'text'" in message and said in message
    row = next(i for i, v in enumerate(values) if not (isinstance(v, str) and v.strip() and "\x00" not in v))
    assert f"row {row}" in message and info.value.code == "graphrag_invalid_value"


def test_text_unit_ids_with_control_characters_are_refused(tmp_path):
    ids = ["tu-a1", "tu-a2\x00", "tu-b1", "tu-b2"]
    tables = _with("text_units", "id", ids)
    tables["documents"]["text_unit_ids"] = [["tu-a1", "tu-a2\x00"], ["tu-b1", "tu-b2"]]
    tables["text_units"]["document_id"] = ["doc-a", "doc-a", "doc-b", "doc-b"]
    with pytest.raises(InputError, match=r"'text_units.parquet', column 'id', row 1: .*control characters"):
        read_graphrag(write(tmp_path / "g", tables))


def test_empty_text_units_is_refused(tmp_path):
    tables = tiny_tables()
    tables["text_units"] = tables["text_units"].iloc[0:0]
    with pytest.raises(InputError, match="'text_units.parquet' has no rows"):
        read_graphrag(write(tmp_path / "g", tables))


@pytest.mark.parametrize("table", ["communities", "community_reports"])
def test_negative_levels_are_refused(tmp_path, table):
    with pytest.raises(InputError, match=rf"'{table}.parquet', column 'level', row 1: level -5 is negative"):
        read_graphrag(write(tmp_path / "g", _with(table, "level", [0, -5, 1])))


def _warnings(kb) -> dict:
    return {w.code: w for w in kb.graphrag.warnings}


def test_the_tiny_index_warns_about_its_placeholder_entity(tmp_path):
    kb = read_graphrag(write(tmp_path / "g", tiny_tables()))
    found = _warnings(kb)
    assert set(found) == {"placeholder_entities", "invalid_weights"}  # and its relationship of weight 0.0
    assert found["invalid_weights"].rows == (1,)
    w = found["placeholder_entities"]
    assert (w.table, w.column, w.count, w.rows) == ("relationships.parquet", "source/target", 1, (1,))
    assert kb.graphrag.counts["placeholder_entities"] == 1 and "row(s) (1)" in str(w)


def test_unknown_entity_text_units_are_counted_warnings(tmp_path):
    tables = _with("entities", "text_unit_ids", [["tu-a1", "tu-zz"], ["nope"], ["tu-b1"]])
    kb = read_graphrag(write(tmp_path / "g", tables))
    found = _warnings(kb)
    unknown, unmentioned = found["unknown_text_unit_ids"], found["entities_without_mentions"]
    assert (unknown.table, unknown.column, unknown.count, unknown.rows) == ("entities.parquet", "text_unit_ids", 2,
                                                                              (0, 1))
    assert (unmentioned.count, unmentioned.rows) == (1, (1,))
    assert kb.graphrag.counts["unknown_text_unit_ids"] == 2


def test_relationships_without_known_text_units_are_counted(tmp_path):
    tables = _with("relationships", "text_unit_ids", [["tu-a2"], ["ghost"]])
    kb = read_graphrag(write(tmp_path / "g", tables))
    w = _warnings(kb)["relationships_without_evidence"]
    assert (w.table, w.count, w.rows) == ("relationships.parquet", 1, (1,))
    assert kb.graphrag.counts["related"] == 1


def test_documents_without_text_units_are_left_out_and_counted(tmp_path):
    tables = tiny_tables()
    docs = tables["documents"]
    extra = pd.DataFrame({"id": ["doc-c"], "human_readable_id": [2], "title": ["c.txt"], "text": ["C."],
                          "text_unit_ids": [np.array([], dtype=object)], "creation_date": ["2025-01-01"]})
    tables["documents"] = pd.concat([docs, extra], ignore_index=True)
    kb = read_graphrag(write(tmp_path / "g", tables))
    assert sorted(kb.documents["source_id"]) == ["a.txt", "b.txt"]
    w = _warnings(kb)["documents_without_text_units"]
    assert (w.table, w.count, w.rows) == ("documents.parquet", 1, (2,))
    assert (kb.documents["n_chunks"] > 0).all()
