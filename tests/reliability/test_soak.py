"""A bounded randomised soak of the commit protocol (issue 36).

Four processes, each with two threads sharing one knowledge base, repeatedly add a document, embed it and save
with ``merge=True`` (short lease TTL); the test pauses processes at random (SIGSTOP, sometimes past the TTL)
and kills some (SIGKILL, replaced by a fresh process). Every document a thread saw acknowledged (logged after
``kb.save`` returned) must be in the newest generation with its vector, and every kept generation must open with
its checksums verified. Seeded; about 30 s of wall time here, never more than ~60 s (``BUDGET``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import crux_nb
from crux_nb._hashing import text_hash

import _save_worker as W

WORKER = Path(__file__).with_name("_save_worker.py")
SEED = 3602
PROCESSES = 4
ROUNDS = 3
KILLS = 2
TTL = 0.5
BUDGET = 55.0  # seconds before the remaining workers are stopped (what they acknowledged is still checked)


def spawn(folder: Path, name: str, seed: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, str(WORKER), "soak", str(folder), str(TTL), str(seed), name,
                             str(ROUNDS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_soak_no_acknowledged_document_or_vector_is_lost(tmp_path):
    rng = random.Random(SEED)
    folder = tmp_path / "kb"
    kb = crux_nb.knowledge_base(id="soak")
    kb.add_text("seed.md", "# Seed\n\nThe first note.")
    kb.save(folder, keep=4)
    (tmp_path / "acks").mkdir()
    procs = {f"p{i}": spawn(folder, f"p{i}", SEED + i) for i in range(PROCESSES)}
    finished: dict[str, tuple[int, str, str]] = {}
    kills = pauses = 0
    deadline = time.monotonic() + BUDGET
    while procs and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.2, 0.8))
        for name, proc in list(procs.items()):
            if proc.poll() is not None:
                finished[name] = (proc.returncode, *proc.communicate())
                del procs[name]
        if not procs:
            break
        name = rng.choice(sorted(procs))
        proc = procs[name]
        if kills < KILLS and rng.random() < 0.25:
            proc.kill()
            proc.communicate()
            kills += 1
            del procs[name]
            procs[f"{name}k{kills}"] = spawn(folder, f"{name}k{kills}", SEED + 100 + kills)
        else:
            proc.send_signal(signal.SIGSTOP)
            time.sleep(rng.choice([0.1, 0.3, TTL + 0.4]))  # sometimes past the lease TTL
            proc.send_signal(signal.SIGCONT)
            pauses += 1
    for name, proc in procs.items():  # out of time: stop the rest (their unacknowledged work does not count)
        proc.kill()
        finished[name] = (proc.returncode, *proc.communicate())
    for name, (code, out, err) in finished.items():
        assert code in (0, -signal.SIGKILL), (name, code, err[-3000:])

    acked = {json.loads(line)["source_id"] for f in (tmp_path / "acks").iterdir()
             for line in f.read_text().splitlines() if line.strip()}
    assert len(acked) >= PROCESSES * ROUNDS // 2, (len(acked), kills, pauses)  # the soak made progress
    newest = crux_nb.open(folder)
    assert acked <= set(newest.documents["source_id"]), sorted(acked - set(newest.documents["source_id"]))
    fingerprint = W.toy_embedder().fingerprint
    chunks = newest.chunks[newest.chunks["source_id"].isin(acked)]
    vectors = newest.state.embeddings
    stored = set(vectors.loc[vectors["embedder"] == fingerprint, "content_hash"])
    assert {text_hash(c) for c in chunks["content"]} <= stored
    history = crux_nb.history(folder)
    assert 1 <= len(history) <= 4 and history["current"].iloc[-1]
    for generation in history["generation"]:
        crux_nb.open(folder, generation=generation, verify=True)
