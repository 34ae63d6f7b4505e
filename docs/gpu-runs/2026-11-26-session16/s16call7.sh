. .gpu/setup.sh
L=/tmp/logs7; mkdir -p $L
export STITCH_DATA_DIR=/tmp/t7-data STITCH_CACHE_DIR=/tmp/t7-cache
timeout 200 python3 -m pytest -m gpu -v --tb=short --timeout 190 -p no:cacheprovider tests/test_check_gpu.py -k "honest_cuda or already_built" > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; tail -1 $L/gpu_tests.log
for s in 0 2 5 10; do sleep $s; echo "after +${s}s: $(nvidia-smi --query-gpu=memory.used --format=csv,noheader) procs: $(ps -eo args | grep -c 'stitch_mcp\.\(room\|worker\)')"; done
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
ps -eo pid,ppid,etimes,args | grep -E "stitch_mcp|bwrap" | grep -v grep | cut -c1-200 | head
tar czf $OUT/logs7.tgz -C /tmp logs7
