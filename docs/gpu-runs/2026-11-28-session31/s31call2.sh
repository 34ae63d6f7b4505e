. .gpu/setup.sh
L=/tmp/logs31b; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
sha1sum stitch_mcp/syscall_filter.py stitch_mcp/room.py stitch_mcp/sandbox.py stitch_mcp/judge/timing.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t31b-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t31b STITCH_DATA_DIR=/tmp/t31b-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
run check_gpu 330 tests/test_check_gpu.py
run worker_zygote_gpu 120 -m gpu tests/test_worker.py tests/test_zygote.py tests/test_faults_gpu.py
tar czf $OUT/logs31b.tgz -C /tmp logs31b
