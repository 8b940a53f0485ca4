"""Child-process side of tests/reliability/test_lost_saves.py and test_soak.py (issue 36); run as a script::

    python _save_worker.py stop_after_claim FOLDER TTL     open, add 'late.md', save; SIGSTOP itself right after
                                                           the generation folder is renamed into place
    python _save_worker.py kill_after_claim FOLDER         the same, but SIGKILL instead of SIGSTOP
    python _save_worker.py soak FOLDER TTL SEED NAME ROUNDS   two threads sharing one knowledge base: add, embed,
                                                           save with merge=True; each acknowledged document is
                                                           appended to FOLDER/../acks/NAME.jsonl

The last line on stdout is one JSON object: ``{"generation": ...}`` or ``{"error": code}``.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sys
import threading
import time

_GENERATION = re.compile(r"generations[/\\]g\d{6,}$")


def short_ttl(ttl: float) -> None:
    from crux_nb.store import lease

    lease.DEFAULT_TTL = ttl
    lease.Lease.__init__.__kwdefaults__ = {**lease.Lease.__init__.__kwdefaults__, "ttl": ttl}


def after_claim(sig: int, marker: str) -> None:
    """Send ``sig`` to this process right after a generation folder is renamed to its final name."""
    rename = os.rename

    def wrapped(src, dst, *args, **kwargs):
        result = rename(src, dst, *args, **kwargs)
        if _GENERATION.search(os.fspath(dst)):
            with open(marker, "w") as fh:
                fh.write("claimed")
            os.kill(os.getpid(), sig)
        return result

    os.rename = wrapped


def save_once(folder: str, mode: str) -> dict:
    import crux_nb
    from crux_nb.errors import CruxError

    kb = crux_nb.open(folder)
    kb.add_text("late.md", "# Late\n\nA document saved by the paused process.")
    after_claim(signal.SIGSTOP if mode == "stop_after_claim" else signal.SIGKILL, folder + ".claimed")
    try:
        return {"generation": kb.save(folder)}
    except CruxError as exc:
        return {"error": exc.code}


def toy_embedder():
    from crux_nb.embeddings import FunctionEmbedder

    return FunctionEmbedder(lambda texts: [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts],
                            dim=3, name="toy")


def soak(folder: str, seed: int, name: str, rounds: int) -> dict:
    """Two threads share one knowledge base; each adds its own documents, embeds and saves with merge=True."""
    import crux_nb
    from crux_nb.embeddings import embed_chunks
    from crux_nb.errors import ConflictError, CruxError, LeaseError

    acks = os.path.join(os.path.dirname(folder), "acks", f"{name}.jsonl")
    embedder = toy_embedder()
    shared = {"kb": crux_nb.open(folder)}
    reopen = threading.Lock()
    ack_lock = threading.Lock()
    counts = {"saved": 0, "conflicts": 0, "reopened": 0}

    def worker(thread: int) -> None:
        rng = random.Random(seed * 100 + thread)
        pending: list[tuple[str, str]] = []
        for r in range(rounds):
            pending.append((f"{name}-t{thread}-r{r}.md", f"# {name} {thread} {r}\n\nSoak note {r} of {name}/{thread}."))
            for _ in range(20):
                kb = shared["kb"]
                try:
                    have = set(kb.documents["source_id"])
                    for source_id, text in pending:
                        if source_id not in have:
                            kb.add_text(source_id, text)
                    embed_chunks(kb, embedder, progress=False)
                    time.sleep(rng.random() * 0.02)
                    kb.save(folder, merge=True)
                except ConflictError as exc:
                    counts["conflicts"] += 1
                    if exc.code == "merge_conflict":  # the base is no longer kept: start from the folder again
                        with reopen:
                            if shared["kb"] is kb:
                                shared["kb"] = crux_nb.open(folder)
                                counts["reopened"] += 1
                    continue
                except (LeaseError, CruxError) as exc:
                    if exc.code not in ("lease_held", "state_changed", "storage_busy"):
                        raise
                    continue
                with ack_lock, open(acks, "a") as fh:
                    for source_id, _ in pending:
                        fh.write(json.dumps({"source_id": source_id}) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
                counts["saved"] += 1
                pending = []
                break

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts


def main(argv: list[str]) -> None:
    mode, folder = argv[1], argv[2]
    if mode in ("stop_after_claim", "kill_after_claim"):
        if len(argv) > 3:
            short_ttl(float(argv[3]))
        result = save_once(folder, mode)
    else:
        short_ttl(float(argv[3]))
        result = soak(folder, int(argv[4]), argv[5], int(argv[6]))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv)
