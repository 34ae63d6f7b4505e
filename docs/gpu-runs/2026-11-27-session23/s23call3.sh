. .gpu/setup.sh
L=/tmp/logs23c; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; uptime | tee -a $L/machine.txt
export STITCH_CACHE_DIR=/tmp/t23-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t23
rm -rf .gpu/diag && mkdir -p .gpu/diag && cp -r stitch_mcp .gpu/diag/ && python3 .gpu/s23diag_patch.py .gpu/diag/stitch_mcp/judge/timing.py && echo patched
PYTHONPATH=/tmp/site:$PWD/.gpu/diag timeout 150 python3 .gpu/s23probe.py 3 busy50_d03,busy50_d06,mm2x,mm > $L/probe_after.log 2> $L/probe_after.err; echo "after rc $?"; cat $L/probe_after.log
cp /tmp/diag.log $L/ 2>/dev/null; wc -l $L/diag.log
PYTHONPATH=/tmp/site:$PWD/.gpu/before timeout 80 python3 .gpu/s23probe.py 2 busy50_d03,busy50_d06 > $L/probe_before.log 2> $L/probe_before.err; echo "before rc $?"; cat $L/probe_before.log
export STITCH_DATA_DIR=/tmp/t23c-data
timeout 150 python3 -m pytest -m gpu -v --tb=short --timeout 120 -p no:cacheprovider tests/test_adversarial.py > $L/gpu_tests_adv.log 2>&1
echo "adv rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests_adv.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-400 | tail -20
timeout 190 python3 -m pytest -m gpu -v --tb=short --timeout 180 -p no:cacheprovider tests/test_gpu_memory.py > $L/gpu_tests_mem.log 2>&1
echo "mem rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests_mem.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -20
tail -1 $L/gpu_tests_mem.log
tar czf $OUT/logs23c.tgz -C /tmp logs23c
