"""The import graph of stitch_mcp keeps the rooms of ARCHITECTURE.md apart.

The graph is read from the source with `ast`, so every import counts: module level, inside a
function, under `if TYPE_CHECKING`. A lazy import does not fail at import time, but it still makes
two modules that a reader has to understand together, so it is an edge like any other.

Rules:
- no cycles;
- only the MCP layer imports `mcp` (the SDK);
- nothing imports the MCP layer or the entry points except the entry points (the MCP layer calls
  plain functions; a plain function never reaches back up into the server);
- the base modules (settings, errors, models, worker events, stage results, crash text, CUDA tool
  lookup) import no other part of stitch_mcp than each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "stitch_mcp"

# Modules that speak MCP: the server that declares the tools, its HTTP transport, and the demo,
# which plays the Coder as an MCP client over stdio. Any module named for the MCP layer joins it.
MCP_LAYER = {"stitch_mcp.server", "stitch_mcp.transport", "stitch_mcp.demo"}
# Entry points: the CLI and the Python API sit above everything and may import the MCP layer.
ENTRY = {"stitch_mcp.__main__", "stitch_mcp.cli", "stitch_mcp.api"}
BASE = {"stitch_mcp", "stitch_mcp.config", "stitch_mcp.errors", "stitch_mcp.models", "stitch_mcp.events",
        "stitch_mcp.crashes", "stitch_mcp.cuda_tools", "stitch_mcp.stage_results"}


def is_mcp_layer(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return module in MCP_LAYER or last == "mcp" or last.startswith("mcp_") or ".mcp." in module + "."


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under the package (a package is its __init__)."""
    mods = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement reaches (absolute; `from a import b` gives a.b and a)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        here = here[:len(here) - (node.level - 1)]
        base = ".".join(here + ([base] if base else []))
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def import_graph(package: Path = PACKAGE) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(edges between stitch_mcp modules, external top-level packages each module imports)."""
    mods = module_files(package)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    external: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for name in _targets(mod, path.name == "__init__.py", node):
                if name.split(".")[0] != "stitch_mcp":
                    if not (isinstance(node, ast.ImportFrom) and node.level):
                        external[mod].add(name.split(".")[0])
                    continue
                while name not in mods and "." in name:  # `from pkg.mod import func` -> pkg.mod
                    name = name.rsplit(".", 1)[0]
                if name in mods and name != mod:
                    edges[mod].add(name)
    return edges, external


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def cycle_path(edges: dict[str, set[str]], component: list[str]) -> str:
    """One cycle through a component, written a -> b -> ... -> a, for the failure message."""
    inside = set(component)
    start = component[0]
    path, seen, node = [start], {start}, start
    while True:
        nxt = sorted(edges[node] & inside)
        back = [n for n in nxt if n in seen]
        node = back[0] if back else next(n for n in nxt if n not in seen)
        if node in seen:
            return " -> ".join(path[path.index(node):] + [node])
        path.append(node)
        seen.add(node)


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_graph_sees_lazy_and_relative_imports(tmp_path):
    pkg = tmp_path / "stitch_mcp"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import leaf\n")
    (pkg / "sub" / "leaf.py").write_text("def f():\n    from stitch_mcp.top import g\n    import mcp.types\n")
    (pkg / "top.py").write_text("from stitch_mcp.sub.leaf import f\nfrom .sub import leaf\n")
    edges, external = import_graph(pkg)
    assert edges["stitch_mcp.sub"] == {"stitch_mcp.sub.leaf"}
    assert edges["stitch_mcp.sub.leaf"] == {"stitch_mcp.top"}
    assert edges["stitch_mcp.top"] == {"stitch_mcp.sub.leaf", "stitch_mcp.sub"}
    assert external["stitch_mcp.sub.leaf"] == {"mcp"}
    assert cycles(edges) == [["stitch_mcp.sub", "stitch_mcp.sub.leaf", "stitch_mcp.top"]]
    assert cycle_path(edges, cycles(edges)[0]) == "stitch_mcp.sub -> stitch_mcp.sub.leaf -> stitch_mcp.top -> stitch_mcp.sub"


def test_no_import_cycles(graph):
    edges, _ = graph
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(
        f"{', '.join(c)} (e.g. {cycle_path(edges, c)})" for c in found)


def test_only_the_mcp_layer_imports_mcp(graph):
    _, external = graph
    outside = sorted(m for m, pkgs in external.items() if "mcp" in pkgs and not is_mcp_layer(m))
    assert not outside, f"modules outside the MCP layer import `mcp`: {outside}"


def test_nothing_reaches_back_into_the_mcp_layer(graph):
    edges, _ = graph
    upward = sorted(f"{m} -> {t}" for m, ts in edges.items() for t in ts
                    if (is_mcp_layer(t) or t in ENTRY) and not (is_mcp_layer(m) or m in ENTRY))
    assert not upward, "plain modules import the MCP layer or an entry point:\n" + "\n".join(upward)


def test_base_modules_import_only_each_other(graph):
    edges, _ = graph
    wrong = sorted(f"{m} -> {t}" for m in BASE if m in edges for t in edges[m] - BASE)
    assert not wrong, "base modules reach into the rest of the package:\n" + "\n".join(wrong)
