"""Anti-hacking checks on the Python side: try/except and conditional fallbacks to PyTorch, use of
the reference, threads, processes and sleeps, patches of torch, timers or the harness, private
CUDA streams, and precision drops on an fp32 task."""

from __future__ import annotations

import ast

from stitch_mcp.analysis.model import TECHNIQUE_LABELS, Technique, finding
from stitch_mcp.analysis.ops import PRECISION_CASTS
from stitch_mcp.analysis.py_calls import Calls
from stitch_mcp.analysis.py_program import class_methods, dotted


class Checks(Calls):
    """Findings on fallbacks, the reference, concurrency, the harness, streams and precision."""

    def check_fallbacks(self, cls: ast.ClassDef, fns: list[ast.FunctionDef]) -> None:
        """try/except and if/else where one side runs the custom kernel and the other PyTorch."""
        a, mod = self.a, self.mod
        for fn in fns:
            tensors = self.tensor_names(fn)
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Try):
                    body_kinds = self._kinds(node.body, tensors)
                    for h in node.handlers:
                        hk = self._kinds(h.body, tensors)
                        if "compute" in hk:
                            line = next(n.lineno for n in ast.walk(ast.Module(body=h.body, type_ignores=[]))
                                        if isinstance(n, ast.Call) and self.classify(n, tensors)[0] == "compute")
                            conf = "certain" if "custom" in body_kinds or not body_kinds else "probable"
                            a.findings.append(finding(
                                "try_except_fallback", conf,
                                "a try/except falls back to PyTorch compute when the custom path fails, so a "
                                "broken kernel still passes", line, mod.text(line)))
                        elif all(isinstance(s, ast.Pass) for s in h.body) and "custom" in body_kinds:
                            a.findings.append(finding(
                                "swallowed_kernel_error", "probable",
                                "a failing custom call is silenced with `except: pass`; its output may be garbage",
                                h.lineno, mod.text(h.lineno), severity="warning"))
                elif isinstance(node, ast.If):
                    bk, ok = self._kinds(node.body, tensors), self._kinds(node.orelse, tensors)
                    if ("custom" in bk and "compute" in ok) or ("compute" in bk and "custom" in ok):
                        a.findings.append(finding(
                            "conditional_fallback", "possible",
                            "one branch runs the custom kernel and the other PyTorch; make sure the benchmark "
                            "inputs take the custom branch", node.lineno, mod.text(node.lineno), severity="warning"))

    def _kinds(self, body: list[ast.stmt], tensors: set[str]) -> set[str]:
        """The kinds of the calls in a block (custom, compute, glue, other; method for self.f())."""
        kinds = set()
        for stmt in body:
            for n in ast.walk(stmt):
                if isinstance(n, ast.Call):
                    kinds.add(self.classify(n, tensors)[0])
                    f = n.func
                    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                        kinds.add("method")
        return kinds

    def check_reference_use(self, cls: ast.ClassDef) -> None:
        """Imports of the reference, dynamic imports and exec, ModelNew running the reference Model."""
        a, mod = self.a, self.mod
        for name, line in mod.imports:
            low = name.lower()
            if any(w in low.split(".") for w in ("reference", "ref", "kernelbench", "problem", "task")) or \
                    low.endswith(".model") or "reference" in low:
                a.findings.append(finding("reference_import", "certain",
                                          f"imports `{name}`: the candidate must not run the reference", line,
                                          mod.text(line)))
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Call):
                d = mod.resolve(dotted(node.func))
                if d in ("importlib.import_module", "__import__", "exec", "eval", "runpy.run_path",
                         "importlib.util.spec_from_file_location", "inspect.getsource"):
                    a.findings.append(finding("dynamic_import", "probable",
                                              f"`{d}` loads or runs code the rubric cannot see", node.lineno,
                                              mod.text(node.lineno), severity="warning"))
            if isinstance(node, ast.Subscript) and mod.resolve(dotted(node.value)) == "sys.modules":
                a.findings.append(finding("dynamic_import", "probable", "reads or writes sys.modules",
                                          node.lineno, mod.text(node.lineno), severity="warning"))
        for base in cls.bases:
            bname = dotted(base)
            if bname.split(".")[-1] == "Model":
                if "Model" not in mod.classes:
                    a.findings.append(finding("reference_reuse", "certain",
                                              "ModelNew subclasses the reference Model", cls.lineno,
                                              mod.text(cls.lineno)))
                else:
                    fwd = class_methods(cls).get("forward")
                    if fwd is None or any(isinstance(n, ast.Call) and dotted(n.func).endswith("forward") and
                                          isinstance(n.func, ast.Attribute) and
                                          (dotted(n.func).startswith("super()") or
                                           dotted(n.func).startswith("Model.")) for n in ast.walk(fwd)):
                        a.findings.append(finding("reference_reuse", "certain",
                                                  "ModelNew runs the reference Model's forward", cls.lineno,
                                                  mod.text(cls.lineno)))
        fwd = class_methods(cls).get("forward")
        if fwd is not None:
            for n in ast.walk(fwd):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Model":
                    a.findings.append(finding("reference_reuse", "certain", "forward builds the reference Model",
                                              n.lineno, mod.text(n.lineno)))

    def check_concurrency(self, fns: list[ast.FunctionDef]) -> None:
        """Threads, processes, asyncio tasks, subprocesses and sleeps anywhere in the program."""
        a, mod = self.a, self.mod
        for node in ast.walk(mod.tree):
            if not isinstance(node, ast.Call):
                continue
            d = mod.resolve(dotted(node.func))
            last = d.rsplit(".", 1)[-1]
            if last in ("Thread", "Timer") and d.startswith("threading") or last in ("Process", "Pool") and \
                    d.startswith("multiprocessing") or last in ("ThreadPoolExecutor", "ProcessPoolExecutor") or \
                    d in ("os.fork", "_thread.start_new_thread", "asyncio.create_task", "asyncio.run"):
                a.findings.append(finding("background_work", "certain",
                                          f"starts concurrent work (`{d}`): work outside the timed call or "
                                          "racing the harness", node.lineno, mod.text(node.lineno)))
            elif d.startswith("subprocess.") or d in ("os.system", "os.popen", "os.execv", "os.spawnv"):
                a.findings.append(finding("subprocess", "probable", f"runs a process (`{d}`)", node.lineno,
                                          mod.text(node.lineno), severity="warning"))
            elif d == "time.sleep":
                a.findings.append(finding("sleep", "probable", "sleeps: nothing a kernel wrapper needs, and it "
                                          "distorts timing", node.lineno, mod.text(node.lineno),
                                          severity="warning"))

    _GUARDED = ("torch", "time", "timeit", "builtins", "sys", "gc", "inspect", "kernelbench", "stitch_mcp",
                "triton", "numpy", "os", "importlib")

    def check_harness(self) -> None:
        """Assignments, deletions and setattr on torch, timers, sys.modules or the harness."""
        a, mod = self.a, self.mod
        for node in ast.walk(mod.tree):
            targets: list[ast.AST] = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            elif isinstance(node, ast.Delete):
                targets = node.targets
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "setattr", "delattr") and node.args:
                d = mod.resolve(dotted(node.args[0]))
                if d.split(".")[0] in self._GUARDED:
                    a.findings.append(finding("harness_patch", "certain",
                                              f"{node.func.id} on `{d}`: patching torch, timers or the harness",
                                              node.lineno, mod.text(node.lineno)))
                continue
            for t in targets:
                if isinstance(t, ast.Subscript) and mod.resolve(dotted(t.value)) in ("sys.modules", "os.environ"):
                    a.findings.append(finding("harness_patch", "certain" if "modules" in dotted(t.value) else
                                              "probable", f"writes {mod.resolve(dotted(t.value))}", node.lineno,
                                              mod.text(node.lineno)))
                    continue
                if not isinstance(t, ast.Attribute):
                    continue
                d = mod.resolve(dotted(t))
                head = d.split(".")[0]
                if head not in self._GUARDED:
                    continue
                if d.startswith(("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32",
                                 "torch.backends.cuda.matmul.allow_fp16", "torch.backends.cuda.matmul.allow_bf16")):
                    if not self.ref_low_precision():
                        a.findings.append(finding("precision_downgrade", "probable",
                                                  f"sets {d}: a silent precision drop on an fp32 task",
                                                  node.lineno, mod.text(node.lineno), severity="warning"))
                    continue
                if d.startswith(("torch.backends.cudnn.benchmark", "torch.backends.cudnn.deterministic")):
                    continue
                a.findings.append(finding("harness_patch", "certain",
                                          f"assigns `{d}`: patching torch, timers or the harness is tampering",
                                          node.lineno, mod.text(node.lineno)))

    def check_streams_py(self) -> None:
        """Private torch.cuda.Streams (joined or not) and CUDA graphs."""
        a, mod = self.a, self.mod
        creates, joins = [], []
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Call):
                d = mod.resolve(dotted(node.func))
                if d in ("torch.cuda.Stream", "torch.cuda.streams.Stream"):
                    creates.append(node.lineno)
                last = d.rsplit(".", 1)[-1]
                if last in ("wait_stream", "synchronize", "wait_event", "query") or d.endswith("current_stream()."
                                                                                             "wait_stream"):
                    joins.append(node.lineno)
                if d in ("torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed_callables"):
                    if not any(t.key == "cuda_graphs" for t in a.techniques):
                        a.techniques.append(Technique("cuda_graphs", TECHNIQUE_LABELS["cuda_graphs"], node.lineno,
                                                      mod.text(node.lineno)))
        if creates and not joins:
            a.findings.append(finding("unjoined_stream", "certain",
                                      "work goes to a private torch.cuda.Stream that is never joined back to the "
                                      "current stream: a timer on the current stream does not see it",
                                      creates[0], mod.text(creates[0])))
        elif creates:
            a.techniques.append(Technique("joined_streams", TECHNIQUE_LABELS["joined_streams"], creates[0],
                                          mod.text(creates[0])))

    def check_precision(self, fns: list[ast.FunctionDef]) -> None:
        """Casts to fp16/bf16 or autocast in forward on an fp32 task."""
        if self.ref_low_precision():
            return
        a, mod = self.a, self.mod
        for fn in fns:
            for node in self.host_nodes(fn):
                hit = None
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in PRECISION_CASTS:
                    hit = node.func.attr
                elif isinstance(node, ast.Attribute) and mod.resolve(dotted(node)) in (
                        "torch.float16", "torch.half", "torch.bfloat16"):
                    hit = dotted(node)
                elif isinstance(node, ast.Call) and mod.resolve(dotted(node.func)).endswith("autocast"):
                    hit = "autocast"
                if hit:
                    a.findings.append(finding("precision_downgrade", "probable",
                                              f"forward converts to lower precision ({hit}) on an fp32 task",
                                              node.lineno, mod.text(node.lineno), severity="warning"))
                    return
