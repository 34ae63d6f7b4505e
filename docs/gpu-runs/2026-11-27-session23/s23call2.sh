. .gpu/setup.sh
L=/tmp/logs23b; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; uptime | tee -a $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t23-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t23
rm -rf .gpu/diag && mkdir -p .gpu/diag && cp -r stitch_mcp .gpu/diag/ && python3 .gpu/s23diag_patch.py .gpu/diag/stitch_mcp/judge/timing.py && echo patched
PYTHONPATH=/tmp/site:$PWD/.gpu/diag timeout 130 python3 .gpu/s23probe.py 2 mm,mm2x,forge_mm,busy_lo03,busy_lo06,busy_lo1 > $L/probe_after.log 2> $L/probe_after.err; echo "after rc $?"; cat $L/probe_after.log
cp /tmp/diag.log $L/ 2>/dev/null; wc -l $L/diag.log
PYTHONPATH=/tmp/site:$PWD/.gpu/before timeout 60 python3 .gpu/s23probe.py 1 busy_lo03,busy_lo06,busy_lo1,mm2x > $L/probe_before.log 2> $L/probe_before.err; echo "before rc $?"; cat $L/probe_before.log
export STITCH_DATA_DIR=/tmp/t23b-data
timeout 100 python3 -m pytest -m gpu -v --tb=short --timeout 90 -p no:cacheprovider tests/test_adversarial.py -k "busy_beside or honest_faster" > $L/gpu_tests_adv.log 2>&1
echo "adv rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests_adv.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-400 | tail -20
timeout 220 python3 -m pytest -m gpu -v --tb=short --timeout 200 -p no:cacheprovider tests/test_check_gpu.py tests/test_zygote.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -40
tail -1 $L/gpu_tests.log
tar czf $OUT/logs23b.tgz -C /tmp logs23b
