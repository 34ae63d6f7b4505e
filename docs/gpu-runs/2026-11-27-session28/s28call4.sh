. .gpu/setup.sh
L=/tmp/logs28d; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
sha1sum stitch_mcp/judge/prepare.py stitch_mcp/judge/trials.py stitch_mcp/room.py stitch_mcp/door.py stitch_mcp/check.py stitch_mcp/compare.py stitch_mcp/correctness.py stitch_mcp/judge/timing.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t28d-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t28b STITCH_DATA_DIR=/tmp/t28d-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
run correctness_on_gpu 240 tests/test_check.py -k "reinitialised or weights_are or seed_is_drawn or timing_after_reinit"
run tolerance_on_gpu 200 tests/test_check_tolerance.py
run attacks_on_gpu 100 tests/test_adversarial.py -k "made_ahead"
tar czf $OUT/logs28d.tgz -C /tmp logs28d
