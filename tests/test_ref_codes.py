"""``crux_nb.graph.ref_codes.sorted_codes``: one factorisation of the graph's refs, against Python's own sort."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from crux_nb.graph.ref_codes import sorted_codes


def test_every_chunk_comes_back_with_the_whole_dictionary():
    """What ``sorted_codes`` relies on to read one dictionary for all chunks (a pyarrow that changes it fails here)."""
    encoded = pc.dictionary_encode(pa.chunked_array([pa.array(["b", "a"]), pa.array(["c", "a", "d"])]))
    assert [c.dictionary.to_pylist() for c in encoded.chunks] == [["b", "a", "c", "d"]] * 2


@pytest.mark.parametrize("seed", range(20))
def test_codes_are_positions_in_the_sorted_distinct_members(seed):
    rng = np.random.default_rng(seed)
    alphabet = ["a", "b", "é", "ß", "chunk:", "chunk;", "Z", "a:b", "", "日本"]

    def column(n, chunked):
        values = ["".join(rng.choice(alphabet, size=int(rng.integers(1, 3)))) for _ in range(n)]
        if chunked and n > 1:  # a Series over several Arrow chunks, as a concatenation of read parts gives
            half = n // 2
            return pd.concat([pd.Series(values[:half], dtype="str"), pd.Series(values[half:], dtype="str")],
                             ignore_index=True)
        return pd.Series(values, dtype="str") if rng.integers(2) else np.array(values, dtype=object)

    members = [column(int(rng.integers(0, 30)), bool(rng.integers(2))) for _ in range(3)]
    lookups = [column(int(rng.integers(0, 30)), bool(rng.integers(2))) for _ in range(2)]
    lookups.append(pd.Series(["a", None], dtype="str"))  # a missing value is no member
    refs, member_codes, lookup_codes = sorted_codes(members, lookups)
    expected = sorted({v for m in members for v in list(m)})
    assert refs.tolist() == expected and all(type(r) is str for r in refs.tolist())
    position = {r: i for i, r in enumerate(expected)}
    for values, codes in zip(members, member_codes):
        assert codes.dtype == np.int64 and codes.tolist() == [position[v] for v in list(values)]
    for values, codes in zip(lookups, lookup_codes):
        assert codes.tolist() == [position.get(v, -1) if isinstance(v, str) else -1 for v in list(values)]
