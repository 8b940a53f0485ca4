"""Scale-out on a real Dask cluster: ``executor=client`` gives exactly the single-process results.

One module-scoped ``LocalCluster`` (2 worker processes, 1 thread each): tasks, their
closures and models really are pickled to other processes. Skips without
``dask.distributed`` unless ``CRUX_REQUIRE_SYSTEM=1`` (then it fails).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import pickle

import pandas as pd
import pytest

import crux_nb
from crux_nb.datasets import load_sample, sample_path
from crux_nb.errors import CruxError, ModelError, ParameterError
from crux_nb.models import OfflineModel
from crux_nb.models.chat import ChatModel
from crux_nb.retrieval import global_search
from crux_nb.testing import assert_kb_equal

from crux_nb.testing import require_system

HAVE_DASK = importlib.util.find_spec("dask") is not None and importlib.util.find_spec("distributed") is not None
if os.environ.get("CRUX_REQUIRE_SYSTEM") != "1":
    pytest.importorskip("dask.distributed")  # CI (CRUX_REQUIRE_SYSTEM=1) fails in the fixture instead

SECRET = "sk-test-SECRET-123"
Q = "What changed in the launch plan?"


# --------------------------------------------------------------- models that pickle (module level)
class FailingModel:
    """The offline model, except that extraction of one source raises a crux_nb ModelError."""

    def __init__(self, poison: str):
        self.inner = OfflineModel()
        self.poison = poison
        self.name = "failing"
        self.fingerprint = "failing-" + self.inner.fingerprint

    def extract(self, chunks, *, repair=None):
        if any(self.poison in c["text"] for c in chunks):
            raise ModelError(f"upstream refused the batch containing {self.poison!r}", code="model_refused",
                             hint="try another model")
        return self.inner.extract(chunks, repair=repair)

    def write_report(self, community, *, repair=None):
        return self.inner.write_report(community, repair=repair)

    def map_findings(self, query, units, *, repair=None):
        return self.inner.map_findings(query, units, repair=repair)

    def rate(self, query, reports, *, repair=None):
        return self.inner.rate(query, reports, repair=repair)


class PlainFailingModel(FailingModel):
    """Raises a builtin exception instead of a crux_nb one."""

    def extract(self, chunks, *, repair=None):
        if any(self.poison in c["text"] for c in chunks):
            raise KeyError(f"no such thing: {self.poison}")
        return self.inner.extract(chunks, repair=repair)


class ParameterFailingModel(FailingModel):
    """Raises a crux_nb error whose constructor takes several arguments (it must still pickle)."""

    def extract(self, chunks, *, repair=None):
        if any(self.poison in c["text"] for c in chunks):
            raise ParameterError("ParameterFailingModel.extract", "chunks", "chunks without the poison word",
                                 self.poison, hint="remove it")
        return self.inner.extract(chunks, repair=repair)


def describe_model(model) -> tuple[str, bool]:
    """Runs on a worker: the model's class and whether it holds a non-empty key (never the key)."""
    key = model.api_key.reveal() if model.api_key is not None else ""
    return model.__class__.__name__, bool(key) and key.startswith("sk-")


def _scheduler_task_text(dask_scheduler=None) -> str:
    """Everything the scheduler shows about its current tasks (keys, run specs, dependencies)."""
    parts = []
    for key, ts in dask_scheduler.tasks.items():
        parts += [repr(key), repr(ts), str(getattr(ts, "run_spec", "")), repr(getattr(ts, "run_spec", ""))]
    return "\n".join(parts)


# ---------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def client():
    require_system(HAVE_DASK, "dask[distributed] is not installed")
    import dask
    import dask.distributed as distributed

    with dask.config.set({"dataframe.convert-string": False}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                           silence_logs=logging.WARNING)
        client = distributed.Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()


def _communities_kb():
    kb = crux_nb.knowledge_base(id="lumen", communities=crux_nb.communities(model=OfflineModel()))
    kb.add_path(sample_path())
    return kb


@pytest.fixture(scope="module")
def built():
    kb = _communities_kb()
    kb.communities.prepare(progress=False)
    return kb


# ------------------------------------------------------------------------------- tests
def test_cluster_has_two_worker_processes(client):
    info = client.scheduler_info()
    assert len(info["workers"]) == 2
    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids


def test_extract_entities_matches_single_process(client):
    local, remote = load_sample(), load_sample()
    expected = local.extract_entities(progress=False)
    got = remote.extract_entities(progress=False, executor=client)
    assert got.sources_extracted == expected.sources_extracted > 1
    assert (got.entities, got.mentions, got.related) == (expected.entities, expected.mentions, expected.related)
    assert got.calls == expected.calls  # the workers' call records reach the driver's log
    assert_kb_equal(local, remote)


