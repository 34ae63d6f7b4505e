. .gpu/setup.sh
L=/tmp/logs22d; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; uptime | tee -a $L/machine.txt
export STITCH_DATA_DIR=/tmp/t22d-data STITCH_CACHE_DIR=/tmp/t22d-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t22d
timeout 330 python3 -m pytest -m gpu -v --tb=long --timeout 300 -p no:cacheprovider tests/test_gpu_memory.py tests/test_zygote.py tests/test_adversarial.py tests/test_check_gpu.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-250 | tail -30
tail -1 $L/gpu_tests.log
unset STITCH_DATA_DIR
timeout 90 python3 .gpu/s22probe.py 1 clamp,cuda_relu,forge_small,mm,forge_mm > $L/probe_quiet.log 2> $L/probe_quiet.err; echo "quiet rc $?"; cat $L/probe_quiet.log
for i in $(seq 24); do timeout 120 python3 -c "while True: pass" & done
sleep 5; uptime
timeout 90 python3 .gpu/s22probe.py 1 clamp,cuda_relu,forge_small,mm,forge_mm > $L/probe_busy.log 2> $L/probe_busy.err; echo "busy rc $?"; cat $L/probe_busy.log
pkill -f "while True: pass"
tar czf $OUT/logs22d.tgz -C /tmp logs22d
