. .gpu/setup.sh
L=/tmp/logs18f; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_DATA_DIR=/tmp/t18f-data STITCH_CACHE_DIR=/tmp/t18f-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t18f
timeout 560 python3 -m pytest -m gpu -v --tb=long --timeout 300 -p no:cacheprovider tests/test_adversarial.py tests/test_stage_results.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -30
tail -1 $L/gpu_tests.log
tar czf $OUT/logs18f.tgz -C /tmp logs18f
