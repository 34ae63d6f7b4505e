"""Fallback findings: PyTorch compute still in forward next to (or instead of) the custom kernel,
judged by its share of the reference's time, and ATen compute called from the C++ source."""

from __future__ import annotations

from stitch_mcp.analysis.model import Analysis, finding


def fallback_findings(a: Analysis, ref_ops: list[tuple[str, float]]) -> None:
    """PyTorch compute in forward and ATen compute in C++ -> fallback findings."""
    ref_share = dict(ref_ops)
    top = max(ref_ops, key=lambda x: x[1])[0] if ref_ops else None
    if a.has_modelnew and not a.custom_calls:
        if a.torch_ops:
            o = a.torch_ops[0]
            a.findings.append(finding(
                "pytorch_fallback", "certain",
                f"forward computes with PyTorch ({', '.join(sorted({x.call for x in a.torch_ops})[:4])}) and calls "
                "no custom kernel", o.line, o.text))
        elif not a.aten_ops:
            a.findings.append(finding("no_custom_kernel", "probable",
                                      "forward calls no custom kernel the analysis can find", None, ""))
    elif a.torch_ops and a.custom_calls:
        shown = set()
        for o in a.torch_ops:
            if o.op in shown:
                continue
            shown.add(o.op)
            in_ref = o.op in ref_share
            share = ref_share.get(o.op, 0.0)
            if in_ref and (o.op == top or share >= 0.5):
                conf, sev = "probable", "warning"
                msg = (f"forward still runs the reference's main op `{o.op}` in PyTorch ({o.call}, "
                       f"{share:.0%} of the reference's time) next to the custom kernel")
            elif in_ref:
                conf, sev = "possible", "info"
                msg = f"forward still runs reference op `{o.op}` in PyTorch ({o.call}); it is not covered"
            else:
                continue
            a.findings.append(finding("partial_fallback", conf, msg, o.line, o.text, severity=sev))
    for o in a.aten_ops:
        conf = "certain" if "::" in o.call else "probable"
        a.findings.append(finding("aten_fallback", conf,
                                  f"the C++ source calls PyTorch compute `{o.call}`: a PyTorch fallback inside the "
                                  "extension (call cuBLAS/cuDNN/CUTLASS directly, or write the kernel)",
                                  o.line, o.text, severity="error" if conf == "certain" else "warning"))
