"""The package's layering, checked on the import graph (imports inside functions count).

Layers, bottom first; a module may import its own layer and the layers below it, never above, and no
two modules may import each other directly or through others (no cycle, deferred imports included).
docs/architecture.md (the documentation's "Architecture" page) shows the same table.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "crux_nb"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("crux_nb.errors", "crux_nb.refs", "crux_nb.schema", "crux_nb.validation", "crux_nb._hashing",
                    "crux_nb.hits", "crux_nb.display")),
    ("store", ("crux_nb.store",)),
    ("graph", ("crux_nb.graph",)),
    ("models", ("crux_nb.models", "crux_nb.embeddings")),
    ("extract, community", ("crux_nb.extract", "crux_nb.community")),
    ("retrieval", ("crux_nb.retrieval",)),
    ("views", ("crux_nb.views",)),
    ("evaluation", ("crux_nb.evaluation",)),
    ("facade", ("crux_nb", "crux_nb.knowledgebase", "crux_nb.opening", "crux_nb.datasets", "crux_nb.testing",
                "crux_nb.conformance", "crux_nb.warmup", "crux_nb.warming")),
    ("io, widgets", ("crux_nb.io", "crux_nb.widgets")),
    # the demo application tells the whole story, views included
    ("demo", ("crux_nb.demo", "crux_nb.demo_story")),
]
# third-party imports that stay in their rooms (DESIGN section 7)
CONFINED = {
    "igraph": ("crux_nb.community",), "leidenalg": ("crux_nb.community",), "ipywidgets": ("crux_nb.widgets",),
    "urllib.request": ("crux_nb.models", "crux_nb.embeddings"), "http.client": ("crux_nb.models", "crux_nb.embeddings"),
    "requests": ("crux_nb.models", "crux_nb.embeddings"), "httpx": ("crux_nb.models", "crux_nb.embeddings"),
    "numba": ("crux_nb.graph",),
    # the document parsers of the formats extra (nbformat also writes the demo notebook: crux_nb.demo)
    "bs4": ("crux_nb.store.readers",), "docutils": ("crux_nb.store.readers",), "pypdf": ("crux_nb.store.readers",),
}
MAX_LINES = 400


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _in(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> int:
    """The layer of the longest matching prefix (``crux_nb`` itself only matches exactly)."""
    best, depth = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            hit = module == prefix if prefix == "crux_nb" else _in(module, prefix)
            if hit and prefix.count(".") > depth:
                best, depth = i, prefix.count(".")
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS here and to the table in docs/architecture.md")
    return best


def _skip_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"


def imports(module: str) -> list[tuple[str, int, bool]]:
    """``(imported name, line, is_internal)`` for every import statement, in functions too."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _skip_type_checking(child):
                continue  # annotations only: never executed, so never a runtime dependency
            if isinstance(child, ast.Import):
                out.extend((a.name, child.lineno, a.name.split(".")[0] == "crux_nb") for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package[:len(package) - child.level + 1] + ([base] if base else []))
                internal = base.split(".")[0] == "crux_nb"
                for a in child.names:
                    full = f"{base}.{a.name}"
                    out.append((full if full in MODULES else base, child.lineno, internal))
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return out


def internal_edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for name, _, internal in imports(module):
            if internal and name != module:
                target = name
                while target not in MODULES:  # `from crux_nb.x import y` where y is a name, not a module
                    target = target.rsplit(".", 1)[0]
                graph[module].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_import_cycles_even_through_deferred_imports():
    assert cycles(internal_edges()) == []


def test_imports_point_down_the_layers():
    wrong = []
    for module in MODULES:
        for name, line, internal in imports(module):
            if internal and name != module and layer_of(name) > layer_of(module):
                wrong.append(f"{MODULES[module].relative_to(ROOT.parent)}:{line} {module} "
                             f"({LAYERS[layer_of(module)][0]}) imports {name} ({LAYERS[layer_of(name)][0]})")
    assert wrong == []


def test_no_underscore_names_imported_across_packages():
    wrong = []
    for module in MODULES:
        tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
        package = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.level and not (node.module or "").startswith("crux_nb"):
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            base_package = base if base in MODULES and MODULES[base].name == "__init__.py" else base.rsplit(".", 1)[0]
            for alias in node.names:
                private = alias.name.startswith("_") or any(p.startswith("_") and p != "__init__"
                                                            for p in base.split(".")[1:])
                # crux_nb._hashing is the package's own private helper: shared by design at the bottom layer
                if private and base != "crux_nb._hashing" and base_package != package:
                    wrong.append(f"{module}:{node.lineno} imports {alias.name} from {base}")
    assert wrong == []


def test_heavy_and_network_imports_stay_in_their_rooms():
    wrong = []
    for module in MODULES:
        for name, line, internal in imports(module):
            for lib, rooms in CONFINED.items():
                if (name == lib or name.startswith(lib + ".")) and not any(_in(module, r) for r in rooms):
                    wrong.append(f"{module}:{line} imports {name} (allowed in {', '.join(rooms)} only)")
    assert wrong == []


def test_no_module_over_400_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert cycles(graph) == expected


def test_the_direction_check_sees_deferred_imports(tmp_path):
    # the checker itself: an import inside a function is found like one at module level
    found = [n for n, _, _ in imports("crux_nb.knowledgebase")]
    assert "crux_nb.retrieval.recipe" in found  # imported inside KnowledgeBase.recipe()
    assert layer_of("crux_nb.retrieval.recipe") > layer_of("crux_nb.store.persist")
