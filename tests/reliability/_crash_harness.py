"""Child-process side of the crash and concurrency suites (issue 9).

Run as a script (the tests start it; nothing here is imported by the library)::

    python _crash_harness.py serve        # a fork server: one JSON request per stdin line, one JSON reply per line
    python _crash_harness.py run JOB.json # one job in this very process (for debugging a job by hand)

Operations, each on a saved knowledge base folder:

* ``save``     add one source, ``kb.save(path)``;
* ``save_parts``  remove one source and add one, ``kb.save(path, keep=1)``: most parts are linked from the
  previous generation, which retention then deletes (every save here cuts tables into small parts);
* ``extract``  ``kb.extract_entities()``, then ``kb.save(path)`` (extraction on a saved KB);
* ``prepare``  ``kb.communities.prepare()`` (extracts, builds, publishes by saving);
* ``save_loop`` / ``read_loop``  a writer saving known versions repeatedly / a reader reopening with ``verify=True``;
* ``paused_read``  an open that stops inside its first Parquet read until told to go on.

Kill points: while an operation runs, low-level functions it goes through (``os.replace``, ``os.rename``,
``os.fsync``, ``os.open``, ``os.unlink``, ``os.mkdir``, ``os.link``, ``shutil.rmtree``, ``shutil.copyfile``, ``open`` for writing and that file's
``flush``/``close``, ``pyarrow.parquet.write_table``, ``Lease.heartbeat``/``release``, the model's ``extract`` and
``write_report``) are wrapped by a counter; with ``kill_at = N`` the process sends itself ``SIGKILL`` just before
the N-th call. Without ``kill_at`` it only counts, so the parent learns how many kill points the operation has.

The fork server imports everything and opens the knowledge bases it is told to ``preload`` once, then forks
workers, so a kill costs a fraction of a second instead of a fresh interpreter. A *case* is:

1. a worker runs the operation on the case folder (starting from the preloaded copy of the folder's
   content) and dies of ``SIGKILL`` at kill point ``kill_at`` (or ``kill_after`` seconds after it started, sent
   by the server); the server reports its wait status as ``returncode = -signal``, like :mod:`subprocess`;
2. a second, fresh worker opens the folder with ``verify=True``, says which preloaded reference it equals
   (``crux_nb.testing.assert_kb_equal``), then runs the operation again (the *later run*, which must take the
   dead worker's lease over once its short TTL has passed), reopens and compares again.

Both workers use a short lease TTL (``ttl``). The parent asserts on the reply.
"""

from __future__ import annotations

import builtins
import gc
import json
import os
import signal
import sys
import time
import traceback

_open_builtin = builtins.open  # unwrapped, for the harness's own files

# ------------------------------------------------------------------ corpus (shared with the tests)

PEOPLE = [
    ("Priya Raman", "Sofia Lindqvist", "Ingest Gateway", "Northwind Traders"),
    ("Marcus Chen", "Daniel Kim", "Query Engine", "Contoso"),
]
TEXTS = {
    f"team-{g}-{k}.md": f"# Note {k}\n\n{lead} works with {partner} on the {service}. {lead} reviewed the {service} "
                        f"plan with {partner} and {customer} on day {k}."
    for g, (lead, partner, service, customer) in enumerate(PEOPLE) for k in range(3)
}
EXTRA = ("late.md", "# Late\n\nHannah Okafor joined Priya Raman on the Billing Service for Fabrikam.")
KB_ID = "crash"
OPS = ("save", "extract", "prepare", "save_parts")
#: Part size of every save here: small enough that even this small knowledge base's tables are cut into several
#: parts, so saves link the unchanged ones from the previous generation (the incremental path, issue 35).
PART_BYTES = 256
REMOVED = "team-0-0.md"  # save_parts removes it (and adds EXTRA), then keeps only the new generation


def small_parts():
    """Cut tables into parts of about PART_BYTES (returns the previous setting, to restore)."""
    from crux_nb.store import parts

    previous, parts.PART_BYTES = parts.PART_BYTES, PART_BYTES
    return previous


def base_kb(extra: int = 0):
    """The knowledge base every crash test starts from (``extra`` adds numbered sources: distinct versions)."""
    import crux_nb

    kb = crux_nb.knowledge_base(id=KB_ID)
    for source_id, text in TEXTS.items():
        kb.add_text(source_id, text)
    for i in range(extra):
        kb.add_text(f"version-{i}.md", f"# Version {i}\n\nRevision {i} of the Ingest Gateway notes by Priya Raman.")
    return kb


