"""Crash safety (issue 9): SIGKILL a child at many deterministic points during ``kb.save``, entity extraction on a
saved knowledge base (``kb.extract_entities()`` then ``kb.save``) and ``kb.communities.prepare()``.

After every kill the saved knowledge base must open with ``verify=True`` (checksums), its current generation must
be exactly the one before the interrupted operation or, once the atomic pointer switch has happened, exactly what an
uninterrupted run produces (never anything else, and never "new" before "old" along the kill points), and a later
run must take the dead process's lease over after its (short) TTL and finish with the uninterrupted result.

The child side lives in ``_crash_harness.py`` (a fork server: see its docstring). Kill points are counted, not
timed: the parent first runs each operation with counting only, then kills just before chosen calls.
"""

from __future__ import annotations

import queue
import shutil
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import _crash_harness as H
from crux_nb import open as open_knowledge_base
from crux_nb.store.persist import current_generation
from crux_nb.testing import assert_kb_equal

TTL = 0.15  # lease time-to-live in the killed child and in the later run (the library default is 30 s)
SERVERS = 2
KILLED = -signal.SIGKILL
SWITCHES = ("os.replace", "os.rename")  # how a POSIX program switches a pointer atomically


@dataclass
class CrashEnv:
    work: Path
    base: Path
    servers: list
    pool: queue.Queue
    counted: dict = field(default_factory=dict)  # op -> list of kill point names (first counting run)
    references: dict = field(default_factory=dict)  # op -> folder of the uninterrupted run
    exercised: dict = field(default_factory=dict)  # op -> kill points tried (for the summary)

    def each(self, fn, items):
        """``fn(server, item)`` for every item, spread over the fork servers; results in item order."""
        def one(item):
            server = self.pool.get()
            try:
                return fn(server, item)
            finally:
                self.pool.put(server)

        with ThreadPoolExecutor(len(self.servers)) as executor:
            return list(executor.map(one, items))

    def fresh_copy(self, name: str) -> Path:
        folder = self.work / "cases" / name
        shutil.copytree(self.base, folder)
        return folder


@pytest.fixture(scope="module")
def crash_env(tmp_path_factory):
    work = tmp_path_factory.mktemp("crash")
    (work / "jobs").mkdir()
    (work / "cases").mkdir()
    servers = [H.ForkServer(str(work / "jobs"), name=f"s{i}-") for i in range(SERVERS)]
    try:
        base = work / "base"
        previous = H.small_parts()  # saved as the servers save: tables cut into small parts
        try:
            H.base_kb().save(base)  # while the servers import
        finally:
            from crux_nb.store import parts

            parts.PART_BYTES = previous
        for server in servers:
            server.wait_ready()
            server.preload(base=base)
        pool: queue.Queue = queue.Queue()
        for server in servers:
            pool.put(server)
        env = CrashEnv(work=work, base=base, servers=servers, pool=pool)

        def count(server, op):
            folder = env.fresh_copy(f"count-{op}")
            reply = server.job(op, folder, preloaded="base", ttl=TTL)
            assert reply["returncode"] == 0, reply
            return op, folder, reply["result"]

        for op, folder, result in env.each(count, H.OPS):
            env.counted[op] = result["points"]
            env.references[op] = folder
        for server in servers:
            server.preload(**env.references)
        yield env
        print("\nkill points exercised:", env.exercised)
    finally:
        for server in servers:
            server.close()


# kill points per operation before bisection: 68 in all
TARGET = {"save": 20, "extract": 18, "prepare": 14, "save_parts": 16}


