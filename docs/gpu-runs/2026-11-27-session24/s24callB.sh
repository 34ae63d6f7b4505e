. .gpu/setup.sh
L=/tmp/logs24b; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t24-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t24 STITCH_DATA_DIR=/tmp/t24b-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -m gpu -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR" $L/$name.log | cut -c1-300 | head -8; }
run adversarial 130 tests/test_adversarial.py
run faults_mem 130 tests/test_faults_gpu.py tests/test_gpu_memory.py
run profiling_rubric 200 tests/test_profiling_gpu.py tests/test_rubric_gpu.py
run misc 120 tests/test_ceilings.py tests/test_check_tolerance.py tests/test_compare_context.py
tar czf $OUT/logs24b.tgz -C /tmp logs24b
