. .gpu/setup.sh
L=/tmp/logs23f; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; uptime | tee -a $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t23-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t23
timeout 70 python3 .gpu/s23probe.py 1 forge_small,clamp,mm2x,busy50_d06 > $L/probe.log 2> $L/probe.err; echo "probe rc $?"; cat $L/probe.log
export STITCH_DATA_DIR=/tmp/t23f-data
timeout 110 python3 -m pytest -m gpu -v --tb=short --timeout 100 -p no:cacheprovider tests/test_adversarial.py > $L/gpu_tests_adv.log 2>&1
echo "adv rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests_adv.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -12
tail -1 $L/gpu_tests_adv.log
tar czf $OUT/logs23f.tgz -C /tmp logs23f
