. .gpu/setup.sh
L=/tmp/logs26e; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
sha1sum stitch_mcp/judge/timing.py stitch_mcp/judge/__init__.py | tee $L/tree.txt
export STITCH_CACHE_DIR=/tmp/t26-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t26 STITCH_DATA_DIR=/tmp/t26-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -m gpu -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
run gpu_memory 400 tests/test_gpu_memory.py
tar czf $OUT/logs26e.tgz -C /tmp logs26e
