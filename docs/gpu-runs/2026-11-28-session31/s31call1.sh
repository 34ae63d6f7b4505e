. .gpu/setup.sh
L=/tmp/logs31a; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
git log --oneline -1 2>/dev/null | tee $L/commit.txt
sha1sum stitch_mcp/syscall_filter.py stitch_mcp/room.py stitch_mcp/sandbox.py stitch_mcp/profiling/driver.py stitch_mcp/judge/timing.py stitch_mcp/judge/__init__.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t31a-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t31a STITCH_DATA_DIR=/tmp/t31a-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
run filter 60 tests/test_syscall_filter.py
run keyring_room 90 tests/test_adversarial.py -k "keyrings"
s=$(date +%s); timeout 150 python3 tools/bench_suite.py --gpu --parts machine,repeat --out $L/bench --work /tmp/t31a-bench > $L/bench.log 2>&1; echo "bench rc $? $(( $(date +%s)-s ))s"; grep -A5 "speedup vs eager" $L/bench/*.md | head -8; grep -i "nsight compute:" $L/bench/*.md | head -2
run adversarial_gpu 150 -m gpu tests/test_adversarial.py
run profiling_gpu 150 -m gpu tests/test_profiling_gpu.py
tar czf $OUT/logs31a.tgz -C /tmp logs31a
