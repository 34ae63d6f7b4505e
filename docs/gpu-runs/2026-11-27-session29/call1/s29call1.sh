. .gpu/setup.sh
L=/tmp/logs29a; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
sha1sum stitch_mcp/judge/prepare.py stitch_mcp/judge/trials.py stitch_mcp/room.py stitch_mcp/door.py stitch_mcp/loader.py stitch_mcp/check.py stitch_mcp/judge/timing.py stitch_mcp/models.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t29a-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t29a STITCH_DATA_DIR=/tmp/t29a-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
run correctness_on_gpu 240 tests/test_check.py -k "reinitialised or weights_are or weights_out_of_reach or seed_is_drawn or timing_after_reinit"
run adversarial_gpu 200 -m gpu tests/test_adversarial.py
timeout 200 python3 .gpu/s29mm.py 10 > $L/faster_mm.log 2>&1; echo "faster_mm rc $?"; cat $L/faster_mm.log | grep -v "^\s*$" | tail -12
tar czf $OUT/logs29a.tgz -C /tmp logs29a