def selection(points: list[str], target: int) -> list[int]:
    """``target`` 1-based kill points, by priority: both sides of the pointer switch (just before and just after the
    last ``os.replace``), the very first and last calls, the first and last call of each model task and lease
    method, the first call of every other kind, the last call of every other kind, then an even spread.

    (Where the pointer switch is does not matter for the verdicts: every kill is judged by content.)"""
    n = len(points)

    def first(name):
        return points.index(name) + 1

    def last(name):
        return n - points[::-1].index(name)

    switch = max(last(name) for name in SWITCHES if name in points)  # the last atomic rename/replace
    kinds = sorted(set(points), key=first)
    special = [k for k in kinds if k.startswith(("model.", "Lease."))]
    others = [k for k in kinds if k not in special]
    ordered = [switch, min(n, switch + 1), 1, n]
    ordered += [f(k) for k in special for f in (first, last)]
    ordered += [first(k) for k in others] + [last(k) for k in others]
    ordered += [1 + round(i * (n - 1) / (target - 1)) for i in range(target)]
    chosen: list[int] = []
    for point in ordered:
        if point not in chosen and len(chosen) < target:
            chosen.append(point)
    return sorted(chosen)


def kill_case(env: CrashEnv, op: str, ttl: float = TTL, **how):
    def run(server, point):
        label = f"{op}-ttl{ttl}-{'-'.join(f'{k}{v}' for k, v in how.items())}-{point}"
        return server.case(op, env.fresh_copy(label), refs=["base", op], ttl=ttl, timeout=60,
                           **({"kill_at": point} if point is not None else how))
    return run


def check_case(env: CrashEnv, op: str, reply: dict, where: str, *, killed: bool = True) -> str:
    """Assert everything one kill must leave true; returns "old" or "new" (the state right after the kill)."""
    kill, check = reply["kill"], reply["check"]
    assert not kill["timed_out"], f"{where}: the operation hung"
    if killed:
        assert kill["returncode"] == KILLED, f"{where}: the child did not die of SIGKILL: {kill}"
    else:
        assert kill["returncode"] in (KILLED, 0), f"{where}: {kill}"
    assert not check["timed_out"], f"{where}: the later run hung (stale lease never taken over?)"
    result = check["result"]
    assert check["returncode"] == 0 and result is not None, f"{where}: the checking process failed: {check}"
    assert result["open_error"] is None, f"{where}: the saved knowledge base does not open: {result['open_error']}"
    state = {("base",): "old", (op,): "new"}.get(tuple(result["matches_after_kill"]))
    assert state is not None, f"{where}: the current generation equals {result['matches_after_kill']}, " \
                              "neither the previous one nor the uninterrupted result"
    base_generation = current_generation(env.base)
    if state == "old":
        assert result["generation_after_kill"] == base_generation, where
    else:
        assert result["generation_after_kill"] != base_generation, where
    if op == "prepare":
        assert result["status_after_expiry"] == ("missing" if state == "old" else "ready"), (where, result)
    assert result["later_error"] is None, f"{where}: the later run failed: {result['later_error']}"
    assert result["matches_final"] == [op], f"{where}: the later run did not produce the uninterrupted result"
    if op == "prepare" and state == "new":
        # the later run found the communities ready and did nothing: a dead builder's lease file may remain, but
        # only an expired one, never one that still blocks builders
        assert result["leases_final"] == result["stale_leases_final"], f"{where}: live leases left: {result}"
    else:  # the later run took every dead lease over and released it
        assert result["leases_final"] == [], f"{where}: leases left after the later run: {result}"
    assert result["later_seconds"] < 15, f"{where}: the later run waited {result['later_seconds']} s for the lease"
    if op == "prepare":
        assert result["later_status"] == "ready", where
    return state


def test_kill_points_cover_every_stage(crash_env):
    """(Determinism: every kill below lands -- SIGKILL before call N of N -- so the counts repeat exactly.)"""
    env = crash_env
    save = set(env.counted["save"])
    assert {"pq.write_table", "os.fsync", "os.replace", "os.rename", "Lease.heartbeat", "Lease.release"} <= save
    assert env.counted["extract"].count("model.extract") >= 2 and set(env.counted["extract"]) >= save
    assert "model.write_report" in env.counted["prepare"] and "model.extract" in env.counted["prepare"]
    # the incremental path: unchanged parts linked from the previous generation, which retention then deletes
    assert {"os.link", "shutil.rmtree"} <= set(env.counted["save_parts"]) and "os.link" in save
    switch = max(i for i, name in enumerate(env.counted["save_parts"]) if name in SWITCHES)
    assert "shutil.rmtree" in env.counted["save_parts"][switch:]
    # the uninterrupted runs changed the knowledge base, so "old" and "new" are distinguishable
    base = open_knowledge_base(env.base)
    for op in H.OPS:
        with pytest.raises(AssertionError):
            assert_kb_equal(base, open_knowledge_base(env.references[op]))
    prepared = open_knowledge_base(env.references["prepare"], communities=H.communities_config())
    assert prepared.communities.status() == "ready" and len(prepared.communities.communities) > 0


