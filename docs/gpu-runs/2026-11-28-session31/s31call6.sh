. .gpu/setup.sh
L=/tmp/logs31e; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
sha1sum stitch_mcp/syscall_filter.py stitch_mcp/room.py stitch_mcp/judge_room.py stitch_mcp/worker.py stitch_mcp/config.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t31e-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t31e STITCH_DATA_DIR=/tmp/t31e-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "PASSED|FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
run memory_cap 120 tests/test_adversarial.py -k "hosts_memory"
cat /proc/meminfo | head -3; ls /sys/fs/cgroup | head -3; cat /sys/fs/cgroup/cgroup.subtree_control
tar czf $OUT/logs31e.tgz -C /tmp logs31e
