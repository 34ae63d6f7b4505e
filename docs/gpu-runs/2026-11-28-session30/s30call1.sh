. .gpu/setup.sh
L=/tmp/logs30a; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
sha1sum stitch_mcp/judge/prepare.py stitch_mcp/judge/trials.py stitch_mcp/judge/__init__.py stitch_mcp/room.py stitch_mcp/door.py stitch_mcp/check.py stitch_mcp/judge/timing.py stitch_mcp/models.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t30a-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t30a STITCH_DATA_DIR=/tmp/t30a-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
s=$(date +%s); timeout 150 python3 tools/bench_suite.py --gpu --parts machine,repeat --out $L/bench --work /tmp/t30a-bench > $L/bench.log 2>&1; echo "bench rc $? $(( $(date +%s)-s ))s"; grep -A5 "speedup vs eager" $L/bench/*.md | head -8
run adversarial_gpu 150 -m gpu tests/test_adversarial.py
run check_gpu 290 tests/test_check_gpu.py
tar czf $OUT/logs30a.tgz -C /tmp logs30a
