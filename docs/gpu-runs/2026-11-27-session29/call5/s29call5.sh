. .gpu/setup.sh
L=/tmp/logs29e; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
sha1sum stitch_mcp/judge/prepare.py stitch_mcp/judge/trials.py stitch_mcp/room.py stitch_mcp/door.py stitch_mcp/loader.py stitch_mcp/check.py stitch_mcp/judge/timing.py stitch_mcp/models.py stitch_mcp/correctness.py stitch_mcp/compare.py stitch_mcp/integrity.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t29e-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t29e STITCH_DATA_DIR=/tmp/t29e-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
run check_on_gpu 330 -n 3 tests/test_check.py -k "reinitialised or weights or tuples or promises or few_values or mirroring or integrity_finding or seed_is_drawn or timing_after_reinit or each_output or second_chance or changed or rounding_noise or reach_modelnew or range_limited"
tar czf $OUT/logs29e.tgz -C /tmp logs29e
