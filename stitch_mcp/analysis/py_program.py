"""One parsed Python program: its imports (so `F.relu` resolves to torch.nn.functional.relu), its
top-level functions and classes, and helpers to read dotted names from the AST."""

from __future__ import annotations

import ast


def dotted(node: ast.AST) -> str:
    """'torch.nn.functional.relu' for an Attribute chain; '' when the root is not a Name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):
        inner = dotted(node.func)
        return (inner + "()." + ".".join(reversed(parts))) if inner and parts else ""
    if isinstance(node, ast.Subscript):
        inner = dotted(node.value)
        return (inner + "[]" + ("." + ".".join(reversed(parts)) if parts else "")) if inner else ""
    return ""


def chain_root(node: ast.AST) -> ast.AST:
    """The node an attribute, subscript or call chain starts from: `x` for x.a[0].f()."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


class Program:
    """Names and definitions of one parsed program."""

    def __init__(self, tree: ast.Module, source: str):
        self.tree, self.source = tree, source
        self.lines = source.splitlines()
        self.alias: dict[str, str] = {}  # local name -> dotted module path
        self.imports: list[tuple[str, int]] = []
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.alias[(a.asname or a.name).split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                    self.imports.append((a.name, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                for a in node.names:
                    self.alias[a.asname or a.name] = f"{mod}.{a.name}" if mod else a.name
                    self.imports.append((f"{mod}.{a.name}" if mod else a.name, node.lineno))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node

    def text(self, line: int | None) -> str:
        return self.lines[line - 1].strip() if line and 0 < line <= len(self.lines) else ""

    def resolve(self, dotted: str) -> str:
        """Expand the first component through imports: F.relu -> torch.nn.functional.relu."""
        if not dotted:
            return dotted
        head, _, rest = dotted.partition(".")
        full = self.alias.get(head)
        if full is None:
            return dotted
        return f"{full}.{rest}" if rest else full


def class_methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    """A class's methods by name."""
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
