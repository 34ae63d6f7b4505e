. .gpu/setup.sh
L=/tmp/logs19a; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
cat /sys/fs/cgroup/cgroup.controllers /sys/fs/cgroup/cgroup.subtree_control 2>&1 | tee $L/cgroup.txt
python3 -c "from stitch_mcp import cpusets, sandbox; print('cpuset unavailable:', repr(cpusets.unavailable())); print(sandbox.probe_isolation().line())" 2>&1 | tee -a $L/cgroup.txt
export STITCH_DATA_DIR=/tmp/t19a-data STITCH_CACHE_DIR=/tmp/t19a-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t19a
timeout 120 python3 -m pytest -v --tb=long --timeout 100 -p no:cacheprovider tests/test_sandbox.py -k "widen or every_process_it_starts" > $L/cpuset_tests.log 2>&1
echo "cpuset tests rc $?"; grep -E "PASSED|FAILED|SKIPPED|ERROR|^E " $L/cpuset_tests.log | cut -c1-250 | tail -12
timeout 420 python3 -m pytest -m gpu -v --tb=long --timeout 300 -p no:cacheprovider tests/test_check_gpu.py tests/test_adversarial.py tests/test_zygote.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -30
tail -1 $L/gpu_tests.log
tar czf $OUT/logs19a.tgz -C /tmp logs19a
