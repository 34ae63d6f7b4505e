. .gpu/setup.sh
L=/tmp/logs29g; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
sha1sum stitch_mcp/judge/prepare.py stitch_mcp/judge/trials.py stitch_mcp/room.py stitch_mcp/door.py stitch_mcp/loader.py stitch_mcp/check.py stitch_mcp/judge/timing.py stitch_mcp/models.py stitch_mcp/correctness.py stitch_mcp/compare.py stitch_mcp/integrity.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t29g-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t29g STITCH_DATA_DIR=/tmp/t29g-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
run check_on_gpu 200 -n 3 tests/test_check.py tests/test_check_tolerance.py -k "rounding_noise or integrity_finding or noise or reinitialised"
tar czf $OUT/logs29g.tgz -C /tmp logs29g