def test_communities_prepare_matches_single_process(client):
    local, remote = _communities_kb(), _communities_kb()
    expected = local.communities.prepare(progress=False)
    got = remote.communities.prepare(progress=False, executor=client)
    assert got.communities == expected.communities > 1
    assert got.reports_written == expected.reports_written > 1
    assert got.generation_id == expected.generation_id
    assert got.calls == expected.calls
    for table in ("communities", "community_members", "reports", "report_findings"):
        left, right = local.communities.frame(table), remote.communities.frame(table)
        assert len(left) > 0, table
        pd.testing.assert_frame_equal(left, right, obj=table)
    assert_kb_equal(local, remote)


def test_global_search_with_small_batches_matches(client, built, monkeypatch):
    step = global_search(model=OfflineModel(), detail="detailed", limit=50)
    expected = built.recipe(steps=[step]).retrieve_with_trace(Q)
    # batching happens in the driver: patching the driver's module is enough (workers never pack)
    import crux_nb.retrieval.globalsearch.descent as gs_map

    monkeypatch.setattr(gs_map, "BATCH_BUDGET", 3_000)
    small = built.recipe(steps=[step]).plan(Q)
    assert 2 <= small.batches <= 32, small
    got = built.recipe(steps=[step], executor=client).retrieve_with_trace(Q, admit=lambda estimate: True)
    local_small = built.recipe(steps=[step]).retrieve_with_trace(Q, admit=lambda estimate: True)
    assert len(got.hits) > 0
    assert list(got.hits) == list(local_small.hits)
    assert got.trace.steps[0].knowledge.preflight["batches"] == small.batches > 1
    # the cited findings are the same as with the default budget (only the batching differs)
    assert {h.citation.finding_target for h in got.hits} <= {h.citation.finding_target for h in expected.hits} | {
        h.citation.finding_target for h in local_small.hits}


@pytest.mark.parametrize("model_cls", [FailingModel, PlainFailingModel, ParameterFailingModel])
def test_a_failing_task_fails_the_operation_like_single_process(client, model_cls):
    kb = load_sample()
    poison = kb.chunks["content"].iloc[len(kb.chunks) // 2].split()[3]
    with pytest.raises(Exception) as local_exc:
        load_sample().extract_entities(model_cls(poison), progress=False)
    before = kb.state
    with pytest.raises(Exception) as remote_exc:
        kb.extract_entities(model_cls(poison), progress=False, executor=client)
    assert type(remote_exc.value) is type(local_exc.value)
    assert str(remote_exc.value) == str(local_exc.value)
    if isinstance(local_exc.value, CruxError):
        assert (remote_exc.value.code, remote_exc.value.hint) == (local_exc.value.code, local_exc.value.hint)
    assert kb.state is before  # nothing was committed


def test_chat_model_secret_stays_hidden_on_the_cluster(client):
    model = ChatModel(base_url="http://127.0.0.1:9/v1", model="m", api_key=SECRET)
    assert SECRET not in repr(model)
    future = client.submit(describe_model, model, pure=False)
    seen = [repr(future), str(future), repr(future.key), str(future.key)]
    seen.append(client.run_on_scheduler(_scheduler_task_text))  # while the task is still held
    assert future.result(timeout=30) == ("ChatModel", True)
    seen.append(client.run_on_scheduler(_scheduler_task_text))
    seen += [repr(future), repr(client.futures), repr(client.who_has()), repr(client.processing()),
             repr(client.call_stack()), repr(client.has_what())]
    seen += [repr(client.get_worker_logs()), repr(client.get_scheduler_logs()), repr(client.cluster.get_logs())]
    text = "\n".join(seen)
    assert "ChatModel" in text or "describe_model" in text  # we did look at the task
    assert SECRET not in text
    assert "SECRET-123" not in text
    # the pickled payload must carry the key (workers need it): guard against a vacuous pass
    assert SECRET.encode() in pickle.dumps(model)
    future.release()


def test_saved_tables_read_as_dask_partitions(client, built, tmp_path):
    """A saved knowledge base is one Parquet dataset per table: Dask reads a partition per part file."""
    import dask.dataframe as dd

    from crux_nb.store.persist import table_paths

    built.save(tmp_path / "kb", partition_rows=5)
    folders = table_paths(tmp_path / "kb")
    for table in ("chunks", "community_members", "reports"):
        frame = dd.read_parquet(folders[table])
        files = list(folders[table].glob("part-*.parquet"))
        expected = built.state.frame(table)
        assert frame.npartitions == len(files) == -(-len(expected) // 5)
        got = frame.compute(scheduler=client.get).reset_index(drop=True)
        assert len(got) == len(expected)
        key = got.columns[0]
        assert got[key].astype(str).tolist() == expected[key].astype(str).tolist()
    words = dd.read_parquet(folders["chunks"])["n_chars"].sum().compute(scheduler=client.get)
    assert words == built.chunks["n_chars"].sum()
