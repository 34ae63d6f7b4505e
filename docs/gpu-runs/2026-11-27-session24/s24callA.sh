. .gpu/setup.sh
L=/tmp/logs24a; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; git log --oneline -1 2>/dev/null | tee -a $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t24-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t24 STITCH_DATA_DIR=/tmp/t24a-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -m gpu -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR" $L/$name.log | cut -c1-300 | head -8; }
run check_gpu 400 tests/test_check_gpu.py
run zygote_worker 150 tests/test_zygote.py tests/test_worker.py
tar czf $OUT/logs24a.tgz -C /tmp logs24a
