. .gpu/setup.sh
L=/tmp/logs23a; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; uptime | tee -a $L/machine.txt
git log --oneline -1 2>/dev/null | tee -a $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t23-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t23
timeout 170 python3 .gpu/s23probe.py 1 busy_honest_d1,busy_d03,busy_d06,busy_d1,mm,forge_mm,clamp,cuda_relu,forge_small > $L/probe_after.log 2> $L/probe_after.err; echo "after rc $?"; cat $L/probe_after.log
PYTHONPATH=/tmp/site:$PWD/.gpu/before timeout 90 python3 .gpu/s23probe.py 1 busy_honest_d1,busy_d03,busy_d06,busy_d1 > $L/probe_before.log 2> $L/probe_before.err; echo "before rc $?"; cat $L/probe_before.log
export STITCH_DATA_DIR=/tmp/t23a-data
timeout 240 python3 -m pytest -m gpu -v --tb=short --timeout 200 -p no:cacheprovider tests/test_adversarial.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -30
tail -1 $L/gpu_tests.log
tar czf $OUT/logs23a.tgz -C /tmp logs23a
