"""crux_nb's storage makes the system allocator Arrow's default pool on Linux unless the user chose one
(crux_nb.store.memory): checked in fresh interpreters, since the pool is a process setting."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = ("import pyarrow as pa; before = pa.default_memory_pool().backend_name; import crux_nb.store; "
         "print(before, pa.default_memory_pool().backend_name)")


def _run(probe: str, **env: str) -> subprocess.CompletedProcess:
    """``probe`` in a fresh interpreter, with no pool chosen in the environment unless ``env`` chooses one."""
    environ = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"} | env
    return subprocess.run([sys.executable, "-c", probe], env=environ, capture_output=True, text=True)


def _pools(**env: str) -> list[str]:
    out = _run(PROBE, **env)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the allocator is switched on Linux only")
def test_the_storage_switches_arrow_from_mimalloc_to_the_system_allocator():
    before, after = _pools()
    if before != "mimalloc":
        pytest.skip(f"this pyarrow's default pool is {before}, not mimalloc: nothing to switch")
    assert after == "system"


@pytest.mark.parametrize("chosen", ["mimalloc", "system"])
def test_a_pool_the_user_chose_is_kept(chosen):
    assert _pools(ARROW_DEFAULT_MEMORY_POOL=chosen) == [chosen, chosen]


def test_a_pool_set_in_the_process_before_is_kept():
    probe = ("import pyarrow as pa; pa.set_memory_pool(pa.jemalloc_memory_pool()); import crux_nb.store; "
             "print(pa.default_memory_pool().backend_name)")
    out = _run(probe)
    if out.returncode and "jemalloc" in out.stderr:
        pytest.skip("this pyarrow has no jemalloc pool")
    assert out.stdout.split() == ["jemalloc"]
