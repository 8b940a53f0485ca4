"""bench/ uses crux_nb's public API only (issue 13): every name it imports from crux_nb is in that module's
``__all__``, it reads no underscore attribute, and it patches nothing of crux_nb.

Reach-ins found: ``from crux_nb.x import y`` with ``y`` not in ``crux_nb.x.__all__``; ``import crux_nb.x``
(a module handle, then anything of it); ``crux_nb.x.y`` chains through names no ``__all__`` lists;
``._private`` attributes; ``importlib.import_module("crux_nb...")``; ``mock.patch("crux_nb...")`` and other
string targets; assigning to (or ``setattr`` on, or ``mock.patch.object`` of) anything imported from crux_nb.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import types

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[1] / "bench"


def _public(module: types.ModuleType, name: str) -> bool:
    return name in getattr(module, "__all__", ())


def _public_link(module: types.ModuleType, name: str) -> bool:
    """``module.name`` in an attribute chain: a name of its ``__all__``, or a public subpackage (one with an
    ``__all__`` of its own, as ``crux_nb.community``: its names are then checked in turn)."""
    if _public(module, name):
        return True
    inner = getattr(module, name, None)
    return isinstance(inner, types.ModuleType) and not name.startswith("_") and hasattr(inner, "__all__")


def reach_ins(source: str, name: str = "<bench>") -> list[str]:
    """Every non-public use of crux_nb in one file's source, as ``name:line: what``."""
    tree = ast.parse(source)
    bad: list[str] = []
    bound: dict[str, object] = {}  # local name -> the crux_nb object it is bound to

    def flag(node: ast.AST, what: str) -> None:
        bad.append(f"{name}:{node.lineno}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "crux_nb":
            module = importlib.import_module(node.module)
            for alias in node.names:
                if not _public(module, alias.name):
                    flag(node, f"from {node.module} import {alias.name}")
                bound[alias.asname or alias.name] = getattr(module, alias.name, None)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "crux_nb":
                    continue
                if alias.name != "crux_nb":
                    flag(node, f"import {alias.name}")
                if alias.asname:
                    bound[alias.asname] = importlib.import_module(alias.name)
                else:
                    bound["crux_nb"] = importlib.import_module("crux_nb")

    def root(node: ast.AST) -> str | None:
        while isinstance(node, ast.Attribute):
            node = node.value
        return node.id if isinstance(node, ast.Name) and node.id in bound else None

    def chain_link(node: ast.Attribute) -> str | None:
        """The first non-public link of a chain ``bound.a.b...`` ending at ``node`` (checked only here)."""
        names = []
        cur: ast.AST = node
        while isinstance(cur, ast.Attribute):
            names.append(cur.attr)
            cur = cur.value
        if not isinstance(cur, ast.Name) or cur.id not in bound:
            return None
        obj, path = bound[cur.id], cur.id
        for attr in reversed(names):
            if not isinstance(obj, types.ModuleType):
                return None
            if not _public_link(obj, attr):
                return f"{path}.{attr} (not in {obj.__name__}.__all__)"
            obj, path = getattr(obj, attr, None), f"{path}.{attr}"
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_") and not node.attr.startswith("__"):
                flag(node, f"attribute .{node.attr}")
            elif (link := chain_link(node)) is not None:
                flag(node, link)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            flat = [t for target in targets for t in (target.elts if isinstance(target, (ast.Tuple, ast.List))
                                                       else [target])]
            for target in flat:
                if isinstance(target, ast.Attribute) and root(target):
                    flag(node, f"assigns {ast.unparse(target)} (patches crux_nb)")
        elif isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            args = node.args
            text = [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if func.endswith(("import_module", "__import__")) and any(t.startswith("crux_nb") for t in text):
                flag(node, f"{func}({text[0]!r})")
            elif "patch" in func.split(".") or func.split(".")[-1].startswith("patch") or func.endswith("setattr"):
                if any(t.startswith("crux_nb") for t in text):
                    flag(node, f"{func}({text[0]!r}) (patches crux_nb)")
                elif args and root(args[0]):
                    flag(node, f"{func}({ast.unparse(args[0])}, ...) (patches crux_nb)")
    return sorted(set(bad), key=lambda s: (s.split(":")[0], int(s.split(":")[1]), s))


@pytest.mark.parametrize("path", sorted(BENCH.glob("*.py")), ids=lambda p: p.name)
def test_bench_uses_the_public_api_only(path):
    assert reach_ins(path.read_text(encoding="utf-8"), path.name) == []


@pytest.mark.parametrize("source, expected", [
    ("from crux_nb.community.cluster import cluster", "from crux_nb.community.cluster import cluster"),
    ("import crux_nb.store.state as m\nm.with_edges", "import crux_nb.store.state"),
    ("from crux_nb import community\ncommunity.cluster(1)", "community.cluster (not in crux_nb.community.__all__)"),
    ("import crux_nb\ncrux_nb.store.state", "crux_nb.store (not in crux_nb.__all__)"),
    ("import crux_nb\ncrux_nb.community.frames", "crux_nb.community.frames (not in crux_nb.community.__all__)"),
    ("import crux_nb\ncrux_nb.retrieval.globalsearch.units.x", "crux_nb.retrieval.globalsearch.units (not in"),
    ("x._secret", "attribute ._secret"),
    ("import importlib\nimportlib.import_module('crux_nb.store.state')", "importlib.import_module('crux_nb.store.state')"),
    ("from unittest import mock\nmock.patch('crux_nb.store.state.fast_edge_rows')", "(patches crux_nb)"),
    ("from crux_nb.community import CommunitySurface\nCommunitySurface.prepare = None", "assigns CommunitySurface.prepare"),
    ("import crux_nb.retrieval as r\nr.retrieve, r.x = 1, 2", "assigns r.retrieve"),
    ("import crux_nb\nsetattr(crux_nb, 'x', 1)", "setattr(crux_nb, ...) (patches crux_nb)"),
    ("from unittest import mock\nimport crux_nb\nmock.patch.object(crux_nb.models, 'OfflineModel')", "(patches crux_nb)"),
])
def test_the_checker_finds_each_kind_of_reach_in(source, expected):
    found = reach_ins(source)
    assert any(expected in line for line in found), found


def test_the_checker_accepts_public_use():
    source = ("import crux_nb\nfrom crux_nb.community import cluster_graph, community_graph\n"
              "from crux_nb.retrieval import retrieve\nkb = crux_nb.knowledge_base(id='x')\n"
              "crux_nb.models.OfflineModel()\ncluster_graph(community_graph(kb))\nkb.name = 'y'\n")
    assert reach_ins(source) == []
