"""Concurrency (issue 9): separate processes on one saved knowledge base folder.

* Two processes preparing the same communities at once publish exactly one generation, and both end ready with
  the same communities (the second waits on the communities lease, then adopts what the first published).
* A reader reopening the knowledge base (``verify=True``) in a loop while a writer saves repeatedly always sees one
  complete generation whose content is exactly one of the saved versions.

The processes are workers forked, all at once, by the fork server of ``_crash_harness.py`` (started with
``subprocess``; everything imported once), with the library's default lease TTL. They meet at file barriers the
test drives: "ready" (opened, about to start) → go → "done" (finished) → finish (look at the outcome).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import _crash_harness as H
from crux_nb import open as open_knowledge_base
from crux_nb.store.persist import current_generation
from crux_nb.testing import assert_kb_equal

TIMEOUT = 120


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("concurrency-jobs")
    server = H.ForkServer(str(work), name="c-")
    try:
        server.wait_ready()
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def prepared_alone(server, tmp_path_factory):
    """The folder after one uncontended prepare of the base knowledge base (what concurrent builders must match)."""
    path = tmp_path_factory.mktemp("alone") / "kb"
    H.base_kb().save(path)
    reply = server.job("prepare", path, timeout=TIMEOUT)
    assert reply["returncode"] == 0, reply
    return path


def wait_files(files: list[Path], future, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not all(f.exists() for f in files):
        if future.done():  # the workers ended early: surface their replies
            raise AssertionError(f"workers ended before {what}: {future.result()}")
        assert time.monotonic() < deadline, f"workers never reached {what}"
        time.sleep(0.005)


def run_together(server, jobs: list[dict], stages: list[tuple[str, str]]) -> list[dict]:
    """Run ``jobs`` in concurrent workers; for each (marker key, release key) stage, wait until every worker wrote
    its marker file, then create the release file. Returns each worker's result (asserting a clean exit)."""
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(server.group, jobs)
        for marker, release in stages:
            wait_files([Path(job[marker]) for job in jobs if marker in job], future, marker)
            Path(next(job[release] for job in jobs if release in job)).write_text(release)
        replies = future.result(timeout=TIMEOUT)
    results = []
    for reply in replies:
        assert not reply["timed_out"] and reply["returncode"] == 0, reply
        assert reply["result"] is not None and "error" not in reply["result"], reply
        results.append(reply["result"])
    return results


@pytest.mark.parametrize("extracted", [True, False], ids=["entities-saved", "entities-not-yet-extracted"])
def test_two_concurrent_preparers_publish_exactly_one_generation(server, prepared_alone, tmp_path, extracted):
    path = tmp_path / "kb"
    kb = H.base_kb()
    if extracted:
        kb.extract_entities(progress=False)
    before = kb.save(path)
    jobs = [{"op": "prepare", "path": str(path), "timeout": TIMEOUT,
             "ready": str(tmp_path / f"{n}.ready"), "go": str(tmp_path / "go"),
             "done": str(tmp_path / f"{n}.done"), "finish": str(tmp_path / "finish")} for n in ("one", "two")]
    one, two = run_together(server, jobs, [("ready", "go"), ("done", "finish")])

    assert one["pid"] != two["pid"]
    saves = one["saves"] + two["saves"]
    assert len(saves) == 1, f"expected one published generation, got {saves}"
    after = current_generation(path)
    assert saves == [after] and after != before
    # exactly one builder wrote reports; the other adopted them without a model call
    assert sorted([one["calls"] == 0, two["calls"] == 0]) == [False, True], (one, two)
    adopter, builder = (one, two) if one["calls"] == 0 else (two, one)
    assert builder["reports_written"] > 0 and adopter["reports_written"] == 0
    # both end in the same ready state, equal to what the folder holds
    assert one["community_generation"] == two["community_generation"]
    assert one["status"] == two["status"] == "ready"
    assert one["equals_saved"] and two["equals_saved"]
    assert one["reports"] == two["reports"] and one["reports"]
    # PrepareResult.status: the adopter (last to hold the lease) says "ready", not "building"; the builder may
    # truthfully have seen the adopter's lease
    assert adopter["result_status"] == "ready" and builder["result_status"] in ("ready", "building")
    reopened = open_knowledge_base(path, verify=True, communities=H.communities_config())
    assert reopened.communities.status() == "ready"
    assert reopened.communities.generation_id == one["community_generation"]
    assert_kb_equal(reopened, open_knowledge_base(prepared_alone))  # what one uncontended prepare publishes
    assert not (path / "communities.lease").exists() and not (path / "lease").exists()


