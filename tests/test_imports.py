"""No import cycle among the modules of gaplanner/ and service/, counting imports inside functions.

Read from the source (nothing is imported): every ``import`` and ``from ... import``
anywhere in a module, except under ``if TYPE_CHECKING:``, is an arrow to the module it
names (``from package import name`` to ``package.name`` when that is a module).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gaplanner", "service")


def module_files() -> dict[str, Path]:
    """Every module of the packages, by dotted name (a package by its own name)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imports(tree: ast.AST, name: str, is_package: bool) -> list[tuple[str, list[str]]]:
    """(module, names imported from it) for every import in ``tree``, TYPE_CHECKING blocks left out."""
    found: list[tuple[str, list[str]]] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if _type_checking_only(node):
            stack.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            found.append((base, [alias.name for alias in node.names]))
        stack.extend(ast.iter_child_nodes(node))
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports."""
    files = module_files()
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets = set()
        for module, names in _imports(ast.parse(path.read_text()), name, path.name == "__init__.py"):
            submodules = {f"{module}.{n}" for n in names} & files.keys()
            if submodules:
                targets |= submodules
            if module in files and (not names or set(names) - {s.rsplit(".", 1)[1] for s in submodules}):
                targets.add(module)
        graph[name] = targets - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_cycle_inside_a_function_and_ignores_type_checking() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a.c\ndef f():\n    from a import b\n"
    )
    assert sorted(_imports(tree, "a.x", False)) == [("a", ["b"]), ("typing", ["TYPE_CHECKING"])]
    assert cycles({"a.b": {"a.x"}, "a.x": {"a.b"}, "a.c": {"a.x"}}) == [["a.b", "a.x"]]
    assert cycles({"a.b": {"a.x"}, "a.x": set()}) == []


def test_no_module_of_gaplanner_or_service_imports_itself_round_a_circle() -> None:
    graph = import_graph()
    assert len(graph) > 60 and "gaplanner.solve" in graph["gaplanner"]
    assert cycles(graph) == []