def communities_config():
    import crux_nb
    from crux_nb.models import OfflineModel

    return crux_nb.communities(model=OfflineModel())


def short_lease_ttl(ttl: float) -> None:
    """Make every lease created from now on use ``ttl`` (``Lease(ttl=...)`` is a keyword-only default, bound at
    definition time, so the module constant alone is not enough)."""
    from crux_nb.store import lease

    lease.DEFAULT_TTL = ttl
    lease.Lease.__init__.__kwdefaults__ = {**lease.Lease.__init__.__kwdefaults__, "ttl": ttl}
    lease.KEEPALIVE = False  # time-driven heartbeats would make the counted kill points vary between runs


LEASES = ("lease", "communities.lease")  # <path>/lease (kb.save), <path>/communities.lease (prepare)


def lease_files(path) -> list[str]:
    return [name for name in LEASES if os.path.exists(os.path.join(path, name))]


# ------------------------------------------------------------------ kill points

class KillPoints:
    """Counts calls of wrapped functions; SIGKILLs this process just before call number ``kill_at``."""

    def __init__(self, kill_at: int | None):
        self.kill_at = kill_at
        self.calls: list[str] = []
        self.active = False

    def hit(self, name: str) -> None:
        if not self.active:
            return
        self.calls.append(name)
        if self.kill_at is not None and len(self.calls) == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(10)  # never reached: SIGKILL cannot be caught

    def wrap(self, owner, attr: str, name: str) -> None:
        original = getattr(owner, attr)
        points = self

        def wrapper(*args, **kwargs):
            points.hit(name)
            return original(*args, **kwargs)

        wrapper.__wrapped__ = original
        setattr(owner, attr, wrapper)

    def install(self) -> None:
        import shutil

        import pyarrow.parquet as pq

        from crux_nb.models import OfflineModel
        from crux_nb.store.lease import Lease

        for attr in ("replace", "rename", "fsync", "open", "unlink", "mkdir", "link"):
            self.wrap(os, attr, f"os.{attr}")
        self.wrap(shutil, "rmtree", "shutil.rmtree")
        self.wrap(shutil, "copyfile", "shutil.copyfile")
        self.wrap(pq, "write_table", "pq.write_table")

        original_open = builtins.open
        points = self

        def open_(file, mode="r", *args, **kwargs):
            if not any(c in mode for c in "wax+"):
                return original_open(file, mode, *args, **kwargs)
            points.hit("open(write)")
            return _Written(original_open(file, mode, *args, **kwargs), points)

        builtins.open = open_
        self.wrap(Lease, "heartbeat", "Lease.heartbeat")
        self.wrap(Lease, "release", "Lease.release")
        self.wrap(OfflineModel, "extract", "model.extract")
        self.wrap(OfflineModel, "write_report", "model.write_report")


class _Written:
    """A file opened for writing, with kill points before ``flush`` and ``close`` (the moments buffered data
    reaches the operating system)."""

    def __init__(self, fh, points: KillPoints):
        self._fh, self._points = fh, points

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __iter__(self):
        return iter(self._fh)

    def flush(self):
        self._points.hit("file.flush")
        return self._fh.flush()

    def close(self):
        if not self._fh.closed:
            self._points.hit("file.close")
        return self._fh.close()

    def __enter__(self):
        self._fh.__enter__()
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# ------------------------------------------------------------------ operations

PRELOADED: dict = {}  # name -> KnowledgeBase opened by the fork server before forking


def open_kb(path, **kwargs):
    from crux_nb import open as open_knowledge_base

    return open_knowledge_base(path, **kwargs)


def _wait_for(path: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.005)


def _mark(path: str | None) -> None:
    if path:
        with _open_builtin(path, "w") as fh:
            fh.write(str(os.getpid()))


def _record_saves(result: dict) -> None:
    """Log the generation id of every ``persist.save`` this process completes."""
    from crux_nb.store import persist

    original = persist.save
    result["saves"] = []

    def save(kb, path, *args, **kwargs):
        generation = original(kb, path, *args, **kwargs)
        result["saves"].append(generation)
        return generation

    persist.save = save


