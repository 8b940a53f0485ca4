"""OpenAIEmbedder against a local HTTP stub (error paths, batching, secrets) and a real llama.cpp server."""

from __future__ import annotations

import numpy as np
import pytest

from crux_nb.embeddings import OpenAIEmbedder, embed_chunks
from crux_nb.errors import ModelError, ParameterError

KEY = "sk-test-SECRET-0123456789abcdef"


def embedder(fake, **kwargs):
    options = dict(base_url=fake.base_url, model="embed-model", api_key=KEY, timeout=5, max_retries=2, backoff=0.01)
    options.update(kwargs)
    return OpenAIEmbedder(**options)


def vectors_body(rows, *, shuffle=False):
    data = [{"object": "embedding", "index": i, "embedding": list(map(float, r))} for i, r in enumerate(rows)]
    return {"object": "list", "data": data[::-1] if shuffle else data, "model": "embed-model"}


def test_request_shape_order_normalisation_and_auth(fake_openai):
    fake_openai.script(fake_openai.Reply(200, vectors_body([[3, 4], [0, 2]], shuffle=True)))
    out = embedder(fake_openai, dim=2).embed(["alpha", "beta"])
    path, headers, body = fake_openai.requests[0]
    assert path == "/v1/embeddings" and headers["Authorization"] == f"Bearer {KEY}"
    assert body == {"model": "embed-model", "input": ["alpha", "beta"], "encoding_format": "float"}
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 1.0]], rtol=1e-6)  # by index, L2-normalised


def test_batches_and_dimension_probe(fake_openai):
    fake_openai.script(*[fake_openai.Reply(200, vectors_body([[1, 0, 0]] * n)) for n in (1, 2, 2, 1)])
    emb = embedder(fake_openai, batch_size=2)
    assert emb.dim == 3  # one probe call
    assert emb.embed(["a", "b", "c", "d", "e"]).shape == (5, 3)
    assert [len(body["input"]) for _, _, body in fake_openai.requests] == [1, 2, 2, 1]


def test_429_then_200_is_retried(fake_openai):
    fake_openai.script(fake_openai.Reply(429, {"error": {"message": "slow"}}, {"Retry-After": "0"}),
                       fake_openai.Reply(200, vectors_body([[1, 1]])))
    assert embedder(fake_openai, dim=2).embed(["x"]).shape == (1, 2)
    assert len(fake_openai.requests) == 2


def test_5xx_until_the_last_retry_is_a_clear_error(fake_openai):
    fake_openai.script(*[fake_openai.Reply(503, {"error": {"message": "down"}}) for _ in range(3)])
    with pytest.raises(ModelError) as info:
        embedder(fake_openai, dim=2, max_retries=2).embed(["x"])
    err = info.value
    assert err.code == "model_http_error" and err.status == 503 and err.attempts == 3
    assert "/v1/embeddings" in str(err) and "after 3 attempt(s)" in str(err)


def test_client_error_is_not_retried_and_never_echoes_the_key(fake_openai):
    fake_openai.script(fake_openai.Reply(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}))
    with pytest.raises(ModelError) as info:
        embedder(fake_openai, dim=2).embed(["x"])
    assert len(fake_openai.requests) == 1 and info.value.status == 401
    assert KEY not in str(info.value) + repr(info.value) and "sk-test" not in str(info.value)


def test_timeout_is_a_timeout_error(fake_openai):
    fake_openai.script(fake_openai.Reply(200, vectors_body([[1, 1]]), delay=2.0))
    with pytest.raises(ModelError) as info:
        embedder(fake_openai, dim=2, timeout=0.2, max_retries=0).embed(["x"])
    assert info.value.code == "model_timeout"


@pytest.mark.parametrize("body", [{"data": []}, {"data": [{"index": 0}]}, {"data": [{"index": 0, "embedding": "no"}]},
                                  {"nothing": True}])
def test_malformed_bodies_are_bad_responses(fake_openai, body):
    fake_openai.script(fake_openai.Reply(200, body))
    with pytest.raises(ModelError) as info:
        embedder(fake_openai, dim=2).embed(["x"])
    assert info.value.code == "model_bad_response"


def test_wrong_dimension_is_a_bad_response(fake_openai):
    fake_openai.script(fake_openai.Reply(200, vectors_body([[1, 2, 3]])))
    with pytest.raises(ModelError, match="dim is 2"):
        embedder(fake_openai, dim=2).embed(["x"])


def test_secret_stays_out_of_repr_and_fingerprint(fake_openai):
    emb = embedder(fake_openai, dim=2)
    other = embedder(fake_openai, dim=2, api_key="sk-another-key-000000")
    assert KEY not in repr(emb) + str(emb) + emb.fingerprint
    assert emb.fingerprint == other.fingerprint  # the key does not change the vectors
    assert emb.fingerprint != embedder(fake_openai, dim=2, model="other").fingerprint


def test_parameters_are_checked():
    with pytest.raises(ParameterError, match="base_url"):
        OpenAIEmbedder(base_url="ftp://x", model="m")
    with pytest.raises(ParameterError, match="batch_size"):
        OpenAIEmbedder(base_url="http://127.0.0.1:1/v1", model="m", batch_size=0)


def test_a_failing_server_leaves_the_knowledge_base_unchanged(fake_openai):
    import crux_nb

    kb = crux_nb.knowledge_base(id="fail")
    kb.add_text("a.md", "# A\n\nRelease planning starts in March.")
    before = kb.state
    fake_openai.script(*[fake_openai.Reply(500, {"error": {"message": "boom"}}) for _ in range(3)])
    with pytest.raises(ModelError):
        embed_chunks(kb, embedder(fake_openai, dim=2))
    assert kb.state is before and len(kb.state.embeddings) == 0


@pytest.mark.server
def test_real_llama_server_embeddings(llama_embed_url):
    emb = OpenAIEmbedder(base_url=llama_embed_url, model="smollm2", timeout=120, max_retries=1)
    texts = ["Release planning starts in March.", "The launch plan moved to April.", "Bananas are yellow."]
    first = emb.embed(texts)
    assert first.shape == (3, emb.dim) and emb.dim >= 64 and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-4)
    np.testing.assert_allclose(emb.embed(texts), first, atol=1e-4)  # deterministic
    assert len({tuple(np.round(v, 3)) for v in first}) == 3  # distinct texts, distinct vectors
