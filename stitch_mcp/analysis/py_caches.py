"""Caches that replay outputs: input-derived data kept in globals or attributes of self, results
stored under keys made from the inputs, memoized functions. A compiled kernel, plan, handle or
descriptor cached per shape is fine."""

from __future__ import annotations

import ast

from stitch_mcp.analysis.languages import is_ext_loader
from stitch_mcp.analysis.model import finding
from stitch_mcp.analysis.py_calls import Calls
from stitch_mcp.analysis.py_program import dotted


class CacheChecks(Calls):
    """Findings on global, attribute and output caches and on memoized functions."""

    def check_caches(self, fns: list[ast.FunctionDef]) -> None:
        """Caches in each reachable function; then identical findings (same code, same line) kept once."""
        for fn in fns:
            tensors = self.tensor_names(fn)  # the inputs and what is derived from them
            local_values = self._local_values(fn)
            stored_attrs: dict[str, int] = {}  # self.<attr> filled from the inputs -> line
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Global):
                    self._global_cache(fn, node, tensors)
                if isinstance(node, ast.Assign):
                    self._stored(node, tensors, local_values, stored_attrs)
            self._attribute_cache(fn, stored_attrs)
            self._memoized(fn)
        # dedupe identical findings
        seen, uniq = set(), []
        for f in self.a.findings:
            key = (f.code, f.evidence[0].line if f.evidence else None)
            if key not in seen:
                seen.add(key)
                uniq.append(f)
        self.a.findings[:] = uniq

    def _local_values(self, fn: ast.FunctionDef) -> dict[str, list[ast.AST]]:
        """Local name -> the values assigned to it."""
        local_values: dict[str, list[ast.AST]] = {}
        for node in self.host_nodes(fn):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                        if isinstance(e, ast.Name):
                            local_values.setdefault(e.id, []).append(node.value)
        return local_values

    def _global_cache(self, fn: ast.FunctionDef, node: ast.Global, tensors: set[str]) -> None:
        """A `global` the function assigns from its inputs."""
        for g in node.names:
            assigned = [n for n in ast.walk(fn) if isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == g for t in n.targets)]
            if any(self._from_inputs(n.value, tensors) for n in assigned):
                self.a.findings.append(finding("global_cache", "certain",
                                               f"forward stores input-derived data in global `{g}`: "
                                               "outputs can be replayed across calls", node.lineno,
                                               self.mod.text(node.lineno)))

    def _stored(self, node: ast.Assign, tensors: set[str], local_values: dict[str, list[ast.AST]],
                stored_attrs: dict[str, int]) -> None:
        """An assignment that fills self.<attr> from the inputs (noted in stored_attrs), or that stores a
        result in a container outliving the call (an output cache)."""
        mod = self.mod
        for t in node.targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" \
                    and self._from_inputs(node.value, tensors) and \
                    not (isinstance(node.value, ast.Call) and is_ext_loader(mod.resolve(dotted(node.value.func)))):
                stored_attrs[t.attr] = node.lineno
            if isinstance(t, ast.Subscript) and self._persistent(t.value, local_values) \
                    and self._is_output(node.value, tensors):
                keyed = self._keyed_by_identity(t.slice) or any(
                    self._keyed_by_identity(v) for n in ast.walk(t.slice)
                    if isinstance(n, ast.Name) for v in local_values.get(n.id, []))
                self.a.findings.append(finding("output_cache", "certain" if keyed else "probable",
                                               "results are cached under a key made from the inputs' "
                                               "identity, pointer, shape or values (caching a compiled "
                                               "kernel, plan, handle or descriptor per shape is fine; "
                                               "caching outputs is not)", node.lineno, mod.text(node.lineno)))

    def _attribute_cache(self, fn: ast.FunctionDef, stored_attrs: dict[str, int]) -> None:
        """forward returning, or branching on, an attribute it filled from its inputs."""
        a, mod = self.a, self.mod
        for node in self.host_nodes(fn):
            if isinstance(node, ast.Return) and node.value is not None:
                for n in ast.walk(node.value):
                    if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" \
                            and n.attr in stored_attrs:
                        a.findings.append(finding(
                            "attribute_cache", "certain",
                            f"forward returns self.{n.attr}, which an earlier call filled from its inputs: "
                            "a cached output", stored_attrs[n.attr], mod.text(stored_attrs[n.attr])))
            if isinstance(node, ast.If):
                test_attrs = {n.attr for n in ast.walk(node.test) if isinstance(n, ast.Attribute)}
                for attr in stored_attrs.keys() & test_attrs:
                    a.findings.append(finding(
                        "attribute_cache", "probable",
                        f"forward branches on self.{attr}, which it fills from its inputs", node.lineno,
                        mod.text(node.lineno), severity="warning"))

    def _memoized(self, fn: ast.FunctionDef) -> None:
        """functools.cache / lru_cache on the function."""
        for dec in fn.decorator_list:
            d = self.mod.resolve(dotted(dec.func if isinstance(dec, ast.Call) else dec))
            if d.endswith(("lru_cache", "functools.cache", "cache")) and "functools" in d or d == "cache":
                self.a.findings.append(finding("memoized_function", "probable",
                                               f"{fn.name} is memoized; with tensor arguments that replays outputs",
                                               dec.lineno, self.mod.text(dec.lineno), severity="warning"))

    @staticmethod
    def _from_inputs(value: ast.AST, inputs: set[str]) -> bool:
        return any(isinstance(n, ast.Name) and n.id in inputs and n.id != "self" for n in ast.walk(value))

    @staticmethod
    def _keyed_by_identity(key: ast.AST) -> bool:
        """Whether a cache key reads the inputs' identity, pointer, shape or values."""
        for n in ast.walk(key):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("id", "hash"):
                return True
            if isinstance(n, ast.Attribute) and n.attr in ("data_ptr", "shape", "_cdata", "untyped_storage", "size",
                                                           "item", "tolist", "tobytes", "sum", "numpy"):
                return True
        return False

    @staticmethod
    def _persistent(container: ast.AST, local_values: dict[str, list[ast.AST]]) -> bool:
        """A container that outlives the call: an attribute of self or a module-level name."""
        if isinstance(container, ast.Attribute):
            return isinstance(container.value, ast.Name) and container.value.id == "self"
        return isinstance(container, ast.Name) and container.id not in local_values

    _SIZES = {"size", "shape", "numel", "dim", "ndim", "ndimension", "stride", "dtype", "device", "is_contiguous",
              "element_size", "get_device", "is_cuda", "layout"}

    def _is_output(self, value: ast.AST, tensors: set[str]) -> bool:
        """Whether a cached value is (derived from) a result on the inputs' data, as opposed to a
        compiled kernel, a plan, a handle or a descriptor built from sizes, dtypes and devices."""
        if self.builds_kernel(value):
            return False
        sized = {id(n.value) for n in ast.walk(value) if isinstance(n, ast.Attribute) and n.attr in self._SIZES}
        return any(isinstance(n, ast.Name) and n.id in tensors and n.id != "self" and id(n) not in sized
                   for n in ast.walk(value))
