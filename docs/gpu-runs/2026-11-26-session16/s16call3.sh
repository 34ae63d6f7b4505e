. .gpu/setup.sh
L=/tmp/logs3; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
timeout 60 python3 .gpu/cuda_init_probe.py > $L/cuda_init.txt 2>&1; cat $L/cuda_init.txt
export STITCH_DATA_DIR=/tmp/g3-data STITCH_CACHE_DIR=/tmp/g3-cache
timeout 420 python3 -m pytest -m gpu -v --tb=long --timeout 200 -p no:cacheprovider tests/test_adversarial.py tests/test_faults_gpu.py tests/test_rubric_gpu.py tests/test_ceilings.py tests/test_check_tolerance.py tests/test_compare_context.py > $L/gpu_tests_b.log 2>&1
echo "gpu tests b rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests_b.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -30
tail -2 $L/gpu_tests_b.log
tar czf $OUT/logs3.tgz -C /tmp logs3
