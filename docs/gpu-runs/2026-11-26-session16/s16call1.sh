. .gpu/setup.sh
L=/tmp/logs1; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
git log --oneline -1 2>/dev/null | tee $L/commit.txt
export STITCH_DATA_DIR=/tmp/f-data STITCH_CACHE_DIR=/tmp/f-cache
timeout 170 python3 -m pytest -m gpu -v -s --tb=long --timeout 160 -p no:cacheprovider tests/test_adversarial.py -k forged_event > $L/forged.log 2>&1
echo "forged rc $?"; grep -E "PASSED|FAILED|Error|assert|^E " $L/forged.log | cut -c1-300 | head -40
export STITCH_DATA_DIR=/tmp/w-data STITCH_CACHE_DIR=/tmp/w-cache
timeout 150 python3 -m pytest -m gpu -v --tb=long --timeout 140 -p no:cacheprovider tests/test_zygote.py tests/test_worker.py tests/test_profiling_gpu.py > $L/wz.log 2>&1
echo "wz rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/wz.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -20
mkdir -p .gpu/before/.gpu && cp -r .gpu/check .gpu/before/.gpu/
(cd .gpu/before && PYTHONPATH=/tmp/site:$PWD STITCH_DATA_DIR=/tmp/b1-data STITCH_CACHE_DIR=/tmp/b1-cache timeout 80 python3 tools/bench_check.py --only relu matmul --no-compile --json $L/before.json) > $L/before.log 2>&1
grep -v "^    " $L/before.log
STITCH_DATA_DIR=/tmp/a1-data STITCH_CACHE_DIR=/tmp/a1-cache timeout 130 python3 tools/bench_check.py --only relu matmul --no-compile --repeat 2 --settle 3 --json $L/after.json > $L/after.log 2>&1
grep -v "^    " $L/after.log
tar czf $OUT/logs1.tgz -C /tmp logs1
