. .gpu/setup.sh
L=/tmp/logs24d; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t24d-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t24d STITCH_DATA_DIR=/tmp/t24d-data
s=$(date +%s); timeout 330 python3 -m pytest -m gpu -v --tb=short --timeout 320 -p no:cacheprovider "tests/test_faults_gpu.py::test_kernel_that_never_ends" > $L/never_ends.log 2>&1; echo "never_ends rc $? $(( $(date +%s)-s ))s: $(tail -1 $L/never_ends.log)"
grep -E "FAILED|ERROR|^E " $L/never_ends.log | cut -c1-300 | head -12
tar czf $OUT/logs24d.tgz -C /tmp logs24d