@pytest.mark.parametrize("op", H.OPS)
def test_sigkill_at_kill_points_leaves_previous_or_new_generation(crash_env, op):
    env = crash_env
    points = env.counted[op]
    n = len(points)
    tried = selection(points, TARGET[op])
    run = kill_case(env, op)
    replies = env.each(run, tried)
    outcomes = {p: check_case(env, op, reply, f"{op}: kill before call {p}/{n} ({points[p - 1]})")
                for p, reply in zip(tried, replies)}
    # most kills left a live lease behind, which the later run had to take over once it expired
    left = [p for p, reply in zip(tried, replies) if reply["check"]["result"]["leases_after_kill"]]
    assert len(left) >= len(tried) // 2, (op, left)
    # bisect to the exact switch from the previous generation to the new one
    olds = [p for p in tried if outcomes[p] == "old"]
    news = [p for p in tried if outcomes[p] == "new"]
    assert olds and news and olds[0] == 1 and news[-1] == n, outcomes
    low, high = max(olds), min(news)
    while high - low > 1:
        mid = (low + high) // 2
        reply = env.each(run, [mid])[0]
        outcomes[mid] = check_case(env, op, reply, f"{op}: kill before call {mid}/{n} ({points[mid - 1]})")
        low, high = (mid, high) if outcomes[mid] == "old" else (low, mid)
    ordered = [outcomes[p] for p in sorted(outcomes)]
    assert ordered == sorted(ordered, key=["old", "new"].index), f"{op}: new before old: {sorted(outcomes.items())}"
    # the last call before the switch replaces the pointer; killing just before it keeps the previous generation
    assert points[low - 1] in SWITCHES, (op, low, points[low - 1])
    env.exercised[op] = len(outcomes)
    print(f"\n{op}: {n} kill points, {len(outcomes)} exercised ({len(left)} left a lease to take over), "
          f"switch after call {low} ({points[low - 1]})")


def test_a_killed_builder_shows_building_until_its_lease_expires(crash_env):
    """Killed mid-save inside prepare, a builder leaves both leases; status says "building" while they are fresh,
    "missing" once they expired, and the later run (asserted in check_case) takes them over."""
    env = crash_env
    points = env.counted["prepare"]
    mid_save = len(points) - points[::-1].index("Lease.heartbeat")  # just before the last heartbeat
    # a longer TTL here, so the leases are still fresh when the checking process looks
    (reply,) = env.each(kill_case(env, "prepare", ttl=2.0), [mid_save])
    assert check_case(env, "prepare", reply, f"prepare: kill before call {mid_save}") == "old"
    result = reply["check"]["result"]
    assert sorted(result["leases_after_kill"]) == ["communities.lease", "lease"]
    assert result["status_after_kill"] == "building" and result["status_after_expiry"] == "missing"
    env.exercised["prepare, lease status"] = 1


def test_time_based_sigkills(crash_env):
    """A few kills sent by another process (the fork server) at fixed delays after the operation started."""
    env = crash_env
    cases = [(op, delay) for op in ("save", "prepare") for delay in (0.0, 0.1)]
    replies = env.each(lambda server, case: kill_case(env, case[0], kill_after=case[1])(server, None), cases)
    for (op, delay), reply in zip(cases, replies):
        check_case(env, op, reply, f"{op}: kill {delay} s after start", killed=False)
        if delay == 0.0:
            assert reply["kill"]["returncode"] == KILLED, f"{op}: an immediate kill must land before the end"
    env.exercised["time-based"] = len(cases)
