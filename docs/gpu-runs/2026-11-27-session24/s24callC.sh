. .gpu/setup.sh
L=/tmp/logs24c; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; git log --oneline -1 2>/dev/null | tee -a $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t24c-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t24c STITCH_DATA_DIR=/tmp/t24c-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -m gpu -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR" $L/$name.log | cut -c1-300 | head -8; }
run adversarial 110 tests/test_adversarial.py
run faults 200 tests/test_faults_gpu.py
run memory 60 tests/test_gpu_memory.py
s=$(date +%s); timeout 150 python3 tools/bench_suite.py --gpu --parts machine,repeat --out $L/bench --work /tmp/t24c-bench > $L/bench.log 2>&1; echo "bench rc $? $(( $(date +%s)-s ))s"
grep -E "repeat .*[0-9]/5" $L/bench.log; sed -n '/Timing repeatability/,/^## [^T]/p' $L/bench/*.md | head -16
tar czf $OUT/logs24c.tgz -C /tmp logs24c
