"""The four ways an acknowledged save was lost (issue 36), each reproduced deterministically.

1. A saver paused (SIGSTOP) right after renaming its generation into place, for longer than its (short) lease
   TTL, while another handle saves: it must fail with ``save_conflict`` when it resumes, and the other save stays.
2. Threads sharing one knowledge base: a document added while a save runs is never reverted.
3. ``merge=True`` keeps the handle's new embeddings.
4. A kill between the generation rename and the ``CURRENT`` switch: the generation is never visible, and the
   next saves keep the last acknowledged generations.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import crux_nb
from crux_nb.embeddings import FunctionEmbedder, embed_chunks
from crux_nb.errors import ConflictError, NotFoundError
from crux_nb.store import persist

WORKER = Path(__file__).with_name("_save_worker.py")
TTL = 0.5


def base_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "kb"
    kb = crux_nb.knowledge_base(id="lost")
    kb.add_text("a.md", "# A\n\nAlpha notes.")
    assert kb.save(folder) == "g000001"
    return folder


def start(mode: str, folder: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, str(WORKER), mode, str(folder), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def wait_for(path: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"worker ended early: {proc.communicate()}")
        assert time.monotonic() < deadline, "the worker never claimed its generation"
        time.sleep(0.01)


def result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def sources(folder: Path, generation: str | None = None) -> set[str]:
    return set(crux_nb.open(folder, generation=generation).documents["source_id"])


def test_a_saver_paused_past_its_lease_cannot_overwrite_a_newer_generation(tmp_path):
    folder = base_folder(tmp_path)
    late = start("stop_after_claim", folder, str(TTL))
    try:
        wait_for(Path(str(folder) + ".claimed"), late)
        time.sleep(TTL + 0.3)  # the paused saver's lease has expired
        other = crux_nb.open(folder)
        other.add_text("b.md", "# B\n\nBeta notes, acknowledged while the first saver was paused.")
        acknowledged = other.save(folder)
    finally:
        os.kill(late.pid, signal.SIGCONT)
    assert result(late) == {"error": "save_conflict"}
    assert persist.current_generation(folder) == acknowledged
    assert sources(folder) == {"a.md", "b.md"}
    for n in range(2):  # retention must never bring the paused saver's generation back or drop B's
        kb = crux_nb.open(folder)
        kb.add_text(f"c{n}.md", f"# C{n}\n\nLater note {n}.")
        kb.save(folder)
    assert {"a.md", "b.md", "c0.md", "c1.md"} <= sources(folder)
    assert "late.md" not in sources(folder)


def test_documents_added_by_other_threads_during_a_save_are_kept(tmp_path, monkeypatch):
    folder = tmp_path / "kb"
    kb = crux_nb.knowledge_base(id="threads")
    kb.add_text("first.md", "# First\n\nThe first note.")
    write_table = persist._write_table
    added = []

    def slow_write(*args, **kwargs):  # another thread adds while this save writes its tables
        if not added:
            name = f"during-{len(added)}.md"
            thread = threading.Thread(target=kb.add_text, args=(name, f"# During\n\nAdded mid-save {name}."))
            thread.start()
            thread.join()
            added.append(name)
        return write_table(*args, **kwargs)

    monkeypatch.setattr(persist, "_write_table", slow_write)
    kb.save(folder)
    assert "during-0.md" in set(kb.documents["source_id"])  # not reverted in memory
    monkeypatch.setattr(persist, "_write_table", write_table)
    kb.save(folder)
    assert sources(folder) == {"first.md", "during-0.md"}

    # free-running: two adder threads and a saving thread on one knowledge base
    names = [[f"t{t}-{i}.md" for i in range(40)] for t in range(2)]
    stop = threading.Event()

    def adder(batch):
        for name in batch:
            kb.add_text(name, f"# {name}\n\nNote {name}.")

    def saver():
        while not stop.is_set():
            kb.save(folder)

    threads = [threading.Thread(target=adder, args=(b,)) for b in names]
    saving = threading.Thread(target=saver)
    saving.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    saving.join()
    kb.save(folder)
    expected = {n for batch in names for n in batch}
    assert expected <= set(kb.documents["source_id"])
    assert expected <= sources(folder)


def test_merge_keeps_the_handles_new_embeddings(tmp_path):
    folder = base_folder(tmp_path)
    toy = FunctionEmbedder(lambda texts: [[float(len(t)), 1.0] for t in texts], dim=2, name="toy")
    d = crux_nb.open(folder)
    d.add_text("d.md", "# D\n\nDelta notes.")
    embed_chunks(d, toy)
    vectors = set(d.state.embeddings["content_hash"])
    assert len(vectors) == 2
    c = crux_nb.open(folder)
    c.add_text("c.md", "# C\n\nGamma notes.")
    c.save(folder)
    d.save(folder, merge=True)
    saved = crux_nb.open(folder)
    assert set(saved.documents["source_id"]) == {"a.md", "c.md", "d.md"}
    assert vectors <= set(saved.state.embeddings["content_hash"])
    assert vectors <= set(d.state.embeddings["content_hash"])  # and the handle keeps them too


def test_a_generation_killed_before_its_switch_is_never_visible(tmp_path):
    folder = base_folder(tmp_path)
    kb = crux_nb.open(folder)
    kb.add_text("b.md", "# B\n\nBeta.")
    assert kb.save(folder) == "g000002"
    killed = start("kill_after_claim", folder, str(TTL))
    killed.communicate(timeout=60)
    time.sleep(TTL + 0.1)  # the dead saver's lease has expired
    assert killed.returncode == -signal.SIGKILL
    orphan = sorted(p.name for p in (folder / "generations").iterdir() if p.name.startswith("g"))[-1]
    assert orphan == "g000003"  # renamed into place, never switched to
    assert list(crux_nb.history(folder)["generation"]) == ["g000001", "g000002"]
    with pytest.raises(NotFoundError):
        crux_nb.open(folder, generation=orphan)
    assert persist.current_generation(folder) == "g000002"
    assert "late.md" not in sources(folder)
    nxt = crux_nb.open(folder)
    nxt.add_text("c.md", "# C\n\nGamma.")
    acknowledged = nxt.save(folder)
    history = list(crux_nb.history(folder)["generation"])
    assert history == ["g000002", acknowledged]  # retention dropped g000001, not the acknowledged g000002
    assert orphan not in {p.name for p in (folder / "generations").iterdir()}  # cleaned
    assert sources(folder, "g000002") == {"a.md", "b.md"}


def test_exactly_one_of_two_racing_writers_wins(tmp_path):
    folder = base_folder(tmp_path)
    handles = [crux_nb.open(folder) for _ in range(2)]
    for i, kb in enumerate(handles):
        kb.add_text(f"w{i}.md", f"# W{i}\n\nWriter {i}.")
    start_line, outcomes = threading.Barrier(2), {}

    def race(i):
        start_line.wait()
        try:
            outcomes[i] = handles[i].save(folder)
        except ConflictError as exc:
            outcomes[i] = exc.code

    threads = [threading.Thread(target=race, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes.values()) == ["g000002", "save_conflict"], outcomes
    winner = next(i for i, o in outcomes.items() if o == "g000002")
    assert sources(folder) == {"a.md", f"w{winner}.md"}
    assert list(crux_nb.history(folder)["generation"]) == ["g000001", "g000002"]
