. .gpu/setup.sh
L=/tmp/logs23e; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; uptime | tee -a $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t23-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t23
timeout 110 python3 .gpu/s23probe.py 2 mm2x,busy50_d03,busy50_d06,mm,forge_mm > $L/probe.log 2> $L/probe.err; echo "probe rc $?"; cat $L/probe.log
export STITCH_DATA_DIR=/tmp/t23e-data
timeout 130 python3 -m pytest -m gpu -v --tb=short --timeout 120 -p no:cacheprovider tests/test_adversarial.py > $L/gpu_tests_adv.log 2>&1
echo "adv rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests_adv.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-400 | tail -20
tail -1 $L/gpu_tests_adv.log
tar czf $OUT/logs23e.tgz -C /tmp logs23e
