"""Embedders and chunk vectors: cached per content and fingerprint, persisted, dropped on remove, all-or-nothing."""

from __future__ import annotations

import numpy as np
import pytest

import crux_nb
from crux_nb.embeddings import (
    Embedder,
    FunctionEmbedder,
    StaticEmbedder,
    check_embedder,
    chunk_matrix,
    embed_chunks,
)
from crux_nb.errors import CruxError, ModelError, ParameterError, StorageError


class Counting:
    """A toy embedder that records every text it is asked to embed."""

    def __init__(self, dim=3, fingerprint="count-v1"):
        self.name, self.fingerprint, self.dim, self.seen = "counting", fingerprint, dim, []

    def embed(self, texts):
        self.seen.extend(texts)
        return np.array([[len(t), t.count("e") + 1, 1.0][: self.dim] for t in texts])


def make_kb():
    kb = crux_nb.knowledge_base(id="emb")
    kb.add_text("a.md", "# Alpha\n\nRelease planning starts in March.\n\n## Owners\n\nPriya owns the plan.")
    kb.add_text("b.md", "# Beta\n\nThe billing service had an incident.")
    return kb


def test_static_embedder_is_deterministic_normalised_and_semantic():
    emb = StaticEmbedder()
    assert isinstance(emb, Embedder) and emb.dim == 256
    texts = ["release planning schedule", "planning the release", "yellow bananas"]
    a, b = emb.embed(texts), StaticEmbedder().embed(texts)
    assert a.dtype == np.float32 and a.shape == (3, 256)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)
    assert float(a[0] @ a[1]) > float(a[0] @ a[2])
    assert StaticEmbedder(dim=64).fingerprint != emb.fingerprint and StaticEmbedder(dim=64).embed(["x"]).shape == (1, 64)
    with pytest.raises(ParameterError, match="dim"):
        StaticEmbedder(dim=100)


def test_vectors_are_computed_once_per_content():
    kb, emb = make_kb(), Counting()
    first = embed_chunks(kb, emb)
    assert first.embedded == len(kb.chunks) and first.reused == 0
    assert sorted(emb.seen) == sorted(kb.chunks["content"])
    emb.seen.clear()
    assert embed_chunks(kb, emb).embedded == 0 and emb.seen == []
    kb.add_text("b.md", "# Beta\n\nThe billing service had two incidents.")  # changed source
    kb.add_text("a.md", "# Alpha\n\nRelease planning starts in March.\n\n## Owners\n\nPriya owns the plan.")  # same
    again = embed_chunks(kb, emb)
    assert emb.seen == kb.chunks.loc[kb.chunks["source_id"] == "b.md", "content"].tolist() and again.embedded == 1
    other = Counting(fingerprint="count-v2")
    assert embed_chunks(kb, other).embedded == len(kb.chunks)  # another fingerprint: its own vectors


def test_vectors_are_dropped_with_their_chunks():
    kb, emb = make_kb(), Counting()
    embed_chunks(kb, emb)
    n_a = int((kb.chunks["source_id"] == "a.md").sum())
    before = len(kb.state.embeddings)
    kb.remove("a.md")
    assert len(kb.state.embeddings) == before - n_a
    assert len(kb.state.embeddings) > 0
    kb.add_text("b.md", "# Beta\n\nEntirely new text.")  # the old content's vectors go with it
    assert len(kb.state.embeddings) == 0


def test_failing_or_broken_embedders_leave_the_kb_unchanged():
    kb = make_kb()
    before = kb.state

    def boom(texts):
        raise ModelError("embedding service down", code="model_connection_error")

    with pytest.raises(ModelError):
        embed_chunks(kb, FunctionEmbedder(boom, dim=2))
    with pytest.raises(ModelError, match="shape"):
        embed_chunks(kb, FunctionEmbedder(lambda texts: np.ones((len(texts), 3)), dim=2))
    with pytest.raises(ModelError, match="NaN"):
        embed_chunks(kb, FunctionEmbedder(lambda texts: np.full((len(texts), 2), np.nan), dim=2))
    assert kb.state is before
    with pytest.raises(ParameterError, match="embedder"):
        check_embedder(object())


def test_vectors_persist_with_checksums(tmp_path):
    kb, emb = make_kb(), Counting()
    embed_chunks(kb, emb)
    kb.save(tmp_path / "kb")
    opened = crux_nb.open(tmp_path / "kb")
    assert opened.state.embeddings.equals(kb.state.embeddings)
    emb.seen.clear()
    assert embed_chunks(opened, emb).embedded == 0 and emb.seen == []
    np.testing.assert_array_equal(chunk_matrix(opened.state, emb), chunk_matrix(kb.state, emb))
    part = next((tmp_path / "kb").glob("generations/*/embeddings/part-00000.parquet"))
    part.write_bytes(part.read_bytes()[:-8] + b"garbage!")
    with pytest.raises(StorageError, match="checksum"):
        crux_nb.open(tmp_path / "kb")


def test_chunk_matrix_is_aligned_normalised_and_fills_missing_vectors():
    kb, emb = make_kb(), Counting()
    matrix = chunk_matrix(kb.state, emb)  # nothing stored: embedded on the fly, not committed
    assert matrix.shape == (len(kb.chunks), 3) and len(kb.state.embeddings) == 0
    raw = emb.embed(kb.chunks["content"].tolist())
    np.testing.assert_allclose(matrix, raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=1e-6)
    assert chunk_matrix(kb.state, emb) is matrix  # once per state
    with pytest.raises(ValueError):
        matrix[0, 0] = 1.0  # read-only: shared by every query


def test_stored_vectors_of_another_dimension_are_an_error():
    kb = make_kb()
    embed_chunks(kb, Counting(dim=3, fingerprint="same"))
    with pytest.raises(CruxError, match="dim"):
        chunk_matrix(kb.state, Counting(dim=2, fingerprint="same"))


def test_function_embedder_example_from_the_readme():
    def hashed_words(texts):
        out = np.zeros((len(texts), 16))
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, sum(map(ord, word)) % 16] += 1
        return out

    emb = FunctionEmbedder(hashed_words, dim=16, name="hashed-words", version="1")
    kb = make_kb()
    assert embed_chunks(kb, emb).embedded == len(kb.chunks)
    assert emb.fingerprint != FunctionEmbedder(hashed_words, dim=16, name="hashed-words", version="2").fingerprint


def test_stored_vectors_stay_with_their_content_whatever_the_order():
    emb = StaticEmbedder(dim=64)
    kb = crux_nb.knowledge_base(id="order")
    for i, text in enumerate(["zebra stripes", "apple pie", "mountain river", "quantum physics", "jazz music"]):
        kb.add_text(f"{i}.md", text)
    direct = emb.embed(kb.chunks["content"].tolist())
    embed_chunks(kb, emb)  # stored sorted by content hash, not in chunk order
    np.testing.assert_allclose(chunk_matrix(kb.state, emb), direct, atol=1e-6)


def test_a_change_during_embedding_is_not_overwritten():
    kb = make_kb()

    def sneaky(texts):
        kb.add_text("c.md", "# Gamma\n\nAdded while embedding.")  # another writer moves the state on
        return np.ones((len(texts), 2))

    with pytest.raises(CruxError) as info:
        embed_chunks(kb, FunctionEmbedder(sneaky, dim=2, name="sneaky"))
    assert info.value.code == "state_changed"
    assert "c.md" in set(kb.documents["source_id"]) and len(kb.state.embeddings) == 0
