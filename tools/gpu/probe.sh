#!/usr/bin/env bash
# One-off fact gathering on the GPU machine: versions, ncu outputs of a small load_inline kernel
# (saved as parser fixtures), ncu_report availability, nsys status. Writes $OUT/probe.tar.gz.
set -u
D=$OUT/probe; mkdir -p $D
export PYTHONUNBUFFERED=1
{ nvidia-smi; nvcc --version; which ncu nsys compute-sanitizer; ncu --version; nsys --version;
  python3 -c 'import torch,sys;print(sys.version);print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))';
  python3 -c 'import torch;p=torch.cuda.get_device_properties(0);print(p)';
  ls -d /usr/local/cuda*/nsight-compute*/extras/python /opt/nvidia/nsight-compute/*/extras/python 2>/dev/null;
  find / -name ncu_report.py -not -path '*/proc/*' 2>/dev/null | head; find / -name 'nsys' -type f 2>/dev/null | head;
  python3 -c 'import pynvml;pynvml.nvmlInit();h=pynvml.nvmlDeviceGetHandleByIndex(0);print(pynvml.nvmlDeviceGetName(h), pynvml.nvmlSystemGetDriverVersion())';
} > $D/versions.txt 2>&1
cat > $D/prog.py <<'PY'
import torch, time
from torch.utils.cpp_extension import load_inline
src = r'''
#include <torch/extension.h>
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void naive_mm(const float* A, const float* B, float* C, int N) {
  int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < N && c < N) { float s = 0; for (int k = 0; k < N; ++k) s += A[r*N+k]*B[k*N+c]; C[r*N+c] = s; }
}
torch::Tensor add(torch::Tensor a, torch::Tensor b) {
  auto c = torch::empty_like(a); int n = a.numel();
  add_kernel<<<(n+255)/256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
  return c;
}
torch::Tensor mm(torch::Tensor a, torch::Tensor b) {
  int N = a.size(0); auto c = torch::empty_like(a);
  dim3 blk(16,16), grd((N+15)/16,(N+15)/16);
  naive_mm<<<grd, blk>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), N);
  return c;
}
'''
t=time.time()
m = load_inline("probe_ext", cpp_sources="torch::Tensor add(torch::Tensor a, torch::Tensor b);\ntorch::Tensor mm(torch::Tensor a, torch::Tensor b);", cuda_sources=src, functions=["add","mm"], verbose=False)
print("load_inline s", time.time()-t)
a = torch.randn(1<<24, device="cuda"); b = torch.randn_like(a)
for _ in range(2): c = m.add(a, b)
x = torch.randn(1024,1024, device="cuda"); y = torch.randn_like(x)
z = m.mm(x, y); torch.cuda.synchronize()
print("maxerr", (z - x@y).abs().max().item())
z2 = torch.relu(x @ y); torch.cuda.synchronize()
PY
cd $D
python3 prog.py > load1.txt 2>&1; python3 prog.py > load2.txt 2>&1
NCU="ncu --clock-control none --target-processes all"
timeout 300 $NCU --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats -o quick -f python3 prog.py > ncu_quick.log 2>&1
timeout 120 ncu -i quick.ncu-rep --csv --page raw > quick_raw.csv 2> ncu_raw.err
timeout 120 ncu -i quick.ncu-rep --csv --page details > quick_details.csv 2>> ncu_raw.err
timeout 120 ncu -i quick.ncu-rep --print-details all > quick_details.txt 2>> ncu_raw.err
timeout 300 $NCU --section SourceCounters -k regex:naive_mm -c 1 -o source -f python3 prog.py > ncu_source.log 2>&1
timeout 120 ncu -i source.ncu-rep --csv --page source --print-source sass,cuda > source_page.csv 2>>ncu_raw.err
timeout 120 ncu -i source.ncu-rep --csv --page raw > source_raw.csv 2>>ncu_raw.err
timeout 120 ncu --query-metrics > query_metrics.txt 2>&1
timeout 120 ncu --list-sections > list_sections.txt 2>&1
# ncu_report python module
P=$(dirname $(find / -name ncu_report.py -not -path '/proc/*' 2>/dev/null | head -1) 2>/dev/null)
PYTHONPATH=$P python3 - > ncu_report_probe.txt 2>&1 <<'PY'
import ncu_report, json
ctx = ncu_report.load_report("quick.ncu-rep")
print("ranges", ctx.num_ranges())
r = ctx.range_by_idx(0)
print("actions", r.num_actions())
for i in range(r.num_actions()):
    a = r.action_by_idx(i)
    print("ACTION", i, a.name(), a.name(ncu_report.IAction.NameBase_DEMANGLED)[:120])
    names = a.metric_names()
    print("n metrics", len(names))
    if i == 0:
        for n in sorted(names):
            m = a.metric_by_name(n)
            try: v = m.as_string()
            except Exception as e: v = repr(e)
            print("  ", n, "|", m.metric_type(), "|", v[:80])
PY
# nsys check
timeout 60 nsys profile -o nsys_probe -f true python3 -c 'import torch;x=torch.randn(100,device="cuda");print((x*2).sum().item())' > nsys.log 2>&1; ls -la >> nsys.log
# compute-sanitizer sanity
timeout 120 compute-sanitizer --tool memcheck python3 -c 'import torch;x=torch.randn(100,device="cuda");print(x.sum().item())' > sanitizer.log 2>&1
rm -f *.qdstrm
cd $OUT && tar czf probe.tar.gz probe && rm -rf probe && ls -la $OUT
