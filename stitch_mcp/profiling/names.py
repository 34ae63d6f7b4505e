"""Shortening demangled kernel names so a table row says what the kernel is.

`void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>(int, ...)`
becomes `vectorized_elementwise_kernel<CUDAFunctor_add>`: the function's own name without
namespaces, return type or parameters, plus the most telling template argument (a functor or op
name) when there is one. cuBLAS/cuDNN names (`sm90_xmma_gemm_f32f32_...`) are cut at a length.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ANON = ("(anonymous namespace)", "<unnamed>", "{anonymous}")


def _cut_name(text: str) -> tuple[str, str]:
    """(qualified name, its first top-level template argument list) of a demangled signature."""
    for anon in _ANON:
        text = text.replace(anon + "::", "").replace(anon, "")
    angle = paren = 0
    name_end = len(text)
    targs_start = targs_end = None
    for i, ch in enumerate(text):
        if ch == "<":
            if angle == 0 and paren == 0 and targs_start is None:
                targs_start = i
            angle += 1
        elif ch == ">":
            angle -= 1
            if angle == 0 and paren == 0 and targs_start is not None and targs_end is None:
                targs_end = i
        elif ch == "(":
            if angle == 0 and paren == 0:
                name_end = i
                break
            paren += 1
        elif ch == ")":
            paren -= 1
    head = text[:name_end]
    targs = ""
    if targs_start is not None and targs_start < name_end:
        targs = text[targs_start + 1:(targs_end if targs_end is not None else name_end)]
        head = text[:targs_start]
    return head.strip(), targs


def _telling_arg(targs: str) -> str:
    """The functor or op named in the template arguments, e.g. CUDAFunctor_add, MaxNanFunctor."""
    words = _WORD.findall(targs)
    for pred in (lambda w: "Functor" in w or w.endswith("_functor"),
                 lambda w: w.startswith("launch_") and len(w) > 7,
                 lambda w: w.endswith("Op") and w not in ("ReduceOp",)):
        found = [w for w in words if pred(w)]
        if found:
            # innermost functor (the last one) is the most specific: ReduceOp<..., MaxNanFunctor>
            word = found[-1] if "Functor" in found[-1] else found[0]
            return word[len("launch_"):] if word.startswith("launch_") else word
    return ""


def short_kernel_name(name: str, limit: int = 60) -> str:
    if not name:
        return "?"
    text = name.strip()
    for prefix in ("void ", "__global__ "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    head, targs = _cut_name(text)
    if " " in head:
        head = head.split(" ")[-1]
    base = head.split("::")[-1] or head or text
    short = base
    tag = _telling_arg(targs) if targs else ""
    if tag and tag != base:
        short = f"{base}<{tag}>"
    if len(short) > limit:
        short = short[: limit - 3] + "..."
    return short


def op_base(name: str) -> str:
    """`aten::conv2d, seq = 3` -> `aten::conv2d`; the op name a profiler range stands for."""
    return name.split(",")[0].strip()


def op_key(name: str) -> str:
    """The comparable core of an op name: `aten::relu_` / `relu_` / `__iadd__` -> `relu` / `add`."""
    n = op_base(name).split("::")[-1].strip("_").lower()
    aliases = {"truediv": "div", "itruediv": "div", "iadd": "add", "isub": "sub", "imul": "mul",
               "radd": "add", "rmul": "mul", "rsub": "rsub", "floordiv": "floor_divide",
               "max_pool2d_with_indices": "max_pool2d", "getitem": "index"}
    n = aliases.get(n, n)
    return n.rstrip("_")


# what may stand between `__global__` and a kernel's name, besides its return type
_SKIP_CALLS = {"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__attribute__", "__declspec", "alignas",
               "__align__", "__grid_constant__"}
_NOT_NAMES = {"void", "static", "inline", "extern", "__noinline__", "__forceinline__", "__inline__", "const",
              "unsigned", "signed", "int", "float", "double", "long", "short", "char", "bool", "auto", "typename",
              "__host__", "__device__", "__global__", "template", "__restrict__"} | _SKIP_CALLS


def _skip_balanced(text: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index just past the bracket that closes the one at text[i]."""
    depth = 0
    while i < len(text):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _kernel_name_after(text: str, i: int) -> str | None:
    """The name of the kernel whose `__global__` ends at text[i]: the last identifier before its
    parameter list, skipping attributes with arguments (__launch_bounds__(256), __cluster_dims__(8,1,1),
    __attribute__((...)), [[...]]), template arguments of the return type and `extern "C"`."""
    last = None
    while i < len(text):
        ch = text[i]
        if ch in ";{}=":
            return None
        if ch == '"':
            i = text.find('"', i + 1) + 1 or len(text)
        elif text.startswith("[[", i):
            i = text.find("]]", i) + 2 if text.find("]]", i) >= 0 else len(text)
        elif ch == "<":
            i = _skip_balanced(text, i, "<", ">")
        elif ch == "(":
            if last is None or last in _SKIP_CALLS:
                i = _skip_balanced(text, i, "(", ")")
                last = None
                continue
            return last if last not in _NOT_NAMES else None
        elif ch.isalpha() or ch == "_":
            m = _WORD.match(text, i)
            last = m.group(0)
            i = m.end()
            continue
        else:
            i += 1
    return None


def global_kernel_names(source: str) -> list[str]:
    """Names of the `__global__` functions defined or declared in C++/CUDA source, in order."""
    names: list[str] = []
    for m in re.finditer(r"\b__global__\b", source):
        name = _kernel_name_after(source, m.end())
        if name and name not in names:
            names.append(name)
    return names