def operation(op: str, kb, path, points: KillPoints | None, result: dict, job: dict) -> None:
    """Run ``op`` on ``kb`` (whose content is the folder's current generation) and publish to ``path``."""
    if op in ("save", "save_parts"):
        kb.add_text(*EXTRA)
    if op == "save_parts" and REMOVED in set(kb.documents["source_id"]):  # the later run may find it gone
        kb.remove(REMOVED)
    _mark(job.get("ready"))
    if job.get("go"):
        _wait_for(job["go"])
    _mark(job.get("started"))
    if points is not None:
        points.active = True
    t0 = time.perf_counter()
    if op == "save":
        result["generation"] = kb.save(path)
    elif op == "save_parts":
        result["generation"] = kb.save(path, keep=1)
    elif op == "extract":
        kb.extract_entities(progress=False)
        result["generation"] = kb.save(path)
    elif op == "prepare":
        prepared = kb.communities.prepare(progress=False)
        result.update(community_generation=prepared.generation_id, result_status=prepared.status,
                      reports_written=prepared.reports_written,
                      reports_reused=prepared.reports_reused, calls=prepared.calls)
    else:
        raise ValueError(f"unknown op {op!r}")
    if points is not None:
        points.active = False
    result["seconds"] = round(time.perf_counter() - t0, 3)
    if job.get("done"):  # concurrency tests: look at the outcome only once every process has finished
        _mark(job["done"])
        _wait_for(job["finish"])
        result["equals_saved"] = matches_saved(kb, path)  # this process's final state is what the folder holds
    if op == "prepare":
        result["status"] = kb.communities.status()
        result["reports"] = [[r.community_id, r.title, len(r.findings)] for r in kb.communities.reports().reports]


def matches_saved(kb, path) -> bool:
    from crux_nb.testing import assert_kb_equal

    try:
        assert_kb_equal(kb, open_kb(path, verify=True))
    except AssertionError:
        return False
    return True


def _kb_for(op: str, job: dict):
    """The knowledge base an operation starts from: a preloaded copy of the folder's content, or the folder."""
    from pathlib import Path

    config = communities_config() if op == "prepare" else None
    if job.get("preloaded"):
        kb = PRELOADED[job["preloaded"]]
        if config is not None:
            kb.configure_communities(config)
        kb.path = Path(job["path"])
        return kb
    return open_kb(job["path"], communities=config)


def matches(kb, refs: list[str]) -> list[str]:
    """The first of the preloaded references (distinct by content: the parent checks) that ``kb`` equals by
    content, as a one-item list; empty if none."""
    from crux_nb.testing import assert_kb_equal

    for name in refs:
        try:
            assert_kb_equal(kb, PRELOADED[name])
        except AssertionError:
            continue
        return [name]
    return []


def run_job(job: dict) -> dict:
    """Run one job in this process; returns what the parent needs to know."""
    if job.get("ttl") is not None:
        short_lease_ttl(float(job["ttl"]))
    op, path = job["op"], job["path"]
    result: dict = {"op": op, "pid": os.getpid()}
    _record_saves(result)
    if op in OPS:
        kb = _kb_for(op, job)
        points = KillPoints(job.get("kill_at"))
        points.install()
        operation(op, kb, path, points, result, job)
        result["points"] = points.calls
    elif op == "check":
        check(job, result)
    elif op == "save_loop":
        versions = [base_kb(extra=i) for i in range(job["versions"])]
        _mark(job.get("ready"))
        _wait_for(job["go"])
        result["generations"] = []
        for i in range(job["saves"]):
            # the folder holds #0; each version replaces whatever is saved (these handles never opened it)
            result["generations"].append(versions[(i + 1) % len(versions)].save(path, overwrite=True))
            if job.get("reads"):  # a whole read must begin and end after this save before the next one starts:
                reads = _count(job["reads"])  # the read running now ends (+1), the next one began after us (+2)
                deadline = time.monotonic() + 60
                while _count(job["reads"]) < reads + 2 and time.monotonic() < deadline:
                    time.sleep(0.002)
        _mark(job.get("done"))
    elif op == "add_loop":
        add_loop(job, result)
    elif op == "paused_read":
        paused_read(job, result)
    elif op == "read_loop":
        read_loop(job, result)
    else:
        raise ValueError(f"unknown op {op!r}")
    return result


