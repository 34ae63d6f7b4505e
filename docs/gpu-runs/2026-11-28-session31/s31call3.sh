. .gpu/setup.sh
L=/tmp/logs31c; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
sha1sum stitch_mcp/syscall_filter.py stitch_mcp/room.py stitch_mcp/sandbox.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t31c-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t31c STITCH_DATA_DIR=/tmp/t31c-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "PASSED|FAILED|ERROR|^E " $L/$name.log | cut -c1-200 | head -8; }
run faults_gpu 420 -m gpu tests/test_faults_gpu.py -k "out_of_memory or never_ends"
tar czf $OUT/logs31c.tgz -C /tmp logs31c
