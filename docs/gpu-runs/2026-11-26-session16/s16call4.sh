. .gpu/setup.sh
L=/tmp/logs4; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_DATA_DIR=/tmp/t4-data STITCH_CACHE_DIR=/tmp/t4-cache
timeout 200 python3 -m pytest -m gpu -v -s --tb=long --timeout 190 -p no:cacheprovider tests/test_check_gpu.py -k "honest_cuda or already_built or private_stream" tests/test_worker.py tests/test_zygote.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E |warm check" $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-400 | tail -20
nvidia-smi --query-gpu=memory.used --format=csv,noheader | tee $L/mem_after_tests.txt
mkdir -p .gpu/before/.gpu && cp -r .gpu/check .gpu/before/.gpu/
(cd .gpu/before && PYTHONPATH=/tmp/site:$PWD STITCH_DATA_DIR=/tmp/b4-data STITCH_CACHE_DIR=/tmp/b4-cache timeout 80 python3 tools/bench_check.py --only relu matmul --no-compile --json $L/before.json) > $L/before.log 2>&1
grep -v "^    " $L/before.log
STITCH_DATA_DIR=/tmp/a4-data STITCH_CACHE_DIR=/tmp/a4-cache timeout 150 python3 tools/bench_check.py --only relu matmul --no-compile --repeat 3 --settle 3 --json $L/after.json > $L/after.log 2>&1
grep -v "^    " $L/after.log
python3 -c "
import json
for r in json.load(open('$L/after.json')):
    s = r['stage_seconds']; print(r['problem'], r['run'], r['wall_s'] and round(r['wall_s'],2), 'room_cuda', s.get('room_cuda'), 'judge_cuda', s.get('judge_cuda_init'), 'prepare', s.get('prepare'))
"
tar czf $OUT/logs4.tgz -C /tmp logs4
