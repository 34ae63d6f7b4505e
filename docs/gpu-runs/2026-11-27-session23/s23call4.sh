. .gpu/setup.sh
L=/tmp/logs23d; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; uptime | tee -a $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t23-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t23
for i in $(seq 24); do timeout 220 python3 -c "while True: pass" & done
sleep 5; uptime
timeout 100 python3 .gpu/s23probe.py 1 mm2x,mm,clamp,cuda_relu,forge_small,forge_mm,busy50_d06 > $L/probe_busy.log 2> $L/probe_busy.err; echo "busy rc $?"; cat $L/probe_busy.log
export STITCH_DATA_DIR=/tmp/t23d-data
timeout 110 python3 -m pytest -m gpu -v --tb=short --timeout 100 -p no:cacheprovider tests/test_adversarial.py > $L/adv_busy.log 2>&1
echo "adv busy rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/adv_busy.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-400 | tail -20
pkill -f "while True: pass"; sleep 2; uptime
timeout 130 python3 tools/bench_suite.py --gpu --parts repeat --out $L/bench > $L/bench.log 2>&1
echo "bench rc $?"; grep -E "repeat [0-9]|speedup vs eager" $L/bench.log $L/bench/*.md | tail -8
timeout 200 python3 -m pytest -m gpu -v --tb=short --timeout 190 -p no:cacheprovider tests/test_zygote.py tests/test_check_gpu.py -k "zygote or kernel_file or baselines_are_dropped" > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -20
tail -1 $L/gpu_tests.log
tar czf $OUT/logs23d.tgz -C /tmp logs23d
