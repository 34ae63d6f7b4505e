"""The custom code a program carries: C++/CUDA string literals (handed to load_inline, CuPy, NVRTC,
jiterator, ...), kernels written in Python kernel languages, and the techniques they show."""

from __future__ import annotations

import ast
import re

from stitch_mcp.analysis.cxx import looks_like_cxx
from stitch_mcp.analysis.languages import DSL_TECHNIQUES
from stitch_mcp.analysis.model import TECHNIQUE_LABELS, CudaSource, OpUse, Technique, finding
from stitch_mcp.analysis.py_calls import Calls
from stitch_mcp.analysis.py_program import dotted


class CustomCode(Calls):
    """C++/CUDA sources and kernel-language kernels."""

    def collect_sources(self) -> None:
        """String literals that hold C++/CUDA (not docstrings or prose), then what the calls that build
        extensions say about their sources."""
        parents: dict[int, ast.AST] = {}
        for node in ast.walk(self.mod.tree):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        for node in ast.walk(self.mod.tree):
            text = None
            if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
                if isinstance(parents.get(id(node)), ast.JoinedStr):
                    continue
                text = node.value if isinstance(node.value, str) else node.value.decode("utf-8", "replace")
            elif isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "0" for v in node.values)
            if text is None or "\n" not in text and len(text) < 20:
                continue
            parent = parents.get(id(node))
            if isinstance(parent, ast.Expr):  # a docstring or bare string: prose, unless plainly code
                if not re.search(r"__global__|#include", text):
                    continue
            if looks_like_cxx(text):
                self.a.sources.append(CudaSource(text, node.lineno))
        self._extension_calls()

    def _extension_calls(self) -> None:
        """Sources loaded from files (not analysed), jiterator kernels (named by their code string) and
        fast-math flags handed to the extension builder."""
        for node in ast.walk(self.mod.tree):
            if isinstance(node, ast.Call) and self.mod.resolve(dotted(node.func)).endswith("cpp_extension.load"):
                self.a.notes.append(f"line {node.lineno}: sources loaded from files are not analysed")
            if isinstance(node, ast.Call) and self.mod.resolve(dotted(node.func)).endswith(
                    ("_create_jit_fn", "_create_multi_output_jit_fn")) and node.args:
                # torch.cuda.jiterator: the code string is a C++ function template that becomes the kernel
                arg = node.args[0]
                if isinstance(arg, ast.Name):  # code_string = "template <typename T> T k(T x) {...}"
                    arg = next((n.value for n in ast.walk(self.mod.tree) if isinstance(n, ast.Assign)
                                and any(isinstance(t, ast.Name) and t.id == arg.id for t in n.targets)), arg)
                code = arg.value if isinstance(arg, ast.Constant) else ""
                m = re.search(r"(\w+)\s*\(", re.sub(r"template\s*<[^>]*>", "", str(code)))
                if m and m.group(1) not in self.a.kernels:
                    self.a.kernels.append(m.group(1))
            if isinstance(node, ast.keyword) and node.arg in ("extra_cuda_cflags", "extra_cflags"):
                flags = [c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)
                         and isinstance(c.value, str)]
                if any("fast_math" in f or "fast-math" in f for f in flags):
                    self.a.techniques.append(Technique("fast_math", TECHNIQUE_LABELS["fast_math"],
                                                       node.value.lineno, self.mod.text(node.value.lineno)))

    def dsl_techniques(self) -> None:
        """Kernels written in Python kernel languages, and the techniques their calls and launch
        settings show (tl.dot / T.gemm / CuTe MMA atoms are tensor cores, num_stages and T.Pipelined
        pipeline the loads, ...)."""
        a, mod = self.a, self.mod
        a.kernels.extend(sorted(k for k in self.kernel_defs if k not in a.kernels))
        for node in ast.walk(mod.tree):  # device code cannot call PyTorch: a torch op there runs on the host
            if id(node) in self.kernel_nodes:
                for call in ast.walk(node):
                    if isinstance(call, ast.Call):
                        kind, op, written = self.classify(call, set())
                        if kind == "compute" and self.mod.resolve(dotted(call.func)).startswith("torch."):
                            a.torch_ops.append(OpUse(op, written, call.lineno, mod.text(call.lineno)))
        for node in ast.walk(mod.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) in self.kernel_nodes:
                lang = self.kernel_defs[node.name]
                if lang not in self.a.technique_keys():
                    a.techniques.append(Technique(lang, TECHNIQUE_LABELS[lang], node.lineno, mod.text(node.lineno)))
        if not self.kernel_defs and not self.ext_names and not self.ext_attrs:
            return
        self._triton_tf32()
        have = a.technique_keys()
        for node in ast.walk(mod.tree):
            name, line = "", getattr(node, "lineno", None)
            if isinstance(node, ast.Attribute):
                name = mod.resolve(dotted(node))
            elif isinstance(node, ast.keyword) and node.arg == "num_stages" and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, int) and node.value.value >= 2:
                name, line = "num_stages", node.value.lineno
            for pattern, key, label in DSL_TECHNIQUES:
                if name and key not in have and re.search(pattern, name):
                    have.add(key)
                    a.techniques.append(Technique(key, label, line, mod.text(line)))

    def _triton_tf32(self) -> None:
        """tl.dot on fp32 operands defaults to TF32: on an fp32 task say so unless the call asks for
        "ieee" or the 3xTF32 "tf32x3" precision (or allow_tf32=False)."""
        if self.ref_low_precision():
            return
        for node in ast.walk(self.mod.tree):
            if isinstance(node, ast.Call) and self.mod.resolve(dotted(node.func)) == "triton.language.dot":
                kw = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
                if kw.get("input_precision") in ("ieee", "tf32x3") or kw.get("allow_tf32") is False:
                    continue
                self.a.findings.append(finding(
                    "tf32_tensor_cores", "possible",
                    "tl.dot on fp32 operands uses TF32 by default (10 mantissa bits), a precision downgrade on an "
                    "fp32 task: pass input_precision=\"tf32x3\" (3xTF32, fp32-accurate) or \"ieee\"",
                    node.lineno, self.mod.text(node.lineno), severity="warning", doc_id="card:kernel-languages"))
                return

    def uses_gpu_code(self) -> bool:
        """Whether the program writes GPU code: kernel-language functions, CUDA sources or flags handed to
        the extension builder, imports of GPU kernel packages, jiterator."""
        mod = self.mod
        return bool(self.kernel_defs) or any(
            isinstance(n, ast.keyword) and n.arg in ("cuda_sources", "extra_cuda_cflags") for n in ast.walk(mod.tree)
        ) or any(name.split(".")[0] in ("cupy", "cupyx", "triton", "numba", "tilelang", "cutlass", "cuda", "pycuda")
                 or "jiterator" in name for name, _ in mod.imports + [(v, 0) for v in self.torch_aliases.values()]) \
            or any(".jiterator." in mod.resolve(dotted(n.func)) for n in ast.walk(mod.tree) if isinstance(n, ast.Call))
