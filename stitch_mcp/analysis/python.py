"""The Python analyser: what `ModelNew.forward` (and everything it calls in the file) calls, split
into custom code, PyTorch compute ops and glue, with the anti-hacking checks. Read with `ast`;
nothing here imports torch or runs the candidate."""

from __future__ import annotations

import ast

from stitch_mcp.analysis.model import Analysis, OpUse
from stitch_mcp.analysis.py_caches import CacheChecks
from stitch_mcp.analysis.py_checks import Checks
from stitch_mcp.analysis.py_custom import CustomCode


class PyAnalyzer(CustomCode, Checks, CacheChecks):
    """One program read: `run()` returns its Analysis (of `Model` when is_reference)."""

    def run(self) -> Analysis:
        a = self.a
        self.collect_bindings()
        self.collect_sources()
        cls = self.mod.classes.get("Model" if self.is_reference else "ModelNew")
        a.has_modelnew = cls is not None
        if cls is None:
            return a
        fns = self.reachable(cls)
        for fn in fns:
            self.forward_ops(fn)
        if self.is_reference:
            return a
        self.dsl_techniques()
        a.gpu_code = a.gpu_code or self.uses_gpu_code()
        self.check_fallbacks(cls, fns)
        self.check_reference_use(cls)
        self.check_caches(fns)
        self.check_concurrency(fns)
        self.check_harness()
        self.check_streams_py()
        self.check_precision(fns)
        return a

    def forward_ops(self, fn: ast.FunctionDef) -> None:
        """The PyTorch compute (calls and tensor arithmetic) and the custom calls of one reachable function."""
        a, mod = self.a, self.mod
        tensors = self.tensor_names(fn)
        for node in self.host_nodes(fn):
            if isinstance(node, ast.Call):
                kind, op, written = self.classify(node, tensors)
                if kind == "compute":
                    a.torch_ops.append(OpUse(op, written, node.lineno, mod.text(node.lineno)))
                elif kind == "custom":
                    a.custom_calls.append(OpUse(op, written, node.lineno, mod.text(node.lineno)))
            elif isinstance(node, ast.BinOp):
                op = self._binop(node, tensors)
                if op:
                    a.torch_ops.append(OpUse(op, ast.unparse(node)[:60], node.lineno, mod.text(node.lineno)))