def test_readers_during_repeated_saves_always_see_one_complete_generation(server, tmp_path):
    """The reader reopens back to back while the writer saves; the writer starts its next save only once a read
    that began after its last save has finished, so no read spans two completed saves (that race has its own,
    deterministic test below) while the reads still overlap every phase of the saves."""
    path = tmp_path / "kb"
    versions, saves = 3, 4  # saves versions 1, 2, 0, 1
    H.base_kb(extra=0).save(path)
    go, stop, reads = tmp_path / "go", tmp_path / "stop", str(tmp_path / "reads")
    writer = {"op": "save_loop", "path": str(path), "versions": versions, "saves": saves, "reads": reads,
              "ready": str(tmp_path / "writer.ready"), "go": str(go), "timeout": TIMEOUT}
    reader = {"op": "read_loop", "path": str(path), "versions": versions, "ready": str(tmp_path / "reader.ready"),
              "go": str(go), "stop": str(stop), "reads": reads, "timeout": TIMEOUT}
    writer["done"] = str(tmp_path / "writer.done")  # the writer marks it after its last save
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(server.group, [writer, reader])
        wait_files([tmp_path / "writer.ready", tmp_path / "reader.ready"], future, "ready")
        go.write_text("go")
        wait_files([tmp_path / "writer.done"], future, "the last save")
        stop.write_text("stop")
        replies = future.result(timeout=TIMEOUT)
    assert all(r["returncode"] == 0 and not r["timed_out"] for r in replies), replies
    written, read = (r["result"] for r in replies)

    assert read["errors"] == [], read["errors"][:5]
    assert len(written["generations"]) == saves and len(set(written["generations"])) == saves
    assert len(read["seen"]) >= saves, read  # at least one read after every save
    assert set(read["seen"]) == set(range(versions)), f"the reader did not see every version: {read['seen']}"
    last = saves % versions
    assert read["seen"][-1] == last  # the last read came after the last save
    assert_kb_equal(open_knowledge_base(path, verify=True), H.base_kb(extra=last))


def test_a_reader_paused_mid_open_while_two_saves_land_still_opens_a_complete_generation(server, tmp_path):
    """Deterministic version of the reader/writer race: the reader stops inside its first Parquet read (after
    reading CURRENT and the manifest) until two more generations were published, then finishes its open."""
    path = tmp_path / "kb"
    versions = 3
    H.base_kb(extra=0).save(path)
    paused, resume = tmp_path / "reader.paused", tmp_path / "resume"
    job = {"op": "paused_read", "path": str(path), "versions": versions, "paused": str(paused),
           "resume": str(resume), "timeout": TIMEOUT}
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(server.group, [job])
        wait_files([paused], future, "the pause")
        for extra in (1, 2):
            H.base_kb(extra=extra).save(path)
        resume.write_text("resume")
        (reply,) = future.result(timeout=TIMEOUT)
    assert reply["returncode"] == 0, reply
    read = reply["result"]
    assert read["paused"] and not read.get("resume_timed_out")
    assert read["error_on_open"] is None, read["error_on_open"]
    assert len(read["matches"]) == 1, read  # one complete saved version, whichever the open settled on
