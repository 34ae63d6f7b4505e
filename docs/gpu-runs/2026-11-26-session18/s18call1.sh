. .gpu/setup.sh
L=/tmp/logs18a; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
# no TORCHINDUCTOR_CACHE_DIR: the judges' inductor cache goes to the server's cache dir (a26783a)
unset TORCHINDUCTOR_CACHE_DIR
export STITCH_DATA_DIR=/tmp/t18a-data STITCH_CACHE_DIR=/tmp/t18a-cache
timeout 500 python3 -m pytest -m gpu -v --tb=long --timeout 300 -p no:cacheprovider tests/test_check_gpu.py tests/test_compare_context.py tests/test_check_tolerance.py tests/test_ceilings.py tests/test_worker.py tests/test_gpu_memory.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -30
tail -1 $L/gpu_tests.log
ls -ld /tmp/t18a-cache/inductor /tmp/stitch-mcp-locks-* /tmp/stitch-sandbox-slots-* 2>&1 | tee $L/folders.txt
ls /tmp/t18a-cache/inductor | head -5 | tee -a $L/folders.txt
ls -d /tmp/torchinductor_* 2>&1 | tee -a $L/folders.txt
tar czf $OUT/logs18a.tgz -C /tmp logs18a
