"""The project's own setup: dependency lists agree, docstring examples run, README quick start holds."""

import re
import tomllib
from pathlib import Path

import yaml

import crux_nb

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"igraph": "python-igraph"}


def _name_and_spec(requirement: str) -> tuple[str, str]:
    match = re.match(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", requirement)
    return match.group(1).lower(), match.group(3).replace(" ", "")


def test_environment_yml_lists_what_pyproject_lists():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = dict(_name_and_spec(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = {}
    for dep in env["dependencies"]:
        if isinstance(dep, str) and dep != "pip":
            name, spec = _name_and_spec(dep)
            conda[name] = spec
    assert conda.pop("python") == ">=" + project["requires-python"].removeprefix(">=")
    expected = {CONDA_NAMES.get(k, k): v for k, v in wanted.items()}
    assert conda == expected
    assert any(isinstance(d, dict) and "-e ." in d.get("pip", []) for d in env["dependencies"])


def test_readme_quick_start_is_the_two_make_commands():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start.*?```(?:bash|sh)?\n(.*?)```", readme, re.S).group(1)
    assert [line.strip() for line in block.strip().splitlines()] == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_heavy_imports_stay_in_their_rooms():
    """igraph/leidenalg only under community/ (and graph/), ipywidgets only under widgets/, HTTP only under models/."""
    rooms = {"igraph": ("community", "graph"), "leidenalg": ("community",), "ipywidgets": ("widgets",),
             "anywidget": ("widgets",), "urllib.request": ("models",), "http.client": ("models",),
             "requests": ("models",), "httpx": ("models",)}
    for path in (ROOT / "crux_nb").rglob("*.py"):
        rel = path.relative_to(ROOT / "crux_nb").parts
        text = path.read_text()
        for module, allowed in rooms.items():
            if re.search(rf"^\s*(import|from)\s+{re.escape(module)}\b", text, re.M):
                assert rel[0] in allowed, f"{'/'.join(rel)} imports {module}"
