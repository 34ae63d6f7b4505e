. .gpu/setup.sh
L=/tmp/logs7; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_DATA_DIR=/tmp/t7-data STITCH_CACHE_DIR=/tmp/t7-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t7
timeout 400 python3 -m pytest -m gpu -v --tb=long --timeout 300 -p no:cacheprovider tests/test_worker.py tests/test_zygote.py tests/test_adversarial.py tests/test_faults_gpu.py tests/test_rubric_gpu.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -20
tail -1 $L/gpu_tests.log
tar czf $OUT/logs7.tgz -C /tmp logs7
