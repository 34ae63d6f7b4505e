. .gpu/setup.sh
L=/tmp/logs25; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t25-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t25 STITCH_DATA_DIR=/tmp/t25-data
run() { name=$1; lim=$2; shift 2; s=$(date +%s); timeout $lim python3 -m pytest -m gpu -v --tb=short --timeout $((lim-10)) -p no:cacheprovider "$@" > $L/$name.log 2>&1; echo "$name rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/$name.log)"; grep -E "FAILED|ERROR|^E " $L/$name.log | cut -c1-300 | head -8; }
run adversarial_gpu 200 tests/test_adversarial.py
tar czf $OUT/logs25.tgz -C /tmp logs25