def add_loop(job: dict, result: dict) -> None:
    """Open, add one document, save; on a conflict, reopen and apply the change again (or merge)."""
    from crux_nb.errors import ConflictError

    _mark(job.get("ready"))
    _wait_for(job["go"])
    result.update(acknowledged=[], conflicts=0)
    for i in range(job["count"]):
        source = f"{job['name']}-{i:02d}.md"
        kb = open_kb(job["path"], verify=False)
        kb.add_text(source, f"# {source}\n\nWritten by worker {job['name']}, save {i}.")
        while True:
            try:
                base = int(kb.base_generation[1:])
                if int(kb.save(job["path"], merge=job.get("merge", False))[1:]) > base + 1:
                    result["merged"] = result.get("merged", 0) + 1  # published onto a newer generation
                break
            except ConflictError as exc:  # with merge=True only when the base is no longer kept
                result["conflicts"] += 1
                result.setdefault("codes", []).append(exc.code)
                kb = open_kb(job["path"], verify=False)
                kb.add_text(source, f"# {source}\n\nWritten by worker {job['name']}, save {i}.")
        result["acknowledged"].append(source)


def check(job: dict, result: dict) -> None:
    """After a kill: open with verify, compare, then the later run, then open and compare again."""
    from crux_nb.store.persist import current_generation

    path, op, refs = job["path"], job["of"], job["refs"]
    result["leases_after_kill"] = lease_files(path)
    t0 = time.perf_counter()
    try:
        kb = open_kb(path, verify=True, communities=communities_config() if op == "prepare" else None)
    except Exception as exc:  # noqa: BLE001 (the parent asserts this is None)
        result["open_error"] = f"{type(exc).__name__}: {exc}"
        return
    result["open_error"] = None
    result["open_seconds"] = round(time.perf_counter() - t0, 3)
    result["generation_after_kill"] = current_generation(path)
    result["matches_after_kill"] = matches(kb, refs)
    if op == "prepare":
        result["status_after_kill"] = kb.communities.status()
        if result["leases_after_kill"]:
            time.sleep(float(job["ttl"]) + 0.05)  # the dead builder's lease has expired: no longer "building"
        result["status_after_expiry"] = kb.communities.status()
    later: dict = {}
    started = time.monotonic()
    try:
        operation(op, kb, path, None, later, {})
    except Exception as exc:  # noqa: BLE001
        result["later_error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        return
    result["later_error"] = None
    result["later_seconds"] = round(time.monotonic() - started, 3)
    result["later_status"] = later.get("status")
    final = open_kb(path, verify=True)
    result["generation_final"] = current_generation(path)
    result["matches_final"] = matches(final, refs[::-1])  # the uninterrupted result first
    result["leases_final"] = lease_files(path)
    result["stale_leases_final"] = [name for name in result["leases_final"] if _stale(os.path.join(path, name))]


def _stale(path: str) -> bool:
    from crux_nb.store.lease import Lease

    return Lease(path).is_stale()


def _count(path: str | None) -> int:
    """The number in a counter file (0 if absent)."""
    if not path:
        return 0
    try:
        with _open_builtin(path) as fh:
            return int(fh.read() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def _bump(path: str | None, value: int) -> None:
    if path:
        with _open_builtin(path + ".tmp", "w") as fh:
            fh.write(str(value))
        os.rename(path + ".tmp", path)


def paused_read(job: dict, result: dict) -> None:
    """Open with ``verify=True``, pausing inside the first Parquet read until the parent says "resume"."""
    import pyarrow.parquet as pq

    original = pq.ParquetFile.read  # what crux_nb.store.reading decodes every part with
    result["paused"] = False

    def read(*args, **kwargs):
        if not result["paused"]:
            result["paused"] = True
            _mark(job["paused"])
            try:
                _wait_for(job["resume"], timeout=float(job.get("pause_timeout", 10)))
            except TimeoutError:
                result["resume_timed_out"] = True
        return original(*args, **kwargs)

    pq.ParquetFile.read = read
    try:
        kb = open_kb(job["path"], verify=True)
    except Exception as exc:  # noqa: BLE001 (the parent asserts on it)
        result["error_on_open"] = f"{type(exc).__name__}: {exc}"
        return
    result["error_on_open"] = None
    result["sources"] = sorted(kb.documents["source_id"])
    result["matches"] = [i for i in range(job["versions"]) if _equal(kb, base_kb(extra=i))]


def _equal(left, right) -> bool:
    from crux_nb.testing import assert_kb_equal

    try:
        assert_kb_equal(left, right)
    except AssertionError:
        return False
    return True


def read_loop(job: dict, result: dict) -> None:
    """Reopen with ``verify=True`` until the writer stops; every read must equal exactly one saved version."""
    from crux_nb.testing import assert_kb_equal

    versions = [base_kb(extra=i) for i in range(job["versions"])]
    seen, errors = [], []
    _mark(job.get("ready"))
    _wait_for(job["go"])
    while True:
        last = os.path.exists(job["stop"])  # one more read after the writer finished
        try:
            kb = open_kb(job["path"], verify=True)
        except Exception as exc:  # noqa: BLE001 (recorded for the parent to assert on)
            errors.append(f"open: {type(exc).__name__}: {exc}")
        else:
            # versions differ in their sources: pick the candidate by them, then compare everything
            sources = set(kb.documents["source_id"])
            candidates = [i for i, v in enumerate(versions) if set(v.documents["source_id"]) == sources]
            try:
                assert len(candidates) == 1, f"sources match versions {candidates}"
                assert_kb_equal(kb, versions[candidates[0]])
            except AssertionError as exc:
                errors.append(f"content: {exc}")
            else:
                seen.append(candidates[0])
        _bump(job.get("reads"), len(seen) + len(errors))
        if last:
            break
    result.update(seen=seen, errors=errors)


def _write_result(path: str | None, result: dict) -> None:
    if path:
        with _open_builtin(path + ".tmp", "w") as fh:
            json.dump(result, fh)
        os.rename(path + ".tmp", path)


def _worker(job: dict) -> int:
    try:
        result = run_job(job)
        code = 0
    except BaseException as exc:  # noqa: BLE001
        result = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        code = 1
    _write_result(job.get("result"), result)
    return code


# ------------------------------------------------------------------ fork server

WARM = ("igraph", "leidenalg", "pyarrow.parquet", "tqdm.auto", "crux_nb", "crux_nb.community.cluster",
        "crux_nb.community.graph_input", "crux_nb.community.reports", "crux_nb.community.surface", "crux_nb.extract",
        "crux_nb.models.remote", "crux_nb.retrieval", "crux_nb.store.persist", "crux_nb.testing",
        "bm25s.stopwords")  # the lexical index a save stores reads its stop words from bm25s (seconds to import)


def _warm_up() -> None:
    """Import everything an operation imports lazily, so forked workers start at once."""
    import importlib

    for module in WARM:
        importlib.import_module(module)


def _returncode(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _read_result(path: str) -> dict | None:
    if not os.path.exists(path):
        return None
    with _open_builtin(path) as fh:
        return json.load(fh)


def _start(job: dict) -> int:
    """Fork a worker for ``job``; returns its pid."""
    for name in ("started", "result"):
        if job.get(name) and os.path.exists(job[name]):
            os.unlink(job[name])
    sys.stdout.flush()
    gc.freeze()  # workers share the server's heap copy-on-write: keep the collector from touching all of it
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the server loop
        code = 1
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            code = _worker(job)
        finally:
            os._exit(code)
    return pid


def _fork_all(jobs: list[dict]) -> list[dict]:
    """Run every job in its own forked worker, all at once; returns {returncode, timed_out, result} per job.

    ``kill_after``: SIGKILL the worker that many seconds after it marked its ``started`` file."""
    started = time.monotonic()
    pids = [_start(job) for job in jobs]
    deadlines = [time.monotonic() + float(job.get("timeout", 60)) for job in jobs]
    kill_times: list = [None] * len(jobs)
    timed_out = [False] * len(jobs)
    statuses: dict = {}
    while len(statuses) < len(jobs):
        for i, (pid, job) in enumerate(zip(pids, jobs)):
            if i in statuses:
                continue
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                statuses[i] = status
                continue
            now = time.monotonic()
            if job.get("kill_after") is not None and kill_times[i] is None and os.path.exists(job["started"]):
                kill_times[i] = now + float(job["kill_after"])
            if kill_times[i] is not None and now >= kill_times[i]:
                os.kill(pid, signal.SIGKILL)
                kill_times[i] = float("inf")
            if now > deadlines[i] and not timed_out[i]:
                timed_out[i] = True
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)
    return [{"returncode": _returncode(statuses[i]), "timed_out": timed_out[i], "result": _read_result(job["result"]),
             "seconds": round(time.monotonic() - started, 3)} for i, job in enumerate(jobs)]


def _fork(job: dict) -> dict:
    return _fork_all([job])[0]


def _handle(request: dict) -> dict:
    kind = request.pop("kind")
    if kind == "preload":
        for name, path in request["kbs"].items():
            PRELOADED[name] = open_kb(path, verify=True)
        return {"preloaded": sorted(PRELOADED)}
    if kind == "job":
        return _fork(request)
    if kind == "group":  # concurrent workers (concurrency tests)
        return {"replies": _fork_all(request["jobs"])}
    if kind == "case":  # kill, then check and later run in a fresh worker
        tag = request.pop("tag")
        work = request.pop("workdir")
        kill = _fork({**request, "preloaded": request["refs"][0],
                      "result": os.path.join(work, f"{tag}-kill.json"),
                      "started": os.path.join(work, f"{tag}-started")})
        checked = _fork({"op": "check", "of": request["op"], "path": request["path"], "refs": request["refs"],
                         "ttl": request["ttl"], "timeout": request.get("timeout", 60),
                         "result": os.path.join(work, f"{tag}-check.json")})
        return {"kill": kill, "check": checked}
    raise ValueError(f"unknown request {kind!r}")


def serve() -> None:
    # igraph imports matplotlib.pyplot for its drawing helpers (~2 s per interpreter); nothing here draws
    sys.modules.setdefault("matplotlib", None)
    small_parts()
    _warm_up()
    print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = _handle(json.loads(line))
        except Exception as exc:  # noqa: BLE001
            reply = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        print(json.dumps(reply), flush=True)


# ------------------------------------------------------------------ parent side

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}


def child_env() -> dict:
    return {**os.environ, **CHILD_ENV}


class ForkServer:
    """The parent's handle on one ``python _crash_harness.py serve`` process (not thread-safe: one user at a time)."""

    def __init__(self, workdir: str, name: str = "s"):
        import subprocess

        self.workdir, self.name, self.count = workdir, name, 0
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=child_env(), cwd=HERE)

    def wait_ready(self) -> None:
        hello = self.proc.stdout.readline()
        if not hello or not json.loads(hello).get("ready"):
            raise RuntimeError("the crash harness fork server did not start")

    def request(self, **request) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the crash harness fork server died")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"fork server: {reply['error']}\n{reply.get('traceback', '')}")
        return reply

    def _tag(self) -> str:
        self.count += 1
        return f"{self.name}{self.count}"

    def preload(self, **kbs) -> None:
        self.request(kind="preload", kbs={k: str(v) for k, v in kbs.items()})

    def job(self, op: str, path, **job) -> dict:
        tag = self._tag()
        return self.request(kind="job", op=op, path=str(path), result=os.path.join(self.workdir, f"{tag}.json"),
                            started=os.path.join(self.workdir, f"{tag}-started"), **job)

    def group(self, jobs: list[dict]) -> list[dict]:
        """Run jobs in concurrent workers; each job needs "op" and "path". Returns one reply per job."""
        full = []
        for job in jobs:
            tag = self._tag()
            full.append({"result": os.path.join(self.workdir, f"{tag}.json"),
                         "started": os.path.join(self.workdir, f"{tag}-started"), **job})
        return self.request(kind="group", jobs=full)["replies"]

    def case(self, op: str, path, *, refs: list[str], ttl: float, **job) -> dict:
        return self.request(kind="case", op=op, path=str(path), refs=refs, ttl=ttl, tag=self._tag(),
                            workdir=self.workdir, **job)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except Exception:  # noqa: BLE001
                self.proc.kill()
                self.proc.wait()


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "serve":
        serve()
    elif len(sys.argv) == 3 and sys.argv[1] == "run":
        with _open_builtin(sys.argv[2]) as fh:
            sys.exit(_worker(json.load(fh)))
    else:
        raise SystemExit(f"usage: {sys.argv[0]} serve | run JOB.json")
