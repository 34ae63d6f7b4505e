. .gpu/setup.sh
L=/tmp/logs31d; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
sha1sum stitch_mcp/syscall_filter.py stitch_mcp/room.py stitch_mcp/sandbox.py stitch_mcp/profiling/driver.py stitch_mcp/judge/timing.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t31d-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t31d STITCH_DATA_DIR=/tmp/t31d-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
run filter 60 tests/test_syscall_filter.py
run leave_state_room 90 tests/test_adversarial.py -k "leave_no_state"
run profiling_gpu 150 -m gpu tests/test_profiling_gpu.py
run adversarial_gpu 130 -m gpu tests/test_adversarial.py
run check_gpu 300 tests/test_check_gpu.py
tar czf $OUT/logs31d.tgz -C /tmp logs31d
