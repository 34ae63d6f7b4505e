"""Which names of a Python program are kernels: functions written in a kernel language, names and
attributes bound to a compiled extension or a built kernel (also through factories and caches),
and the state every part of the Python analyser shares."""

from __future__ import annotations

import ast
import re

from stitch_mcp.analysis.languages import is_ext_loader, kernel_language
from stitch_mcp.analysis.model import Analysis
from stitch_mcp.analysis.ops import NN_MODULES
from stitch_mcp.analysis.py_program import Program, class_methods, chain_root, dotted


class Bindings:
    """The analyser's state, and the names bound to custom kernels."""

    def __init__(self, mod: Program, reference_source: str | None, is_reference: bool = False):
        self.mod = mod
        self.ref_src = reference_source or ""
        self.is_reference = is_reference
        self.a = Analysis()
        self.ext_names: set[str] = set()  # names bound to compiled extensions or built kernels
        self.ext_attrs: set[str] = set()  # self.<attr> bound to extensions (or containers of built kernels)
        self.ext_factories: set[str] = set()  # functions ("f") and methods ("self.f") returning an extension
        self.kernel_defs: dict[str, str] = {}  # kernel-language function -> language (triton, tilelang, ...)
        self.kernel_nodes: set[int] = set()  # ids of their FunctionDef nodes (device code, not host code)
        self.nn_attrs: dict[str, str] = {}  # self.<attr> -> canonical op of an nn module
        self.torch_aliases: dict[str, str] = {}  # local name -> the torch callable it holds
        self.seen: set[int] = set()  # ids of the functions reached from forward

    def ref_low_precision(self) -> bool:
        """Whether the reference computes in fp16/bf16 (so TF32/BF16 math is within its rules)."""
        return bool(re.search(r"float16|bfloat16|\.half\(\)|\bhalf\b", self.ref_src))

    def collect_bindings(self) -> None:
        """Kernel-language functions, nn modules held by self, torch aliases, and (to a fixed point) the
        names, attributes and factories bound to built kernels."""
        mod = self.mod
        for node in ast.walk(mod.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    lang = kernel_language(mod.resolve(dotted(dec.func if isinstance(dec, ast.Call) else dec)))
                    if lang:
                        self.kernel_defs.setdefault(node.name, lang)
                        self.kernel_nodes.add(id(node))
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                callee = mod.resolve(dotted(node.value.func))
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == "self":
                        cls = callee.rsplit(".", 1)[-1]
                        if cls in NN_MODULES and (callee.startswith("torch.nn") or callee.startswith("nn.")
                                                  or callee == cls):
                            self.nn_attrs[target.attr] = NN_MODULES[cls]
        torch_bound = self._torch_bound()
        # local aliases of torch callables: `relu = torch.relu` ... `relu(x)` is torch.relu(x)
        self.torch_aliases = {t.id: mod.resolve(dotted(n.value)) for n in ast.walk(mod.tree)
                              if isinstance(n, ast.Assign) and isinstance(n.value, ast.Attribute)
                              and mod.resolve(dotted(n.value)).startswith("torch.")
                              for t in n.targets if isinstance(t, ast.Name)}
        for _ in range(4):  # to a fixed point: factories of factories, caches of built kernels
            before = (len(self.ext_names), len(self.ext_attrs), len(self.ext_factories))
            self._bind_pass(torch_bound)
            if before == (len(self.ext_names), len(self.ext_attrs), len(self.ext_factories)):
                break

    def _torch_bound(self) -> set[str]:
        """Names also bound to a PyTorch callable, never trusted as kernels (`k = torch.relu; k(x)`), and
        attributes or containers of self that ever hold one (`self._k["x"] = torch.relu`)."""
        mod = self.mod
        torch_bound: set[str] = set()
        for n in ast.walk(mod.tree):
            if not isinstance(n, ast.Assign):
                continue
            value = mod.resolve(dotted(n.value.func if isinstance(n.value, ast.Call) else n.value))
            if not value.startswith("torch.") or isinstance(n.value, ast.Call) and is_ext_loader(value):
                continue
            for t in n.targets:
                t = t.value if isinstance(t, ast.Subscript) else t
                if isinstance(t, ast.Name):
                    torch_bound.add(t.id)
                elif isinstance(t, ast.Attribute):
                    torch_bound.add(t.attr)
        return torch_bound

    def _bind_pass(self, torch_bound: set[str]) -> None:
        """One pass binding names, attributes of self and factories to built kernels."""
        for node in self.host_nodes(self.mod.tree):
            if isinstance(node, ast.Assign) and self.builds_kernel(node.value):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id not in torch_bound:
                        self.ext_names.add(target.id)
                    elif isinstance(target, ast.Attribute) and target.attr not in torch_bound:
                        self.ext_attrs.add(target.attr)
                    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute) \
                            and target.value.attr not in torch_bound:
                        self.ext_attrs.add(target.value.attr)  # self._kernels[key] = build(...)
        scopes = [(n, fn) for n, fn in self.mod.functions.items()] + [
            (f"self.{n}", fn) for c in self.mod.classes.values() for n, fn in class_methods(c).items()]
        for name, fn in scopes:
            if id(fn) in self.kernel_nodes:
                continue
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Return) and node.value is not None and (
                        self.builds_kernel(node.value) or isinstance(node.value, ast.Name)
                        and node.value.id in self.kernel_defs):
                    self.ext_factories.add(name)

    def builds_kernel(self, value: ast.AST) -> bool:
        """Whether an expression evaluates to a compiled extension or a built kernel."""
        if isinstance(value, ast.Name):
            return value.id in self.ext_names
        if isinstance(value, ast.Attribute):
            return isinstance(value.value, ast.Name) and value.value.id == "self" and value.attr in self.ext_attrs
        if isinstance(value, ast.Subscript):
            return self.builds_kernel(value.value)
        if not isinstance(value, ast.Call):
            return False
        f = value.func
        written = dotted(f)
        if is_ext_loader(self.mod.resolve(written)) or written in self.ext_factories:
            return True
        if isinstance(f, ast.Name) and self.kernel_defs.get(f.id) in ("tilelang", "cute_dsl"):
            return True  # @tilelang.jit factories return the compiled kernel
        if isinstance(f, ast.Attribute) and f.attr in ("get", "setdefault", "get_function", "get_kernel",
                                                       "compile"):
            return self.builds_kernel(f.value)
        return False

    def is_kernel_call(self, f: ast.AST) -> bool:
        """Whether calling `f` runs custom device code."""
        if isinstance(f, ast.Name):
            return f.id in self.ext_names or f.id in self.kernel_defs
        if isinstance(f, ast.Subscript):  # kernel[grid](...) (Triton, Numba) or self._kernels[key](...)
            base = dotted(f.value)
            return base.rsplit(".", 1)[-1] in self.kernel_defs or self.builds_kernel(f.value)
        if isinstance(f, ast.Call):  # self._get_kernel(n)(x), build(n)(x)
            return self.builds_kernel(f)
        if isinstance(f, ast.Attribute):
            if f.attr == "launch" and isinstance(f.value, ast.Call):  # cute: kernel(args).launch(grid=...)
                return self.is_kernel_call(f.value.func)
            root = chain_root(f)
            return self.builds_kernel(f) or self.builds_kernel(f.value) or (
                isinstance(root, ast.Name) and root.id in self.ext_names)
        return False

    def host_nodes(self, fn: ast.AST):
        """ast.walk over host code: kernel-language functions nested in `fn` are device code."""
        todo = [fn]
        while todo:
            node = todo.pop()
            yield node
            todo.extend(c for c in ast.iter_child_nodes(node) if id(c) not in self.kernel_nodes)
