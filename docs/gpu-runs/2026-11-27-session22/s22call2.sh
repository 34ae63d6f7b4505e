. .gpu/setup.sh
L=/tmp/logs22b; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; uptime | tee -a $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t22b-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t22b
timeout 170 python3 .gpu/s22probe.py 2 > $L/probe_quiet.log 2> $L/probe_quiet.err; echo "quiet rc $?"; cat $L/probe_quiet.log
for i in $(seq 24); do timeout 200 python3 -c "while True: pass" & done
sleep 5; uptime
timeout 150 python3 .gpu/s22probe.py 2 clamp,cuda_relu,forge_small,mm,forge_mm > $L/probe_busy.log 2> $L/probe_busy.err; echo "busy rc $?"; cat $L/probe_busy.log
export STITCH_DATA_DIR=/tmp/t22b-data
timeout 100 python3 -m pytest -v --tb=long --timeout 90 -p no:cacheprovider tests/test_adversarial.py -k "gpu_forged_event_times or gpu_honest_short" > $L/short_busy.log 2>&1
echo "short busy rc $?"; grep -E "PASSED|FAILED|^E  " $L/short_busy.log | cut -c1-300 | head -20
pkill -f "while True: pass"; sleep 2; uptime
timeout 150 python3 tools/bench_suite.py --gpu --parts repeat --out $L/bench > $L/bench.log 2>&1
echo "bench rc $?"; grep -E "repeat [0-9]|speedup vs eager" $L/bench.log $L/bench/*.md | tail -8
tar czf $OUT/logs22b.tgz -C /tmp logs22b
