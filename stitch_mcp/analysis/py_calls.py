"""What the forward pass calls: the methods and functions reachable from `ModelNew.forward`, and
each call classified as custom code, PyTorch compute, glue or other."""

from __future__ import annotations

import ast

from stitch_mcp.analysis.languages import LAUNCHERS
from stitch_mcp.analysis.ops import COMPUTE, GLUE, NN_MODULES, canonical_op
from stitch_mcp.analysis.py_bindings import Bindings
from stitch_mcp.analysis.py_program import class_methods, chain_root, dotted


class Calls(Bindings):
    """Reachability from forward and the classification of one call."""

    def reachable(self, cls: ast.ClassDef) -> list[ast.FunctionDef]:
        """forward (or __call__) and every method, function and autograd Function it calls in the file."""
        methods = class_methods(cls)
        # methods inherited from other classes in the file
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.mod.classes and base.id != cls.name:
                for k, v in class_methods(self.mod.classes[base.id]).items():
                    methods.setdefault(k, v)
        start = methods.get("forward") or methods.get("__call__")
        if start is None:
            return []
        out, todo = [], [start]
        while todo:
            fn = todo.pop()
            if id(fn) in self.seen or id(fn) in self.kernel_nodes:
                continue
            self.seen.add(id(fn))
            out.append(fn)
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Call):
                    f = node.func
                    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" \
                            and f.attr in methods:
                        todo.append(methods[f.attr])
                    elif isinstance(f, ast.Name) and f.id in self.mod.functions:
                        todo.append(self.mod.functions[f.id])
                    elif isinstance(f, ast.Name) and f.id in self.mod.classes:
                        call = class_methods(self.mod.classes[f.id]).get("apply") or class_methods(
                            self.mod.classes[f.id]).get("forward")
                        if call:
                            todo.append(call)
                    elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                            and f.value.id in self.mod.classes and f.attr in ("apply", "forward"):
                        m = class_methods(self.mod.classes[f.value.id])
                        if "forward" in m:
                            todo.append(m["forward"])
        return out

    def classify(self, call: ast.Call, tensors: set[str]) -> tuple[str, str, str]:
        """(kind, canonical op, text) with kind in custom, compute, glue, other."""
        f = call.func
        written = dotted(f)
        resolved = self.mod.resolve(written)
        if isinstance(f, ast.Name) and f.id in self.torch_aliases:
            resolved = self.torch_aliases[f.id]
        elif self.is_kernel_call(f):
            return "custom", written or ast.unparse(f)[:60], written
        if resolved.rsplit(".", 1)[-1] in LAUNCHERS or resolved.startswith("cuda.core") and \
                resolved.endswith(".launch"):
            return "custom", resolved, written
        if isinstance(f, ast.Attribute):
            inner = f.value
            if isinstance(inner, ast.Name) and inner.id == "self" and f.attr in self.nn_attrs:
                return "compute", self.nn_attrs[f.attr], written
        if resolved.startswith("torch.ops."):
            parts = resolved.split(".")
            if len(parts) > 3 and parts[2] == "aten":
                return "compute", canonical_op(parts[3]), written
            return "custom", resolved, written
        if resolved.startswith("torch.") or resolved.startswith("torch.nn.functional"):
            last = resolved.rsplit(".", 1)[-1]
            if ".cuda." in resolved or resolved.startswith("torch.cuda") or last in GLUE:
                return "glue", last, written
            if last in NN_MODULES:  # nn.ReLU()(x) style
                return "compute", NN_MODULES[last], written
            if last in COMPUTE:
                return "compute", canonical_op(last), written
            return "other", last, written
        if isinstance(f, ast.Attribute):
            name = f.attr
            recv = chain_root(f.value)
            tensorish = (isinstance(recv, ast.Name) and (recv.id in tensors or recv.id == "self"))
            if tensorish and name in COMPUTE and name not in GLUE:
                return "compute", canonical_op(name), written
            if tensorish and name in GLUE:
                return "glue", name, written
        if isinstance(f, ast.Call):  # nn.ReLU()(x)
            inner = self.mod.resolve(dotted(f.func)).rsplit(".", 1)[-1]
            if inner in NN_MODULES:
                return "compute", NN_MODULES[inner], written
        return "other", written, written

    def tensor_names(self, fn: ast.FunctionDef) -> set[str]:
        """The function's parameters and the locals computed from them (not their sizes)."""
        names = {a.arg for a in fn.args.args + fn.args.kwonlyargs if a.arg != "self"}
        if fn.args.vararg:
            names.add(fn.args.vararg.arg)
        shapeish = {"size", "shape", "numel", "dim", "stride", "item", "data_ptr", "element_size", "tolist",
                    "is_contiguous"}
        for _ in range(2):
            for node in self.host_nodes(fn):
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                    val = node.value
                    uses = {n.id for n in ast.walk(val) if isinstance(n, ast.Name)}
                    attrs = {n.attr for n in ast.walk(val) if isinstance(n, ast.Attribute)}
                    if uses & names and not (attrs & shapeish) or (isinstance(val, ast.Call) and not (
                            attrs & shapeish)):
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        for t in targets:
                            elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
                            names.update(e.id for e in elts if isinstance(e, ast.Name))
        return names

    def _binop(self, node: ast.BinOp, tensors: set[str]) -> str | None:
        """The op tensor arithmetic (`x @ w`, `x * 2`) computes, or None when no tensor takes part."""
        if isinstance(node.op, ast.MatMult):
            return "matmul"
        ops = {ast.Mult: "mul", ast.Add: "add", ast.Sub: "sub", ast.Div: "div", ast.Pow: "pow"}
        name = ops.get(type(node.op))
        if name is None:
            return None

        def tensorish(x: ast.AST) -> bool:
            if isinstance(x, ast.Name):
                return x.id in tensors
            if isinstance(x, ast.Attribute):
                return isinstance(x.value, ast.Name) and x.value.id == "self" and not x.attr.startswith("_")
            if isinstance(x, ast.Call):
                k, _, _ = self.classify(x, tensors)
                return k in ("compute", "custom")
            if isinstance(x, ast.BinOp):
                return self._binop(x, tensors) is not None
            return False

        if tensorish(node.left) or tensorish(node.right):
            return name
        return None
