"""``EntityNameIndex``'s two passes (plain names at once, then code-typed and aliased entities) against the
one loop over every label it replaced."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crux_nb.retrieval.expand.entity_match import CODE_TYPES, EntityNameIndex, normalise_words


def _one_loop(entities: pd.DataFrame) -> tuple[dict, dict]:
    names, code = {}, {}
    for eid, name, aliases, kind in zip(entities["entity_id"], entities["canonical_name"], entities["aliases"],
                                        entities["type"]):
        for label in (name, *aliases):
            if not isinstance(label, str):
                continue
            if kind in CODE_TYPES:
                code.setdefault(label.strip().removesuffix("()"), set()).add(eid)
                if " " not in label.strip():
                    continue
            words = normalise_words(label)
            if words:
                names.setdefault(words, set()).add(eid)
    return names, code


@pytest.mark.parametrize("seed", range(15))
def test_the_index_holds_what_one_loop_over_every_label_gives(seed):
    rng = np.random.default_rng(seed)
    labels = ["Ada Lovelace", "ada  LOVELACE", "dict.get()", "async with", "Scrooge", "--flag", "", "  ", "Ünï-code",
              "Marley's ghost", "x"]
    rows = []
    for i in range(int(rng.integers(0, 40))):
        name = labels[int(rng.integers(len(labels)))] if rng.integers(6) else None
        aliases = tuple(labels[int(j)] for j in rng.integers(0, len(labels), size=int(rng.integers(0, 3))))
        rows.append({"entity_id": f"e{int(rng.integers(12))}", "canonical_name": name, "aliases": aliases,
                     "type": ["person", "code", "option", "concept", None][int(rng.integers(5))]})
    entities = pd.DataFrame(rows, columns=["entity_id", "canonical_name", "aliases", "type"])
    entities = entities.astype({"entity_id": "str", "canonical_name": "str", "type": "str"})
    index = EntityNameIndex(entities)
    names, code = _one_loop(entities)
    assert index.names == names and index.code == code
    assert index.longest == max((len(k) for k in names), default=0)
